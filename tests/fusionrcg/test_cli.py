import json
import shutil
import subprocess
import sys

import pytest

from fusionrcg.angmom import QuartetClass
from fusionrcg.cli import main
from fusionrcg.library import store as library


def test_graph_json(capsys):
    assert main(["graph", "--quartet", "1,1,1,1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["class"] == "(1,1|1,1)"
    assert set(out["peak_live"]) == {"variant", "priority", "conventional"}
    assert set(out["peak_live"]["priority"]) == {"dsa", "topological"}
    assert out["accumulators"] == {"hrr_inputs": 81, "eq5": 81}
    assert out["buffer_slots"]["after_packing"] <= out["buffer_slots"]["before_packing"]
    assert out["flops"]["vrr_per_primitive_quartet"] > 0
    assert out["tier"]["chosen"] in (1, 2)


def test_graph_text_and_variant(capsys):
    assert main(["graph", "--quartet", "(2,1|1,0)", "--variant", "no-spherical"]) == 0
    assert "no-spherical" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["graph", "--quartet", "5,0,0,0"], "l <= 4"),
        (["graph", "--quartet=-1,0,0,0"], "negative"),
        (["graph", "--quartet", "1,1"], "four integers"),
        (["graph", "--quartet", "1,1,1,1", "--variant", "nope"], "known variants"),
    ],
)
def test_graph_bad_input(capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (no GPU needed)")
def test_build_json(capsys, tmp_path):
    argv = ["build", "--quartet", "2,0,1,1", "--variant", "tier2-only", "--json"]
    assert main([*argv, "--kernel-dir", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["class"] == "(2,0|1,1)" and out["tier"] == 2
    assert out["origin"] == "built" and not out["cached"]
    assert out["kernel_dir"] == str(tmp_path.resolve()) and out["kernel_dir_from"] == "--kernel-dir"
    assert out["slot_bank"] == "shared" and out["kernel2"] == f"{out['kernel']}_jk"
    assert out["registers"] <= 255 and out["spill_store_bytes"] >= 0
    assert main(["build", "--quartet", "2,0,2,0", "--json", "--kernel-dir", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tier"] == 1 and out["spill_store_bytes"] == 0 and out["slot_bank"] is None
    assert out["ptxas_level"] == 3
    assert main(["build", "--quartet", "2,0,2,0", "--json", "--kernel-dir", str(tmp_path)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["origin"] == "index" and again["cached"] and again["cubin"] == out["cubin"]


def test_python_m_fusionrcg():
    res = subprocess.run(
        [sys.executable, "-m", "fusionrcg", "--help"], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    assert "{graph,build,prebuild,cache}" in res.stdout
    res = subprocess.run(
        [sys.executable, "-m", "fusionrcg", "graph", "--quartet", "9,0,0,0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2 and "l <= 4" in res.stderr


def test_kernel_origin_and_the_cache_command(capsys, tmp_path, monkeypatch):
    """A kernel compiled now, then answered by the index, then (index gone) by its binary; the
    cache command reports the library and clears only the library's files."""
    cls = QuartetClass(1, 0, 0, 0)
    assert library.get_kernel(cls, target="cpp", directory=tmp_path).origin == "built"
    assert library.get_kernel(cls, target="cpp", directory=tmp_path).origin == "index"
    for entry in (tmp_path / "index").iterdir():
        entry.unlink()
    assert library.get_kernel(cls, target="cpp", directory=tmp_path).origin == "binary"
    (tmp_path / "README.md").write_text("not a kernel")

    monkeypatch.setenv("FUSIONRCG_KERNEL_DIR", str(tmp_path))
    assert main(["cache", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["kernel_dir"] == str(tmp_path.resolve())
    assert info["kernel_dir_from"] == "$FUSIONRCG_KERNEL_DIR"
    assert info["index_entries"] == 1 and info["binaries"] == 1 and info["other_files"] == 1
    assert info["bytes"] > 0 and "removed_files" not in info

    assert main(["cache", "--clear", "--json", "--kernel-dir", str(tmp_path)]) == 0
    cleared = json.loads(capsys.readouterr().out)
    assert cleared["removed_files"] == 3 and cleared["kernel_dir_from"] == "--kernel-dir"
    assert [f.name for f in tmp_path.iterdir()] == ["README.md"]
    assert library.get_kernel(cls, target="cpp", directory=tmp_path).origin == "built"


def test_cache_of_a_missing_directory_creates_nothing(capsys, tmp_path):
    missing = tmp_path / "none"
    assert main(["cache", "--kernel-dir", str(missing)]) == 0
    assert "index_entries      0" in capsys.readouterr().out and not missing.exists()


def test_graph_json_of_a_derivative_class(capsys):
    assert main(["graph", "--quartet", "1,1,1,0", "--deriv", "1", "--centre", "C", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["class"] == "(1,1|1,0) nabla_C" and out["deriv"] == "C"
    assert main(["graph", "--quartet", "1,1,1,0", "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["deriv"] is None
    assert out["nodes"]["total"] > plain["nodes"]["total"]
    assert out["accumulators"]["hrr_inputs"] > plain["accumulators"]["hrr_inputs"]
