"""The GPU campaign reports on small synthetic records shaped like the campaign's own
(``bench.Measurement`` rows, error records, ``verify.ClassErrors`` rows): tables, figures,
goals and the summary, and the pipeline script end to end."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fusionrcg import QuartetClass, canonical_classes, kernel_options
from fusionrcg.variants import Tier
from qcbench.eri.bench import Measurement
from qcbench.eri.reporting import gpu_results, gpu_summary
from qcbench.eri.reporting.gpu_figures import ablation_figure, tier_figure
from qcbench.eri.verify import ClassErrors
from qcbench.records import discover, write_manifest

SCRIPTS = Path(__file__).resolve().parents[2] / "workflow" / "scripts"
PEAK = 50e12
QUARTETS = ["1,0,1,0", "1,1,1,0"]
# synthetic quartets/s: tier1-only beats tier2-only up to total 2, loses above
RATES = {"full": 4e8, "no-axis": 2e8, "no-dsa": 1e8, "no-spherical": 3.2e8}


def measurement(
    cls: QuartetClass,
    variant: str,
    epilogue: str,
    qps: float,
    tier: int,
    bank: str = "global",
    kernel2: str = "",
) -> dict:
    flops = 1e9
    seconds = 1e6 / qps
    row = Measurement(
        cls=str(cls), total=cls.total, variant=variant, tier=tier, epilogue=epilogue,
        basis="cc-pvdz", n_quartets=1_000_000, seconds_median=seconds, seconds_min=seconds,
        quartets_per_second=qps, flops=flops, flop_rate=flops / seconds,
        fraction_of_peak=flops / seconds / PEAK, mean_primitive_quartets=81.0,
        registers=128 if tier == 1 else 255, spill_store_bytes=0, spill_load_bytes=0,
        stack_bytes=0, ptxas_level=3, slots_per_quartet=0 if tier == 1 else 90,
        bank="" if tier == 1 else bank,
        kernel2=kernel2, quartet_order="primitive", max_work=64,
        options=kernel_options(variant).to_json(),
    ).row()  # fmt: skip
    if tier == 2 and not kernel2:  # the first campaign's records had neither field
        del row["bank"], row["kernel2"]
    return row


def measurements() -> list[dict]:
    rows = []
    for text in QUARTETS:
        cls = QuartetClass.parse(text).canonical()
        for variant, qps in RATES.items():
            rows.append(measurement(cls, variant, "store", qps, 1))
    # (1,1|1,0) no-dsa did not compile: an error record names the class by its tag
    rows = [r for r in rows if not (r["cls"] == "(1,1|1,0)" and r["variant"] == "no-dsa")]
    rows.append({"class": "1110", "variant": "no-dsa", "epilogue": "store", "error": "boom"})
    # (1,0|1,0): no-spherical built at the compile fallback's ptxas level; no-axis recorded
    # before records carried the level
    for r in rows:
        if r.get("cls") == "(1,0|1,0)" and r["variant"] == "no-spherical":
            r["ptxas_level"] = 1
        elif r.get("cls") == "(1,0|1,0)" and r["variant"] == "no-axis":
            del r["ptxas_level"]
    for cls in canonical_classes(1):
        t1, t2 = (3e8, 1e8) if cls.total <= 2 else (1e8, 2e8)
        rows.append(measurement(cls, "tier1-only", "jk", t1, 1))
        if cls.total < 4:
            rows.append(measurement(cls, "tier2-only", "jk", t2, 2))
        else:  # Tier 2 of the largest class missing: only one tier measured there
            rows.append({"class": cls.tag, "variant": "tier2-only", "epilogue": "jk",
                         "error": "CompileError: exceeded 300 s"})  # fmt: skip
    return rows


def runtime_forms(tier2_form: str):
    """A stand-in for the runtime's J/K forms: Tier 1 fused, Tier 2 ``tier2_form``."""
    return lambda shape, tier=Tier.BUFFERED: "fused" if tier is Tier.REGISTER else tier2_form


def plans() -> pd.DataFrame:
    """The model puts totals <= 2 in Tier 1, larger ones in Tier 2."""
    return pd.DataFrame(
        [
            {
                "class": str(c),
                "variant": "full",
                "spherical": True,
                "tier": 1 if c.total <= 2 else 2,
            }
            for c in canonical_classes(1)
        ]
    )


def verification(fail: str | None = None) -> list[dict]:
    rows = []
    for cart in (False, True):
        for cls in canonical_classes(1):
            err = 2.0 if str(cls) == fail else 0.1
            row = ClassErrors(
                cls=str(cls),
                n_quartets=2,
                n_values=18,
                max_abs_value=1.0,
                max_abs_error=1e-13,
                max_rel_error=1e-13,
                max_normalized_error=err,
                max_primitives=10,
                max_contractions=3,
                worst_quartet=(0, 1, 2, 3),
                worst_element=(0, 0, 0, 0),
            ).row() | {"molecule": "water_clusters/002", "basis": "ano", "cartesian": cart}
            if err > 1:
                row |= {"exact": 1.0, "engine_error": 1e-12, "pyscf_error": 1e-13,
                        "engine_right": False}  # fmt: skip
            rows.append(row)
    return rows


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _record(root: Path, kind: str, rid: str, created: str, supersedes=()) -> Path:
    folder = root / kind / rid
    write_manifest(
        folder, id=rid, kind=kind, created=created, commit="abc", device={}, software={},
        command="x", options={}, supersedes=list(supersedes), summary=rid,
    )  # fmt: skip
    return folder


def write_records(root: Path, fail: str | None = None) -> Path:
    """Records under ``root``: the campaign's benchmark, a later re-measurement that
    supersedes it, and the verification."""
    device = {"gpu": "Test GPU", "multiprocessors": 132, "fp64_fma_peak": PEAK, "command": "x"}
    campaign = root / "eri-bench" / "campaign"
    campaign.mkdir(parents=True)
    _jsonl(campaign / "measurements.jsonl", measurements())
    (campaign / "device.json").write_text(json.dumps(device))
    _record(root, "eri-bench", "campaign", "2026-01-01T00:00:00")
    check = root / "eri-verify" / "check"
    check.mkdir(parents=True)
    _jsonl(check / "verify_gpu.jsonl", verification(fail))
    (check / "verify_device.json").write_text(json.dumps({"gpu": "Test GPU"}))
    _record(root, "eri-verify", "check", "2026-01-01T00:00:00")
    # a later run re-measured Tier 2 of (1,1|0,0) with its bank in shared memory and every
    # Kernel 2 form (the runtime's, generated, now beats Tier 1), and with the bank forced into
    # global memory; it was started first, but it supersedes the campaign
    later = root / "eri-bench" / "later"
    later.mkdir()
    cls = QuartetClass(1, 1, 0, 0)
    shared = {"bank": "shared", "tier": 2}
    rows = [
        measurement(cls, "tier2-only", "jk", qps, kernel2=form, **shared)
        | {"bank_request": "auto", "kernel2_request": form}
        for form, qps in (("generated", 5e8), ("block", 6e8), ("thread", 4e8))
    ]
    rows += [
        measurement(cls, "tier2-only", "jk", 2e8, 2, kernel2="generated")
        | {"bank_request": "global", "kernel2_request": "auto"},
        # full re-measured alone: the axis ablation must not set it against no-axis of the
        # campaign
        measurement(QuartetClass(1, 0, 1, 0), "full", "store", 8e8, 1),
    ]
    _jsonl(later / "measurements.jsonl", rows)
    (later / "device.json").write_text(json.dumps(device | {"command": "later"}))
    _record(root, "eri-bench", "later", "2025-12-31T00:00:00", supersedes=["campaign"])
    return root


def load(root: Path) -> gpu_results.GpuResults:
    return gpu_results.load_results(discover([root], "eri-bench"), discover([root], "eri-verify"))


@pytest.fixture
def results(tmp_path):
    return load(write_records(tmp_path / "records"))


def test_throughput_keeps_errors_and_recomputes_the_peak_fraction(results):
    table = gpu_results.throughput_table(results.measurements, PEAK)
    bad = table[table["error"].notna()]
    assert set(bad["class"]) == {"(1,1|1,0)", "(1,1|1,1)"}
    assert bad["quartets_per_second"].isna().all()
    ok = table[table["error"].isna()]
    assert np.allclose(ok["fraction_of_peak"], ok["flop_rate"] / PEAK)
    assert (table.loc[table["class"] == "(1,1|1,1)", "total"] == 4).all()


def test_ablations_are_full_over_the_variant_with_missing_reasons(results):
    table = gpu_results.throughput_table(results.measurements, PEAK)
    axis = gpu_results.ablation_table(table, QUARTETS, "axis")
    assert np.allclose(axis["speedup"], RATES["full"] / RATES["no-axis"])
    assert set(axis["source"]) == {"campaign"}  # not later's full against campaign's no-axis
    dsa = gpu_results.ablation_table(table, QUARTETS, "dsa").set_index("quartet")
    assert dsa.loc["(1,0|1,0)", "speedup"] == pytest.approx(4.0)
    assert np.isnan(dsa.loc["(1,1|1,0)", "speedup"])
    assert "no-dsa: boom" in dsa.loc["(1,1|1,0)", "missing"]
    assert np.isnan(dsa.loc["(1,1|1,0)", "ablated_ptxas_level"])
    levels = {
        a: gpu_results.ablation_table(table, QUARTETS, a).set_index("quartet").loc["(1,0|1,0)"]
        for a in ("axis", "spherical")
    }
    assert levels["spherical"]["ablated_ptxas_level"] == 1
    assert levels["axis"]["ablated_ptxas_level"] == 3 == levels["axis"]["full_ptxas_level"]


def test_tier_choice_counts_classes_with_both_tiers(results, monkeypatch):
    # Tier 2 as the runtime runs it; with Kernel 2 a block per quartet the campaign's records
    # count, and the re-measured (1,1|0,0) block-form record
    monkeypatch.setattr(gpu_results, "kernel2_form", runtime_forms("block"))
    table = gpu_results.throughput_table(results.measurements, PEAK)
    tiers = gpu_results.tier_table(table, gpu_results.model_tiers(plans()))
    assert len(tiers) == len(canonical_classes(1))
    both = tiers[tiers["faster_tier"].notna()]
    # the re-measured (1,1|0,0) Tier 2 (6e8: shared bank, block form) replaced the campaign's
    # 1e8 and beats Tier 1's 3e8; the global-bank ablation is not Tier 2's number
    assert tiers.set_index("class").loc["(1,1|0,0)", "tier2_qps"] == 6e8
    expected = [2 if c == "(1,1|0,0)" else (1 if t <= 2 else 2) for c, t in
                zip(both["class"], both["total"])]  # fmt: skip
    assert list(both["faster_tier"]) == expected
    assert gpu_results.tier_choice(tiers) == (4, 5)
    last = tiers.iloc[-1]
    assert last["class"] == "(1,1|1,1)" and "exceeded" in last["tier2_error"]
    peak = gpu_results.tier1_peak_table(table, gpu_results.model_tiers(plans()))
    assert set(peak["class"]) == {str(c) for c in canonical_classes(1) if c.total <= 2}


def test_tier2_options_per_class(results):
    table = gpu_results.throughput_table(results.measurements, PEAK)
    assert (table["source"] == "later").sum() == 5
    assert table["superseded"].sum() == 2  # campaign's (1,1|0,0) Tier 2 and (1,0|1,0) full
    options = gpu_results.tier2_options_table(table).set_index("class")
    row = options.loc["(1,1|0,0)"]
    qps = [row[f"{f}_qps"] for f in ("generated", "block", "thread", "global_bank")]
    assert qps == [5e8, 6e8, 4e8, 2e8]
    assert row["runtime_kernel2"] == "generated"
    assert row["shared_over_global"] == pytest.approx(2.5)
    assert row["generated_over_thread"] == pytest.approx(1.25)
    # the campaign's Tier 2 J/K records ran the block form, in global memory
    old = options.loc["(1,0|1,0)"]
    assert old["block_qps"] == 1e8 and np.isnan(old["thread_qps"]) and old["bank"] == "global"


def test_verification_per_class_and_form(results):
    table = gpu_results.verification_table(results.verification)
    assert len(table) == 2 * len(canonical_classes(1))
    assert table["verified"].all()
    assert gpu_results.unverified_classes(table, canonical_classes(1)) == []
    bad = gpu_results.verification_table(pd.DataFrame(verification(fail="(1,1|0,0)")))
    missing = gpu_results.unverified_classes(bad, canonical_classes(1))
    assert missing == ["(1,1|0,0) spherical", "(1,1|0,0) cartesian"]


def test_tier2_is_the_form_the_runtime_runs(results):
    table = gpu_results.throughput_table(results.measurements, PEAK)
    tiers = gpu_results.tier_table(table, gpu_results.model_tiers(plans())).set_index("class")
    # the runtime's Kernel 2 is the generated one (5e8, not the block form's 6e8)
    assert tiers.loc["(1,1|0,0)", "tier2_qps"] == 5e8
    assert tiers.loc["(1,1|0,0)", "tier2_kernel2"] == "generated"
    # the campaign measured only the block form: not Tier 2 as it runs now
    assert np.isnan(tiers.loc["(1,0|0,0)", "tier2_qps"])
    assert gpu_results.tier_choice(tiers.reset_index()) == (0, 1)


def test_summary_states_goals_and_the_paper(results, tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_results, "kernel2_form", runtime_forms("block"))
    table = gpu_results.throughput_table(results.measurements, PEAK)
    tiers_by_class = gpu_results.model_tiers(plans())
    ablations = {a: gpu_results.ablation_table(table, QUARTETS, a) for a in gpu_results.ABLATIONS}
    tiers = gpu_results.tier_table(table, tiers_by_class)
    options = gpu_results.tier2_options_table(table)
    peak = gpu_results.tier1_peak_table(table, tiers_by_class)
    ver = gpu_results.verification_table(results.verification)
    goals = gpu_summary.Goals(0.9, 0.3, (0, 2))
    text = gpu_summary.summary_markdown(
        table, ablations, tiers, options, peak, ver, canonical_classes(1), results, goals,
    )  # fmt: skip
    assert "4 of 5 classes with both tiers measured (80%; goal 90%): **NOT MET**" in text
    assert "Not the faster one: (1,1|0,0)." in text
    # the later record (started first) is listed after the campaign it supersedes
    assert text.index("- `campaign` (") < text.index("- `later` (5 measurements)")
    assert "generated Kernel 2 over the run-time loop per quartet: 1.25x-1.25x" in text
    # 1e9 FLOP at 4e8 or 3e8 quartets/s per 1e6 quartets is far below 30% of 50 TFLOP/s
    assert "reach 30% of the measured peak" in text and "**NOT MET**" in text
    assert "Tier 1 fails to compile beyond total 12" in text
    assert "2.68" in text and "Test GPU" in text
    assert "no-dsa: boom" in text
    assert "Measured Tier 1 kernels up to total 6 with spill stores: none" in text
    for ablation, t in ablations.items():
        ablation_figure(t, ablation, tmp_path / f"{ablation}.png")
    tier_figure(tiers, tmp_path / "tiers.png")
    assert all((tmp_path / f"{a}.png").stat().st_size > 0 for a in gpu_results.ABLATIONS)


def test_summary_names_spilling_tier1_kernels_up_to_total_6():
    rows = [measurement(QuartetClass(1, 1, 1, 1), "tier1-only", "jk", 1e8, 1)]
    rows[0]["spill_store_bytes"] = 8
    rows.append(measurement(QuartetClass(1, 0, 1, 0), "full", "store", 1e8, 1))
    rows.append(measurement(QuartetClass(2, 2, 2, 1), "tier1-only", "jk", 1e8, 1))
    rows[-1]["spill_store_bytes"] = 800  # above total 6 spills are accepted
    table = gpu_results.throughput_table(
        pd.DataFrame(rows).assign(source="campaign", source_rank=0, superseded=False, error=None),
        PEAK,
    )
    text = gpu_summary._tier1_spills(table, 6)
    assert "with spill stores: (1,1|1,1) (of 2 classes)" in text


def test_report_script_end_to_end(tmp_path):
    records = write_records(tmp_path / "records")
    plans().to_csv(tmp_path / "plans.csv", index=False)
    out = tmp_path / "out"
    tables = ["throughput", "tiers", "tier2-options", "peak", "ablations", "verification"]
    args = [sys.executable, str(SCRIPTS / "eri_gpu_report.py"), "--records", str(records)]
    args += ["--plans", str(tmp_path / "plans.csv"), "--paper-quartets", *QUARTETS]
    args += ["--lmax", "1", "--tier-choice-goal", "0.9", "--peak-goal", "0.3"]
    args += ["--mid-totals", "1", "2"]
    for t in tables:
        args += [f"--out-{t}", str(out / f"{t}.csv"), str(out / f"{t}.md")]
    args += ["--out-figures", *(str(out / f"f{i}.png") for i in range(4))]
    args += ["--out-summary", str(out / "SUMMARY.md")]
    run = subprocess.run(args, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert all((out / f"{t}.csv").exists() for t in tables)
    assert "# ERI kernels on the GPU" in (out / "SUMMARY.md").read_text()
    assert len(pd.read_csv(out / "ablations.csv")) == 3 * len(QUARTETS)


def test_paper_quartets_set_tier1_only_against_tier2_only(tmp_path):
    root = write_records(tmp_path / "records")
    cls = QuartetClass(1, 1, 1, 0)
    extra = [measurement(cls, "tier1-only", "store", 6e8, 1),
             measurement(cls, "tier2-only", "store", 2e8, 2)]  # fmt: skip
    campaign = root / "eri-bench" / "campaign"
    with (campaign / "measurements.jsonl").open("a") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in extra))
    _record(root, "eri-bench", "campaign", "2026-01-01T00:00:00")  # its manifest again
    results = load(root)
    table = gpu_results.throughput_table(results.measurements, PEAK)
    paired = gpu_results.paired_table(table, QUARTETS, "tier1-only", "tier2-only")
    by = paired.set_index("quartet")
    assert by.loc["(1,1|1,0)", "speedup"] == pytest.approx(3.0)
    assert np.isnan(by.loc["(1,0|1,0)", "speedup"])  # neither tier measured there
    text = gpu_summary.paper_quartet_tiers(paired, above=2)
    assert "Tier 1-only over Tier 2-only: 3.00x at (1,1|1,0)" in text
    assert "(1,0|1,0)" not in text  # total 2 is not above 2


def test_runtime_jk_forms_by_tier_and_size():
    """Tier 1 folds J/K into its epilogue up to the limit, then stores and runs Kernel 2 (never
    a generated one: Tier 1 binaries hold none); Tier 2 never fuses."""
    from fusionrcg.lowering.kernel import FUSED_JK_MAX_OUTPUTS
    from fusionrcg.runtime.gpu import kernel2_form

    small, large = (FUSED_JK_MAX_OUTPUTS, 1, 1, 1), (FUSED_JK_MAX_OUTPUTS + 1, 1, 1, 1)
    assert kernel2_form(small, tier=Tier.REGISTER) == "fused"
    assert kernel2_form(large, tier=Tier.REGISTER) == kernel2_form(large, generated=False)
    assert kernel2_form((3, 3, 3, 1), tier=Tier.REGISTER) == "fused"
    assert kernel2_form((5, 1, 1, 1)) == "generated"
    assert kernel2_form(small, "thread", tier=Tier.REGISTER) == "thread"
    with pytest.raises(ValueError, match="only Tier 1"):
        kernel2_form(small, "fused")


def test_a_kernel_with_other_options_supersedes_no_product_measurement(tmp_path):
    root = write_records(tmp_path / "records")
    cls = QuartetClass(1, 0, 1, 0)
    study = kernel_options("full").replace(prefetch_max_accumulators=0)
    rows = [
        measurement(cls, "no-axis", "store", 1e8, 1),  # the product's no-axis again
        measurement(cls, "full", "store", 9e8, 1) | {"options": study.to_json()},
    ]
    study_run = root / "eri-bench" / "study"
    study_run.mkdir()
    _jsonl(study_run / "measurements.jsonl", rows)
    (study_run / "device.json").write_text(json.dumps({"gpu": "Test GPU", "fp64_fma_peak": PEAK}))
    _record(root, "eri-bench", "study", "2026-02-01T00:00:00", supersedes=["campaign", "later"])
    table = gpu_results.throughput_table(load(root).measurements, PEAK)
    full = table[(table["class"] == str(cls)) & (table["variant"] == "full")]
    # the study's full kernel is its own measurement; later's product kernel stays current
    assert list(full["superseded"]) == [True, False, False]
    assert list(full["source"]) == ["campaign", "later", "study"]
    no_axis = table[(table["class"] == str(cls)) & (table["variant"] == "no-axis")]
    assert list(no_axis["superseded"]) == [True, False]


def test_derivative_verification_line():
    from qcbench.eri.reporting.gpu_summary import deriv_verification_line

    assert "not checked" in deriv_verification_line(pd.DataFrame())
    rows = pd.DataFrame(
        {
            "cls": ["(1,0|0,0) nabla_A", "(4,4|4,4) nabla_A", "(2,2|2,2) nabla_A"],
            "passed": [True, False, False],
            "engine_right": [None, True, False],
            "max_normalized_error": [0.1, 2.0, 3.0],
            "item_threads": [1, 256, 256],
        }
    )
    line = deriv_verification_line(rows)
    assert "2 of 3 classes up to (4,4|4,4) verified" in line
    assert "2 of them in the block form" in line and "FAIL on (2,2|2,2) nabla_A" in line
    assert "**PASS**" in deriv_verification_line(rows.iloc[:2])


def test_derivative_verification_line_adjudicates_relative_errors():
    from qcbench.eri.reporting.gpu_summary import deriv_verification_line

    rows = pd.DataFrame(
        {
            "cls": ["(1,0|0,0) nabla_A", "(3,3|3,3) nabla_A"],
            "passed": [True, True],
            "max_normalized_error": [0.1, 0.001],
            "max_abs_error": [1e-15, 8e-15],
            "max_rel_error": [1e-13, 7.6e-9],
        }
    )
    line = deriv_verification_line(rows)
    assert "Largest absolute error 8e-15, largest relative error 7.6e-09" in line
    assert "1 classes are above 1e-09 relative against PySCF, not adjudicated" in line
    rows["relative_exact"] = [None, -1.17e-8]
    rows["relative_engine_error"] = [None, 1.1e-10]
    rows["relative_pyscf_error"] = [None, 1.3e-9]
    line = deriv_verification_line(rows)
    assert line.endswith(
        "Of the 1 classes above 1e-09 relative against PySCF, the 40-digit value of each "
        "one's element puts the engine at 1.1e-10 relative at most and PySCF at 1.3e-09 to "
        "1.3e-09."
    )
    rows["relative_engine_error"] = [None, 2e-9]
    assert deriv_verification_line(rows).endswith("the engine is above 1e-09 on (3,3|3,3) nabla_A.")
