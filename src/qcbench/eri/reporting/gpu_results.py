"""Tables from the GPU campaign's records (``python -m qcbench.eri.campaign bench`` and
``verify``): throughput per measurement, the ablations on the paper's quartets, Tier 1-only
against Tier 2-only, the tier the model picks against the faster one, the fraction of the FP64
peak reached in Tier 1, and verification against PySCF per class and output form.

The measurements come from ``eri-bench`` records and the checks from ``eri-verify`` records
(``qcbench.records``), taken in the records' order. A measurement carries either numbers or an
``error`` (a kernel that did not compile or launch); such measurements stay in the tables as
missing values with their reason. A later record's measurement supersedes an earlier one of
the same class, variant, epilogue, slot-bank request and Kernel 2 form: the tier tables use the
latest, while an ablation sets the full kernel against the ablated one measured in the same
record, never across records. A kernel built with options other than its variant's preset is a
measurement of its own.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from fusionrcg.angmom import QuartetClass, shell_size
from fusionrcg.options import PRESETS, KernelOptions
from fusionrcg.runtime.gpu import kernel2_form
from fusionrcg.variants import Tier
from qctoolchain import PTXAS_DEFAULT_LEVEL

from ...records import Record, ordered

THROUGHPUT_COLUMNS = (
    "class", "total", "variant", "epilogue", "tier", "basis", "n_quartets",
    "quartets_per_second", "flop_rate", "fraction_of_peak", "mean_primitive_quartets",
    "registers", "spill_store_bytes", "spill_load_bytes", "stack_bytes", "ptxas_level",
    "slots_per_quartet",
    "bank", "bank_request", "kernel2", "kernel2_request", "quartet_order", "max_work", "source",
    "source_rank", "superseded", "error",
)  # fmt: skip
# the ablations of the paper's Figs. 5(b), 6 and 7: the variant each one sets against full
ABLATIONS = {"axis": "no-axis", "dsa": "no-dsa", "spherical": "no-spherical"}
FORMS = ("spherical", "cartesian")


@dataclass(frozen=True)
class GpuResults:
    measurements: pd.DataFrame  # one row per measurement, ``source``: its record's id
    runs: dict[str, dict]  # device.json of each benchmark record, by id, in the records' order
    verification: pd.DataFrame  # the latest row per class, molecule, basis and form
    # verify_device.json of each verification record, by id, in the records' order, with the
    # checks of it the tables keep (``checks``, ``deriv_checks``)
    verify_runs: dict[str, dict]
    # the latest row per first-derivative class (int2e_ip1 through the J/K engine's kernels)
    deriv_verification: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def device(self) -> dict:
        """The device of the latest benchmark record."""
        return list(self.runs.values())[-1]


def read_jsonl(path: str | Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _with_defaults(records: pd.DataFrame) -> pd.DataFrame:
    """Records of runs that predate the slot-bank and Kernel 2 options, in today's terms: no
    request is "auto", a Tier 2 bank was in global memory, a Tier 2 J/K record ran Kernel 2
    as a block per quartet, a Tier 1 one its fused epilogue, and the quartets ran in the order
    they were sampled, none split into items."""
    df = records.copy()
    optional = ("bank", "bank_request", "kernel2", "kernel2_request", "quartet_order", "max_work")
    for col in (*optional, "slots_per_quartet", "error"):
        if col not in df:
            df[col] = np.nan
    # text columns that may hold only missing values in one record's measurements
    for col in ("bank", "kernel2", "error"):
        df[col] = df[col].astype(object)
    for col, default in (("bank_request", "auto"), ("kernel2_request", "auto"),
                         ("quartet_order", "given"), ("max_work", 0)):  # fmt: skip
        df[col] = df[col].where(df[col].notna(), default)
    ok = df["error"].isna()
    df.loc[ok & (df["slots_per_quartet"] > 0) & df["bank"].isna(), "bank"] = "global"
    old = (df["variant"] == "tier2-only") & (df["epilogue"] == "jk") & df["kernel2"].isna()
    df.loc[old, "kernel2"] = "block"
    unnamed = df["kernel2"].isna() | (df["kernel2"] == "")
    fused = (df["tier"] == 1) & (df["epilogue"] == "jk") & unnamed & ok
    df.loc[fused, "kernel2"] = "fused"
    return df


def _options_key(record: pd.Series) -> str:
    """ "" for a kernel built with its variant's preset options (the slot-bank request aside),
    and for records from before measurements carried their options; otherwise the options'
    key, so that a study's kernel is a measurement of its own and supersedes no product one."""
    data = record.get("options")
    if not isinstance(data, dict):
        return ""
    options = KernelOptions.from_json(data)
    preset = PRESETS.get(options.variant.name)
    # the bank is the measurement's own field (bank_request)
    if preset is not None and options == preset.replace(bank=options.bank):
        return ""
    return options.key()


def _measurement_key(record: pd.Series) -> tuple:
    """What a record measured: class, variant, epilogue, slot-bank request, Kernel 2 form and
    kernel options (``_options_key``)."""
    form = record["kernel2"] if isinstance(record["kernel2"], str) else ""
    return (str(_class_of(record)), record["variant"], record["epilogue"],
            record["bank_request"], form, _options_key(record))  # fmt: skip


def _verify_key(row: dict) -> tuple:
    return (row["cls"], row["molecule"], row["basis"], bool(row["cartesian"]))


def bench_keys(record: Record) -> set[tuple]:
    """The measurements of an ``eri-bench`` record (``qcbench.runs.measurement_keys``)."""
    rows = pd.DataFrame(read_jsonl(record.file("measurements.jsonl")))
    return set(_with_defaults(rows).apply(_measurement_key, axis=1)) if len(rows) else set()


def verify_keys(record: Record) -> set[tuple]:
    """The checks of an ``eri-verify`` record: class (a derivative class by its name),
    molecule, basis and output form."""
    names = [n for n in ("verify_gpu.jsonl", "verify_deriv_gpu.jsonl") if record.has(n)]
    return {_verify_key(row) for n in names for row in read_jsonl(record.file(n))}


def load_results(bench: Sequence[Record], verify: Sequence[Record]) -> GpuResults:
    """The measurements of the ``eri-bench`` records ``bench`` and the checks of the
    ``eri-verify`` records ``verify`` (none: an empty table), each in the records' order
    (``qcbench.records.ordered``): a measurement is ``superseded`` when a later record measured
    the same thing, a check is dropped when a later record made it again. ``run_peak`` is the
    FP64 peak measured in the process that made the measurement."""
    if not bench:
        raise ValueError("the GPU report needs at least one eri-bench record")
    frames, runs = [], {}
    for rank, record in enumerate(ordered(bench)):
        runs[record.id] = json.loads(record.file("device.json").read_text())
        rows = pd.DataFrame(read_jsonl(record.file("measurements.jsonl")))
        peak = runs[record.id].get("fp64_fma_peak", np.nan)
        frames.append(rows.assign(source=record.id, source_rank=rank, run_peak=peak))
    merged = _with_defaults(pd.concat(frames, ignore_index=True))
    merged["superseded"] = merged.apply(_measurement_key, axis=1).duplicated(keep="last")
    checks: dict[tuple, dict] = {}
    deriv_checks: dict[tuple, dict] = {}
    for record in ordered(verify):
        for name, found in (("verify_gpu.jsonl", checks), ("verify_deriv_gpu.jsonl", deriv_checks)):
            for row in read_jsonl(record.file(name)) if record.has(name) else []:
                found.pop(_verify_key(row), None)  # the latest check goes last
                found[_verify_key(row)] = row | {"source": record.id}
    kept = Counter(row["source"] for row in checks.values())
    deriv_kept = Counter(row["source"] for row in deriv_checks.values())
    return GpuResults(
        measurements=merged,
        runs=runs,
        verification=pd.DataFrame(list(checks.values())),
        deriv_verification=pd.DataFrame(list(deriv_checks.values())),
        verify_runs={
            record.id: json.loads(record.file("verify_device.json").read_text())
            | {"checks": kept[record.id], "deriv_checks": deriv_kept[record.id]}
            for record in ordered(verify)
        },
    )


def _class_of(record: pd.Series) -> QuartetClass:
    """Measured records name the class ``(2,2|1,1)``; error records carry the plan's tag."""
    cls = record.get("cls")
    if isinstance(cls, str):
        return QuartetClass.parse(cls)
    return QuartetClass(*map(int, str(record["class"])))


def throughput_table(measurements: pd.DataFrame, peak: float) -> pd.DataFrame:
    """Every measurement with its FP64 rate as a fraction of the peak measured in the process
    that made it (``run_peak``; ``peak`` where that is unknown); error records keep their
    reason and no numbers."""
    df = measurements.copy()
    for col in THROUGHPUT_COLUMNS:
        if col not in df:
            df[col] = np.nan
    # records from before the compile fallback existed were all built at ptxas's default
    levels = df["ptxas_level"].fillna(PTXAS_DEFAULT_LEVEL)
    df["ptxas_level"] = df["ptxas_level"].where(df["error"].notna(), levels)
    classes = df.apply(_class_of, axis=1)
    df["class"] = classes.map(str)
    df["total"] = classes.map(lambda c: c.total)
    run_peak = df["run_peak"] if "run_peak" in df else pd.Series(np.nan, index=df.index)
    df["fraction_of_peak"] = df["flop_rate"] / run_peak.fillna(peak)
    df["error"] = df["error"].where(df["error"].notna(), None)
    return df[list(THROUGHPUT_COLUMNS)].reset_index(drop=True)


def current(throughput: pd.DataFrame) -> pd.DataFrame:
    """The latest record of every measurement."""
    return throughput[~throughput["superseded"].astype(bool)]


class Rate(NamedTuple):
    qps: float  # quartets per second; NaN when not measured
    error: str | None  # why not
    tier: float
    ptxas_level: float  # of the measured kernel; NaN when not measured


def _rate(rows: pd.DataFrame, variant: str, epilogue: str) -> Rate:
    """The fastest measurement of one variant."""
    sel = rows[(rows["variant"] == variant) & (rows["epilogue"] == epilogue)]
    if sel.empty:
        return Rate(np.nan, "not measured", np.nan, np.nan)
    ok = sel[sel["error"].isna()]
    if ok.empty:
        return Rate(np.nan, str(sel["error"].iloc[0]), sel["tier"].iloc[0], np.nan)
    best = ok.loc[ok["quartets_per_second"].idxmax()]
    return Rate(float(best["quartets_per_second"]), None, best["tier"], best["ptxas_level"])


def ablation_table(
    throughput: pd.DataFrame, quartets: Sequence[str], ablation: str
) -> pd.DataFrame:
    """Per paper quartet (as the paper writes it; measured as its canonical class): full
    against the ablated variant (``store`` epilogue), speedup = full / ablated, both from the
    latest run that measured both."""
    return paired_table(throughput, quartets, "full", ABLATIONS[ablation])


def paired_table(
    throughput: pd.DataFrame, quartets: Sequence[str], base: str, other: str
) -> pd.DataFrame:
    """Per quartet: variant ``base`` against ``other`` (``store`` epilogue), speedup =
    base / other, both from the latest run that measured both (columns named as in the
    ablations: ``full_*`` is ``base``), with the ptxas level of each kernel (below 3 where its
    build fell back, ``library.store.get_kernel``)."""
    rows = []
    for text in quartets:
        cls = QuartetClass.parse(text)
        measured = throughput[throughput["class"] == str(cls.canonical())]
        store = measured[(measured["epilogue"] == "store") & measured["error"].isna()]
        both = [
            rank
            for rank, run in store.groupby("source_rank")
            if {base, other} <= set(run["variant"])
        ]
        # the latest run with both, else each variant's latest record
        measured = measured[measured["source_rank"] == max(both)] if both else current(measured)
        full = _rate(measured, base, "store")
        ablated = _rate(measured, other, "store")
        missing = "; ".join(
            f"{v}: {r.error}" for v, r in ((base, full), (other, ablated)) if r.error
        )
        rows.append(
            {
                "quartet": str(cls),
                "total": cls.total,
                "ablated": other,
                "full_qps": full.qps,
                "ablated_qps": ablated.qps,
                "speedup": full.qps / ablated.qps,
                "full_tier": full.tier,
                "ablated_tier": ablated.tier,
                "full_ptxas_level": full.ptxas_level,
                "ablated_ptxas_level": ablated.ptxas_level,
                "source": measured["source"].iloc[0] if len(measured) else None,
                "missing": missing or None,
            }
        )
    return pd.DataFrame(rows)


def model_tiers(plans: pd.DataFrame) -> pd.Series:
    """The tier the generator picks per class: variant ``full``, spherical (graph records)."""
    full = plans[(plans["variant"] == "full") & plans["spherical"]]
    return full.set_index("class")["tier"].astype(int)


def _output_shape(cls: str) -> tuple[int, ...]:
    return tuple(shell_size(l, True) for l in QuartetClass.parse(cls).ls)


def tier_table(throughput: pd.DataFrame, tiers: pd.Series) -> pd.DataFrame:
    """Per class measured with the J/K epilogue: Tier 1-only and Tier 2-only throughput, each
    as the runtime runs it (Tier 2 with its own slot-bank placement; both with the J/K form
    ``kernel2_form`` picks for the tier), the faster tier (where both ran) and the model's
    tier."""
    latest = current(throughput)
    jk = latest[(latest["epilogue"] == "jk") & (latest["bank_request"] == "auto")]
    rows = []
    for cls, measured in jk.groupby("class", sort=False):
        shape = _output_shape(cls)
        form = kernel2_form(shape)
        form1 = kernel2_form(shape, tier=Tier.REGISTER)
        expected = np.where(measured["variant"] == "tier1-only", form1, form)
        runtime = measured["error"].notna() | (measured["kernel2"] == expected)
        t1, t1_err, _, _ = _rate(measured[runtime], "tier1-only", "jk")
        t2, t2_err, _, _ = _rate(measured[runtime], "tier2-only", "jk")
        both = np.isfinite(t1) and np.isfinite(t2)
        faster = (1 if t1 > t2 else 2) if both else None
        model = int(tiers[cls]) if cls in tiers.index else None
        rows.append(
            {
                "class": cls,
                "total": int(measured["total"].iloc[0]),
                "tier1_qps": t1,
                "tier2_qps": t2,
                "tier1_jk": form1,
                "tier2_kernel2": form,
                "tier1_over_tier2": t1 / t2,
                "faster_tier": faster,
                "model_tier": model,
                "model_is_faster": (faster == model) if both and model is not None else None,
                "tier1_error": t1_err,
                "tier2_error": t2_err,
            }
        )
    table = pd.DataFrame(rows)
    return table.sort_values(["total", "class"], kind="stable").reset_index(drop=True)


def tier2_options_table(throughput: pd.DataFrame) -> pd.DataFrame:
    """Tier 2 with the J/K epilogue measured in several forms, per class: slot bank as the
    generator places it with each Kernel 2 form (generated, block per quartet, thread per
    quartet), and the bank forced into global memory with the runtime's Kernel 2 form."""
    latest = current(throughput)
    t2 = latest[(latest["variant"] == "tier2-only") & (latest["epilogue"] == "jk")]
    t2 = t2[t2["error"].isna()]
    rows = []
    for cls, measured in t2.groupby("class", sort=False):
        auto = measured[measured["bank_request"] == "auto"]
        form = kernel2_form(_output_shape(cls))
        forced = measured[(measured["bank_request"] == "global") & (measured["kernel2"] == form)]
        row = {
            "class": cls,
            "total": int(measured["total"].iloc[0]),
            "slots_per_quartet": int(measured["slots_per_quartet"].iloc[0]),
            "bank": auto["bank"].iloc[0] if len(auto) else None,
        }
        for f in ("generated", "block", "thread"):
            row[f"{f}_qps"] = _best(auto[auto["kernel2"] == f])
        row["runtime_kernel2"] = form
        row["global_bank_qps"] = _best(forced)
        rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    for f in ("block", "thread"):
        table[f"generated_over_{f}"] = table["generated_qps"] / table[f"{f}_qps"]
    runtime = table.apply(lambda r: r[f"{r['runtime_kernel2']}_qps"], axis=1)
    table["shared_over_global"] = np.where(
        table["bank"] == "shared", runtime / table["global_bank_qps"], np.nan
    )
    return table.sort_values(["total", "class"], kind="stable").reset_index(drop=True)


def _best(rows: pd.DataFrame) -> float:
    return float(rows["quartets_per_second"].max()) if len(rows) else np.nan


def tier_choice(tiers: pd.DataFrame) -> tuple[int, int]:
    """(classes where the model's tier is the faster measured one, classes with both measured)."""
    judged = tiers[tiers["model_is_faster"].notna()]
    return int(judged["model_is_faster"].astype(bool).sum()), len(judged)


def tier1_peak_table(throughput: pd.DataFrame, tiers: pd.Series) -> pd.DataFrame:
    """Per class the model puts in Tier 1: the best fraction of the FP64 peak any of its Tier 1
    measurements reached, and which measurement that was."""
    latest = current(throughput)
    ok = latest[(latest["tier"] == 1) & latest["error"].isna()]
    ok = ok[ok["class"].map(lambda c: tiers.get(c) == 1)]
    if ok.empty:
        return pd.DataFrame(columns=["class", "total", "fraction_of_peak", "flop_rate"])
    best = ok.loc[ok.groupby("class")["fraction_of_peak"].idxmax()]
    cols = ["class", "total", "fraction_of_peak", "flop_rate", "quartets_per_second"]
    cols += ["variant", "epilogue", "registers", "spill_store_bytes", "spill_load_bytes"]
    return best[cols].sort_values(["total", "class"]).reset_index(drop=True)


def verified(records: pd.DataFrame) -> pd.Series:
    """Per check row: passed, or the engine closer to the 40-digit value than PySCF and within
    tolerance of it (adjudicated)."""
    right = records.get("engine_right", False)
    return records["passed"].astype(bool) | (right == True)  # noqa: E712


def verification_table(records: pd.DataFrame) -> pd.DataFrame:
    """Per class and output form: records, worst normalized error (and where), relative error,
    adjudications, and whether every record is verified (passed, or the engine closer to the
    40-digit value than PySCF and within tolerance of it)."""
    df = records.copy()
    if "engine_right" not in df:
        df["engine_right"] = np.nan
    df["form"] = np.where(df["cartesian"].astype(bool), "cartesian", "spherical")
    df["verified"] = verified(df)
    rows = []
    for (cls, form), group in df.groupby(["cls", "form"], sort=False):
        worst = group.loc[group["max_normalized_error"].idxmax()]
        adjudicated = group[group["engine_right"].notna()]
        rows.append(
            {
                "class": cls,
                "total": QuartetClass.parse(cls).total,
                "form": form,
                "records": len(group),
                "quartets": int(group["n_quartets"].sum()),
                "worst_normalized_error": worst["max_normalized_error"],
                "worst_at": f"{worst['molecule']} {worst['basis']}",
                "max_rel_error": group["max_rel_error"].max(),
                "adjudicated": len(adjudicated),
                "engine_right": int((adjudicated["engine_right"] == True).sum()),  # noqa: E712
                "verified": bool(group["verified"].all()),
            }
        )
    table = pd.DataFrame(rows)
    order = {f: i for i, f in enumerate(FORMS)}
    table = table.assign(_f=table["form"].map(order)).sort_values(["_f", "total", "class"])
    return table.drop(columns="_f").reset_index(drop=True)


def unverified_classes(table: pd.DataFrame, classes: Sequence[QuartetClass]) -> list[str]:
    """``class form`` for every expected class and form without an all-verified row."""
    verified = set(zip(table.loc[table["verified"], "class"], table.loc[table["verified"], "form"]))
    return [f"{c} {f}" for f in FORMS for c in classes if (str(c), f) not in verified]
