"""``python -m qcbench.md``: a short run of each engine choice and the report over them."""

from __future__ import annotations

import json
import shutil

import pytest

from qcbench import md

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")


def test_runs_and_report(tmp_path):
    runs = []
    for engines in md.ENGINES:
        out = tmp_path / engines
        argv = ["run", "--molecule", "water_clusters/002", "--xc", "pbe", "--basis", "sto-3g",
                "--grid-level", "1", "--steps", "2", "--engines", engines,
                "--out", str(out)]  # fmt: skip
        assert md.main(argv) == 0
        info = json.loads((out / "run.json").read_text())
        assert info["settings"]["steps"] == 2 and info["step_s"] > 0
        runs.append(str(out))
    table = tmp_path / "t.md"
    argv = ["report", "--runs", *runs, "--table", str(tmp_path / "t.csv"), "--table-md",
            str(table), "--figure", str(tmp_path / "f.png")]  # fmt: skip
    assert md.main(argv) == 0
    lines = table.read_text().splitlines()
    assert len(lines) == 5 and "pbe/sto-3g" in lines[2]
    assert "ps in 800 h (extrapolated)" in lines[0] and "step speedup vs baseline" in lines[0]
    ours, dense, base = (line.split("|") for line in lines[2:])
    # the same trajectory (KerneLDI's block and dense products, PySCF's): the same spread
    assert float(ours[12]) == pytest.approx(float(base[12]), abs=1e-6)
    assert float(dense[12]) == pytest.approx(float(base[12]), abs=1e-6)
    assert float(base[15]) == 1.0  # the baseline against itself
    assert (tmp_path / "f.png").stat().st_size > 0
