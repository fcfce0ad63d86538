"""Tables and plots of the benchmark records (the GPU figures are fed CPU records renamed to
the GPU benchmark's keys, so the record layout they read is the one compare_sizes writes)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("matplotlib")

from kerneldi.settings import Settings  # noqa: E402
from qcbench.records import Record, read_record, write_manifest  # noqa: E402
from qcbench.xc import bench, figures  # noqa: E402
from qcbench.xc.experiments import threshold_sweep  # noqa: E402


def xc_record(folder, rid: str, files: dict, supersedes=()) -> Record:
    """An xc-bench record holding ``files`` (JSON by stem)."""
    folder.mkdir(parents=True)
    for name, obj in files.items():
        (folder / f"{name}.json").write_text(json.dumps(obj))
    write_manifest(
        folder, id=rid, kind="xc-bench", created=f"2026-01-0{len(supersedes) + 1}", commit="c",
        device={}, software={}, command="bench", options={}, supersedes=list(supersedes),
        summary=rid,
    )  # fmt: skip
    return read_record(folder)


def test_later_records_replace_a_molecule_and_say_what_they_measured(tmp_path):
    first = xc_record(tmp_path / "a", "a", {
        "provenance": {"gpu": "first"},
        "sweep": [{"molecule": "w5", "natm": 15, "wall_s": 1.0},
                  {"molecule": "w9", "natm": 27, "skipped": "budget"}],
    })  # fmt: skip
    second = xc_record(tmp_path / "b", "b", {
        "provenance": {"gpu": "second"},
        "sweep": [{"molecule": "w5", "natm": 15, "wall_s": 2.0}],
    }, supersedes=["a"])  # fmt: skip
    assert figures.bench_keys(first) == {("sweep", "w5")}
    loaded = figures.load_gpu([second, first])
    assert {r["molecule"]: r.get("wall_s") for r in loaded["sweep"]} == {"w5": 2.0, "w9": None}
    assert loaded["provenance"]["gpu"] == "first" and loaded["provenance_b"]["gpu"] == "second"


def gpu_like(record: dict, molecule: str) -> dict:
    text = json.dumps(record)
    for cpu, gpu in (('"pyscf"', '"gpu4pyscf"'), ("vs_pyscf", "vs_gpu4pyscf")):
        text = text.replace(cpu, gpu)
    out = json.loads(text.replace("exc_openblas", "exc_cublas"))
    out["molecule"] = molecule
    return out


def test_gpu_figures_from_benchmark_records(tmp_path):
    rec = bench.compare_sizes(
        bench.Env("cpu"), "water_clusters/002", "sto-3g", 0, bench.Budget(600), True
    )
    assert rec["ours_fp64"]["vs_pyscf"]["d_exc"] <= 1e-9
    # our screening error against the dense baseline, recorded on the first FP64 mode measured
    assert rec["ours_fp64"]["vs_exc_openblas"]["d_exc"] <= 1e-9
    # a run of the FP64 tensor cores alone gives Fig. 2 its error as well
    tensor_only = json.loads(
        json.dumps(gpu_like(rec, "gly/gly30")).replace("ours_fp64", "ours_fp64-tc")
    )
    results = {
        "provenance": {"gpu": "test", "paper_v100": bench.PAPER_V100},
        "sweep": [gpu_like(rec, "water_clusters/002"), tensor_only],
        "madft": [gpu_like(rec, "madft/ethanol"), {"molecule": "madft/c60a", "skipped": "budget"}],
    }
    loaded = figures.load_gpu([xc_record(tmp_path / "run", "run", results)])
    table = figures.sweep_table(loaded)
    assert len(table) == 3 and (table["speedup_vs_exc_cublas"] > 0).all()
    assert table["d_exc_fp64_vs_exc_cublas"].notna().all()
    assert table.set_index("molecule").loc["gly/gly30", "ours_fp64-tc_s"] > 0
    figures.fig4(table, tmp_path / "fig4.png", bench.PAPER_V100)
    figures.fig2(table, tmp_path / "fig2.png", bench.PAPER_V100)
    text = figures.gpu_summary(loaded, table)
    assert (tmp_path / "fig4.png").stat().st_size > 0 and (tmp_path / "fig2.png").stat().st_size > 0
    assert "madft/c60a (budget)" in text and "up to 10.0x" in text


def test_threshold_figure(tmp_path):
    df = threshold_sweep("water_clusters/002", "sto-3g", 0, "pbe", [1e-12, 1e-6, 1e-3], Settings())
    assert df["potential_pair_fraction"].is_monotonic_decreasing
    figures.threshold_sweep_figure(df, tmp_path / "fig3.png", 1e-12)
    assert (tmp_path / "fig3.png").stat().st_size > 0


def test_merge_joins_parts_run_on_several_gpus(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    pa, pb = bench.Out(a), bench.Out(b)
    pa.write("provenance", {"gpu": "first"})
    pb.write("provenance", {"gpu": "second"})
    pb.write("provenance_resume", {"gpu": "second, resumed"})
    pa.add("sweep", {"molecule": "w5", "natm": 15, "wall_s": 1.0})
    pa.add("sweep", {"molecule": "w9", "natm": 27, "skipped": "budget"})
    pb.add("sweep", {"molecule": "w9", "natm": 27, "wall_s": 2.0})
    pb.add("sweep", {"molecule": "w5", "natm": 15, "skipped": "budget"})
    # measured in both: the later part's re-measurement replaces the earlier record
    pa.add("sweep", {"molecule": "w7", "natm": 21, "wall_s": 3.0})
    pb.add("sweep", {"molecule": "w7", "natm": 21, "wall_s": 4.0})
    pa.add("accuracy", {"molecule": "w5", "kind": "RKS", "xc": "pbe"})
    bench.main(["--out", str(tmp_path / "m"), "--merge", str(a), str(b)])
    sweep = json.loads((tmp_path / "m" / "sweep.json").read_text())
    assert {r["molecule"]: r.get("wall_s") for r in sweep} == {"w5": 1.0, "w9": 2.0, "w7": 4.0}
    assert len(json.loads((tmp_path / "m" / "accuracy.json").read_text())) == 1
    assert json.loads((tmp_path / "m" / "provenance.json").read_text())["gpu"] == "first"
    assert json.loads((tmp_path / "m" / "provenance_b.json").read_text())["gpu"] == "second"
    resumed = json.loads((tmp_path / "m" / "provenance_b_resume.json").read_text())
    assert resumed["gpu"] == "second, resumed"


def test_gradient_figures_from_benchmark_records(tmp_path):
    """Figs. 2 (right) and 4b from gradient records as compare_gradient writes them (a CPU
    record renamed to the GPU keys), with the goals' lines in the summary."""
    rec = bench.compare_gradient(bench.Env("cpu"), "water_clusters/002", "def2-svp", 0, True)
    big = gpu_like(rec, "proteins/1CRN") | {"natm": 642}
    big["exc_cublas"] = dict(big["exc_cublas"], median_s=10 * big["ours"]["median_s"])
    tz = gpu_like(rec, "madft/ethanol") | {"natm": 120, "basis": "def2-tzvp"}
    results = {
        "provenance": {"gpu": "test", "paper_v100": bench.PAPER_V100},
        "gradient": [gpu_like(rec, "water_clusters/005"), big],
        "madft_gradient": [tz, {"molecule": "madft/c60a", "skipped": "budget"}],
    }
    loaded = figures.load_gpu([xc_record(tmp_path / "run", "run", results)])
    table = figures.gradient_table(loaded)
    assert len(table) == 3 and (table["ours_max_d_grad"] <= 1e-8).all()
    assert (table["speedup_vs_exc_cublas"] > 0).all()
    figures.fig4_gradient(table, tmp_path / "fig4b.png")
    figures.fig2_gradient(table, tmp_path / "fig2r.png")
    assert (tmp_path / "fig4b.png").stat().st_size > 0
    assert (tmp_path / "fig2r.png").stat().st_size > 0
    text = figures.gpu_summary(loaded, figures.sweep_table(loaded))
    assert "over EXC-cuBLAS at >= 400 atoms: 10.0x at least (goal 5x: MET)" in text
    assert "madft_gradient: madft/c60a (budget)" in text
