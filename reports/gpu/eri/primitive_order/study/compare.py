"""Tables of the launch-order and Tier 1 J/K-form studies (quartets per second):

* quartets grouped by primitive-count pattern (``primitive.jsonl``) against the order they
  were sampled in (``given.jsonl``), same process, same kernels: Tier 1 (tier1-only) with the
  store epilogue on the paper's quartets and the fused J/K epilogue on the classes of total 4-6;
* Tier 1 J/K in its three forms (fused atomic epilogue; store and Kernel 2 as a block or a
  thread per quartet) against Tier 2 as the runtime runs it, every class up to total 9
  (``../measurements.jsonl``).

    python compare.py > study.md
"""

import json
from math import prod
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent


def records(path: Path) -> pd.DataFrame:
    rows = pd.DataFrame([json.loads(line) for line in path.open()])
    rows = rows[rows.quartets_per_second.notna()]
    rows["kernel2"] = rows["kernel2"].fillna("")
    return rows


def order_table() -> pd.DataFrame:
    key = ["cls", "variant", "epilogue"]
    grouped = records(HERE / "primitive.jsonl").set_index(key)
    given = records(HERE / "given.jsonl").set_index(key)
    both = given.index.intersection(grouped.index)
    t = pd.DataFrame(
        {
            "total": given.total[both],
            "primitive_quartets": given.mean_primitive_quartets[both].round(1),
            "given_qps": given.quartets_per_second[both],
            "grouped_qps": grouped.quartets_per_second[both],
            "given_peak": (100 * given.fraction_of_peak[both]).round(1),
            "grouped_peak": (100 * grouped.fraction_of_peak[both]).round(1),
        }
    )
    t["speedup"] = (t.grouped_qps / t.given_qps).round(2)
    return t.reset_index().sort_values(["epilogue", "total", "cls"])


def n_integrals(cls: str) -> int:
    ls = [int(c) for c in cls if c.isdigit()]
    return prod(2 * l + 1 for l in ls)


def jk_form_table() -> pd.DataFrame:
    rows = records(HERE.parent / "measurements.jsonl")
    jk = rows[rows.epilogue == "jk"]
    t1 = jk[jk.variant == "tier1-only"].pivot_table(
        index="cls", columns="kernel2", values="quartets_per_second"
    )
    t2 = jk[jk.variant == "tier2-only"].set_index("cls")
    t = pd.DataFrame(
        {
            "integrals": [n_integrals(c) for c in t1.index],
            "fused_qps": t1["fused"],
            "block_qps": t1["block"],
            "thread_qps": t1["thread"],
            "tier2_qps": t2.quartets_per_second[t1.index],
            "tier2_kernel2": t2.kernel2[t1.index],
        },
        index=t1.index,
    )
    t["block_over_fused"] = (t.block_qps / t.fused_qps).round(2)
    return t.sort_values(["integrals"])


def main() -> None:
    t = order_table()
    print("## Launch order: grouped by primitive counts against as sampled (Tier 1)\n")
    print(t.to_markdown(index=False, floatfmt=".3g"))
    for epi, part in t.groupby("epilogue"):
        s = part.speedup
        print(
            f"\n{epi}: {len(part)} classes, {s.min():.2f}x-{s.max():.2f}x "
            f"(median {s.median():.2f}x)"
        )
    f = jk_form_table()
    print("\n## Tier 1 J/K: fused epilogue against the store kernel and Kernel 2\n")
    print(f.to_markdown(floatfmt=".3g"))
    fused = f.fused_qps >= f.block_qps
    small = f.integrals <= 63
    print(
        f"\nUp to 63 integrals the fused epilogue is faster on {int(fused[small].sum())} of "
        f"{int(small.sum())} classes; above, the block form on {int((~fused[~small]).sum())} of "
        f"{int((~small).sum())} (fused faster: {', '.join(f[fused & ~small].index)})."
    )


if __name__ == "__main__":
    main()
