"""The SCF benchmark report from records shaped as ``qcbench.scf.bench`` writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qcbench.runs import record_run
from qcbench.scf import report


def _run(root: Path, name: str, created: str, rows: list[dict]) -> dict:
    """A jk-scf record as the pipeline makes it: the bench's rows, its device file, a
    manifest superseding the records under ``root`` it measures again."""
    folder = root / "jk-scf" / name
    folder.mkdir(parents=True)
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    device = {"commit": "abc", "versions": {}, "python": "3.12", "created": created,
              "gpu": "Test GPU", "command": "python -m qcbench.scf.bench scf"}  # fmt: skip
    (folder / "device.json").write_text(json.dumps(device))
    return record_run(folder, "jk-scf", name, name, {}, [root])


def _scf_record(molecule: str, basis: str, base: float, ours: float) -> dict:
    timing = {"baseline_get_j_get_k_s": 2 * base, "baseline_get_jk_s": 3 * base,
              "ours_s": ours, "max_dj": 1e-12, "max_dk": 2e-12}  # fmt: skip
    return {
        "kind": "scf", "molecule": molecule, "basis": basis, "method": "rhf", "natm": 60,
        "nao": 480,
        "baseline": {"cycles": 10, "per_iteration_s": base, "setup_s": 1.0},
        "ours": {"cycles": 10, "per_iteration_s": ours, "setup_s": 2.0, "engine_setup_s": 0.5},
        "delta_e": 1e-10,
        "engine_options": {"decontract": {"options": {"decontract": True}, "setup_s": 0.1,
                                          "converged_s": 2 * ours}},
        "jk": {"mid": timing, "converged": timing},
        "profile": {
            "phases_s": {"densities": 0.01, "screening": 0.02, "integrals": 0.05,
                         "kernel 2": 0.02},
            "classes": [{"class": "(0,0|0,0)", "quartets": 10, "items": 10, "flops": 1e9,
                         "integrals_s": 0.01, "kernel2_s": 0.0, "flop_rate": 1e11,
                         "fraction_of_peak": 0.003}],
        },
    }  # fmt: skip


def test_report_tables_figures_and_goals(tmp_path):
    records = tmp_path / "records"
    first = _run(records, "first", "2026-01-01T10:00:00",
                 [_scf_record("water_clusters/005", "cc-pvdz", 0.2, 0.4)])  # fmt: skip
    rows = [
        _scf_record("water_clusters/005", "cc-pvdz", 0.2, 0.1),
        _scf_record("water_clusters/006", "cc-pvdz", 0.4, 0.4),
        _scf_record("water_clusters/003", "cc-pvqz", 1.0, 0.5),
        {"kind": "energy", "molecule": "water_clusters/002", "basis": "cc-pvdz",
         "method": "rhf", "gpu4pyscf": {"e_tot": -1.0, "cycles": 9},
         "pyscf": {"e_tot": -1.0, "cycles": 9}, "ours": {"e_tot": -1.0 + 2e-11, "cycles": 9}},
        {"kind": "dft", "molecule": "organic/113_Taxol", "basis": "def2-tzvp", "method": "m062x",
         "natm": 113, "nao": 1500, "grid_level": 4,
         "gpu4pyscf": {"total_s": 90.0, "cycles": 12, "e_tot": -2900.0},
         "xc only": {"total_s": 60.0, "cycles": 12, "e_tot": -2900.0 + 3e-9,
                     "xc_layout_s": 0.4},
         "both": {"total_s": 40.0, "cycles": 12, "e_tot": -2900.0 + 5e-8,
                  "xc_layout_s": 0.4, "jk_setup_s": 1.5}},
        {"kind": "gradient", "molecule": "water_clusters/007", "basis": "cc-pvtz",
         "method": "rhf", "natm": 141, "nao": 2726, "conv_tol": 1e-10, "direct_scf_tol": 1e-13,
         "gpu4pyscf": {"gradient_s": 12.0, "jk_gradient_s": 10.0, "e_tot": -1.0},
         "ours": {"gradient_s": 8.0, "jk_gradient_s": 4.0, "e_tot": -1.0},
         "max_d_grad": 3e-9},
    ]  # fmt: skip
    second = _run(records, "second", "2026-01-02T10:00:00", rows)
    assert second["supersedes"] == [first["id"]]
    out = tmp_path / "report"
    assert report.main(["--records", str(records), "--out", str(out)]) == 0
    for name in ("scf_iterations.md", "jk_builds.csv", "jk_classes.md", "jk_phases.md",
                 "jk_options.md", "dft_scf.md", "fig5_dft_scf.png",
                 "fig9a_ccpvdz.png", "fig9b_tz_qz.png", "fig10_average.png",
                 "jk_gradients.md"):  # fmt: skip
        assert (out / name).stat().st_size > 0
    summary = (out / "SUMMARY.md").read_text()
    # the later record's (H2O)20 row replaces the earlier one: mean of 2.0x and 1.0x
    assert "cc-pvdz: 1.50x over 2 system(s)" in summary
    assert "against 1.5x: MET on the systems measured" in summary
    assert "cc-pvqz: 2.00x over 1 system(s)" in summary
    assert "against 2.5x: NOT MET on the systems measured" in summary
    assert "ours - GPU4PySCF 2.00e-11 Eh" in summary
    assert "Records: 2026-01-02-second" in summary  # the first one's row was replaced
    # Fig. 5: 90 s against 40 s with both engines, energies within 1e-7 Eh
    assert "both 2.25x, XC only 1.50x (goal 2.0x: MET); energies within 1e-07 Eh: yes" in summary
    # the gradient: 12 s against 8 s, its J/K part 10 s against 4 s
    assert (
        "rhf water_clusters/007 cc-pvtz (2726 AOs, Test GPU, engine defaults): 1.50x (J/K"
        in summary
    )


def test_report_without_gpu_records(tmp_path):
    """A CPU-only machine: no jk-scf record yet, the CPU accuracy rows alone."""
    rows = tmp_path / "accuracy.jsonl"
    row = {"kind": "accuracy", "molecule": "water_clusters/002", "basis": "cc-pvdz",
           "method": "rhf", "cartesian": True, "backend": "cpu", "nao": 25, "tol": 1e-14,
           "setup_s": 1.0, "jk_s": 0.1, "max_dj": 1e-13, "max_dk": 2e-11, "max_j": 9.0,
           "max_k": 5.0, "jk_deriv_s": 0.3, "max_dj_deriv": 3e-13, "max_dk_deriv": 2e-10,
           "max_j_deriv": 12.0, "max_k_deriv": 6.0}  # fmt: skip
    rows.write_text(json.dumps(row) + "\n")
    out = tmp_path / "report"
    assert report.main(["--records", str(tmp_path / "none"), "--rows", str(rows),
                        "--out", str(out)]) == 0  # fmt: skip
    assert "(no SCF records)" in (out / "SUMMARY.md").read_text()
    accuracy = (out / "jk_accuracy.md").read_text()
    assert "cc-pvdz (cart)" in accuracy
    # the derivative K error (2e-10) fails the 1e-10 bound
    assert "False" in accuracy and "True" not in accuracy
    assert "(no gradient records)" in (out / "SUMMARY.md").read_text()


def test_markdown_cells_keep_their_pipes():
    import pandas as pd

    from qcbench.tables import to_markdown

    table = to_markdown(pd.DataFrame({"class": ["(1,0|1,0)"], "s": [0.5]}))
    assert table.splitlines()[2] == "| (1,0\\|1,0) | 0.5 |"


def test_gradient_rows_with_other_engine_settings_are_other_measurements():
    from qcbench.scf.records import row_key

    base = {"kind": "gradient", "molecule": "m", "basis": "b", "method": "rhf"}
    plain = {**base, "command": "bench gradient --method rhf"}
    routed = {**base, "command": "bench gradient --engine-option deriv_block_min_total=99"}
    assert row_key(plain) != row_key(routed)
    assert row_key(plain) == row_key({**base, "command": "bench gradient --repeats 3"})
    scf = {"kind": "scf", "molecule": "m", "basis": "b", "method": "rhf"}
    assert row_key({**scf, "command": "--engine-option streams=1"}) == row_key(scf)


def test_where_time_goes_splits_the_iteration_and_names_slow_classes():
    """An iteration's rest of the SCF from the builds timed inside our SCF (each cycle's time
    less its build, the median after the first cycle), J/K the remainder; a build slower than
    GPU4PySCF's get_j + get_k names the s and p classes far below the FP64 peak."""
    r = _scf_record("gly/gly30", "cc-pvdz", 0.1, 0.5)
    # the first Fock matrix's build, then one per cycle: cycle k holds build k + 1
    r["ours"]["cycle_s"] = [2.0, 0.52, 0.5, 0.49]
    r["ours"]["jk_build_s"] = [0.9, 0.3, 0.42, 0.4, 0.39]
    r["profile"]["classes"].append(
        {"class": "(2,2|2,2)", "quartets": 5, "items": 5, "flops": 1e9, "integrals_s": 0.01,
         "kernel2_s": 0.02, "flop_rate": 1e11, "fraction_of_peak": 0.003}
    )  # fmt: skip
    host = {"kind": "host_share", "molecule": "gly/gly30", "basis": "cc-pvdz", "nao": 480,
            "wall_s": 1.0, "host_cpu_s": 0.03, "host_share": 0.03}  # fmt: skip
    (line,) = report.where_time_goes([r, host])
    assert "per iteration ours 0.500 s = J/K 0.400 s (80%) + rest of the SCF 0.100 s" in line
    r["ours"]["jk_build_s"] = r["ours"]["jk_build_s"][1:]  # not one build per cycle: no split
    assert "per iteration" not in report.where_time_goes([r])[0]
    assert "launches (the host's share of a build) 3.0%" in line
    # 0.5 s against get_j + get_k 0.2 s: the (ss|ss) class is a quarter of the kernel time
    assert "25% of the kernel time is in s and p classes below 5%" in line
    assert "((0,0|0,0): 0 M surviving quartets)" in line


def test_host_share_line_keeps_the_calling_thread_apart():
    row = {"kind": "host_share", "molecule": "water_clusters/006", "basis": "cc-pvdz",
           "nao": 768, "wall_s": 0.2, "host_cpu_s": 0.01, "host_share": 0.05,
           "calling_thread_cpu_s": 0.004}  # fmt: skip
    (line,) = report.checks([row])
    assert "5.0% (0.010 s of 0.200 s; the calling thread 0.004 s, GPU not recorded; " in line
    assert "goal under 5%: NOT MET" in line  # 5.0% is not under 5%
    del row["calling_thread_cpu_s"]  # a record from before the field
    assert "5.0% (0.010 s of 0.200 s, GPU not recorded" in report.checks([row])[0]
    row.update(host_share=0.0433, gpu="NVIDIA H100 80GB HBM3")
    assert (
        "(0.010 s of 0.200 s, NVIDIA H100 80GB HBM3; goal under 5%: MET)"
        in (report.checks([row])[0])
    )
    row.update(nao=480)  # the goal is stated from 500 AOs
    assert "the goal is stated from 500 AOs)" in report.checks([row])[0]


def test_host_share_line_names_the_profiled_functions():
    row = {"kind": "host_share", "molecule": "water_clusters/006", "basis": "cc-pvdz",
           "nao": 768, "wall_s": 0.2, "host_cpu_s": 0.01, "host_share": 0.05,
           "host_profile": [
               {"function": "cupy/_core/core.pyx:10(empty)", "calls": 42.0, "own_s": 0.0012,
                "cumulative_s": 0.002},
               {"function": "fusionrcg/jk/streams.py:88(_pick)", "calls": 21.0,
                "own_s": 0.0004, "cumulative_s": 0.0009},
           ]}  # fmt: skip
    (line,) = report.checks([row])
    assert line.endswith(
        "most own host time per build (profiled, so slower): cupy/_core/core.pyx:10(empty) "
        "1.20 ms in 42 calls, fusionrcg/jk/streams.py:88(_pick) 0.40 ms in 21 calls"
    )


def test_gradient_table_gives_the_jk_gradient_kernels_share_of_the_peak():
    profile = {"fp64_peak": 5e13, "classes": [
        {"class": "(1,0|0,0)", "items": 10, "gradient_s": 0.1, "flops": 1e11},
        {"class": "(3,0|2,1)", "items": 5, "gradient_s": 0.3, "flops": 3e11},
    ]}  # fmt: skip
    record = {"kind": "gradient", "molecule": "water_clusters/004", "basis": "cc-pvtz",
              "method": "rhf", "natm": 30, "nao": 580, "max_d_grad": 2e-9,
              "gpu4pyscf": {"gradient_s": 0.85, "jk_gradient_s": 0.76},
              "ours": {"gradient_s": 1.2, "jk_gradient_s": 1.1,
                       "jk_gradient_profile": profile}}  # fmt: skip
    (share,) = report.gradient_table([record])["ours J/K kernels % of FP64 peak"]
    # 4e11 FLOPs in 0.4 s: 1e12 FLOP/s, 2% of 5e13
    assert share == pytest.approx(2.0)
    del profile["fp64_peak"]  # a record from before the peak was kept
    (share,) = report.gradient_table([record])["ours J/K kernels % of FP64 peak"]
    assert share != share  # NaN


def test_dft_ways_of_separate_runs_are_joined(tmp_path):
    """``bench dft --ways``: GPU4PySCF and the XC-only way in one run, both engines in the
    next; the report joins them into one Fig. 5 row, and a later run's way replaces it."""
    base = {"kind": "dft", "molecule": "organic/113_Taxol", "basis": "def2-tzvp",
            "method": "m062x", "natm": 113, "nao": 2228, "grid_level": 4, "conv_tol": 1e-8,
            "direct_scf_tol": 1e-13, "xc_settings": {}}  # fmt: skip
    g = {"total_s": 240.0, "cycles": 12, "e_tot": -2900.0, "xc_call_s": 2.0}
    x = {"total_s": 200.0, "cycles": 12, "e_tot": -2900.0 + 1e-9, "xc_layout_s": 0.5,
         "xc_call_s": 0.5}  # fmt: skip
    both = {"total_s": 160.0, "cycles": 12, "e_tot": -2900.0 + 2e-8, "xc_layout_s": 0.5,
            "xc_call_s": 0.5, "jk_setup_s": 1.0}  # fmt: skip
    records = tmp_path / "records"
    _run(records, "a", "2026-01-01T10:00:00", [{**base, "gpu4pyscf": g, "xc only": x}])
    _run(records, "b", "2026-01-02T10:00:00", [{**base, "both": both}])
    rows, _ = report.read_rows([records])
    (row,) = report.dft_table(rows).to_dict("records")
    assert row["speedup both"] == pytest.approx(1.5) and row["speedup XC only"] == 1.2
    assert row["cycles (GPU4PySCF / XC only / both)"] == "12 / 12 / 12"
    _run(records, "c", "2026-01-03T10:00:00", [{**base, "both": {**both, "total_s": 120.0}}])
    rows, _ = report.read_rows([records])
    (row,) = report.dft_table(rows).to_dict("records")
    assert row["speedup both"] == pytest.approx(2.0)
    # a system with GPU4PySCF's way alone: a row whose other ways say they were not measured
    _run(records, "d", "2026-01-04T10:00:00", [{**base, "molecule": "m", "gpu4pyscf": g}])
    rows, _ = report.read_rows([records])
    lines = report.dft_summary(report.dft_table(rows))
    assert any("m def2-tzvp" in line and "both not measured" in line for line in lines)
