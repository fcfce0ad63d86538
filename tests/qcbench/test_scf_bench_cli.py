"""``python -m qcbench.scf.bench``'s engine settings: parsed, refused, and passed to the engine
(the accuracy subcommand runs on the CPU)."""

from __future__ import annotations

import argparse
import json

import pytest

from qcbench.scf import bench


def test_engine_option_values_are_typed():
    assert bench.engine_option("block_items=0") == ("block_items", 0)
    assert bench.engine_option("decontract=true") == ("decontract", True)
    assert bench.engine_option("spread_items=False") == ("spread_items", False)


@pytest.mark.parametrize("text", ["omega=0.3", "block_items", "nonsense=1", "streams=many"])
def test_engine_option_refuses_what_the_engine_does_not_take(text):
    with pytest.raises(argparse.ArgumentTypeError):
        bench.engine_option(text)


def test_xc_settings_are_typed_and_checked_against_kerneldis():
    assert bench.xc_setting("grid_order_on_device=true") == ("grid_order_on_device", True)
    assert bench.xc_setting("block_size=16") == ("block_size", 16)
    assert bench.xc_setting("basis_order=input") == ("basis_order", "input")
    for text in ("grid_order_on_device", "no_such_setting=1"):
        with pytest.raises(argparse.ArgumentTypeError):
            bench.xc_setting(text)


def test_accuracy_runs_with_engine_options(tmp_path):
    argv = ["accuracy", "--systems", "water_clusters/002:sto-3g", "--backend", "cpu",
            "--engine-option", "max_work=4", "--engine-option", "decontract=true",
            "--out", str(tmp_path)]  # fmt: skip
    assert bench.main(argv) == 0
    rows = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert [row["method"] for row in rows] == ["rhf", "uhf"]
    for row in rows:  # tolerances as the accuracy acceptance (tight screening, 1e-10)
        assert row["max_dj"] <= 1e-10 and row["max_dk"] <= 1e-10


def _squares(n: int) -> int:
    return sum(i * i for i in range(n))


def test_host_profile_gives_calls_and_seconds_per_build():
    rows = bench.host_profile(lambda: [_squares(200) for _ in range(3)], repeats=4)
    (row,) = [r for r in rows if r["function"].endswith("(_squares)")]
    # named from the package folder on (under an entry of sys.path): no machine path
    assert not row["function"].startswith("/") and "test_scf_bench_cli.py:" in row["function"]
    assert row["calls"] == 3.0  # three calls in each of the four builds
    assert 0 < row["own_s"] <= row["cumulative_s"]
    assert len(rows) <= bench.HOST_PROFILE_ROWS


@pytest.mark.gpu
@pytest.mark.parametrize("shared", [None, "gpu4pyscf", "ours"])
def test_gradient_rows_compare_one_gradient_two_ways(tmp_path, shared):
    """``bench gradient``: GPU4PySCF's and our RHF gradient of a water dimer agree to the
    gradient acceptance (1e-7 Eh/Bohr); with ``--shared-scf`` both are of one SCF."""
    argv = ["gradient", "--systems", "water_clusters/002:6-31g", "--repeats", "1",
            "--conv-tol", "1e-10", "--out", str(tmp_path)]  # fmt: skip
    assert bench.main(argv + (["--shared-scf", shared] if shared else [])) == 0
    rows = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    (row,) = [r for r in rows if r["kind"] == "gradient"]
    assert row["scf"] == (f"shared ({shared})" if shared else "each")
    assert row["max_d_grad"] <= 1e-7
    for how in ("gpu4pyscf", "ours"):
        assert row[how]["converged"] and row[how]["gradient_s"] > 0
    if shared:
        assert row["ours"]["e_tot"] == row["gpu4pyscf"]["e_tot"]


@pytest.mark.gpu
def test_dft_rows_hold_the_ways_asked_for(tmp_path):
    """``bench dft --ways``: the ways run, their energies within Fig. 5's 1e-7 Eh of
    GPU4PySCF's, and the XC engine's block statistics and the device's memory beside them."""
    argv = ["dft", "--systems", "water_clusters/002:6-31g", "--xc", "pbe", "--grid-level", "1",
            "--repeats", "1", "--ways", "gpu4pyscf", "both", "--out", str(tmp_path)]  # fmt: skip
    assert bench.main(argv) == 0
    rows = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    (row,) = [r for r in rows if r["kind"] == "dft"]
    assert "xc only" not in row
    assert abs(row["both"]["e_tot"] - row["gpu4pyscf"]["e_tot"]) <= 1e-7
    assert "ao_cached" in row["both"]["xc_stats"] and "xc_stats" not in row["gpu4pyscf"]
    for way in ("gpu4pyscf", "both"):
        assert 0 < row[way]["device_free_bytes"] <= row[way]["device_total_bytes"]
