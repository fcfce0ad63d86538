"""Tables of the Tier 1 slot study (J/K epilogue, quartets per second):

* slots at total 7-9 (``slots_everywhere_blocks128.jsonl``) against everything in registers
  with spills (``blocks128.jsonl``), both with blocks of 128 threads;
* Tier 1 in blocks of 32 threads (``blocks32_bench.log``, the bench's printed lines) against
  blocks of 128 (``blocks128.jsonl``), same run.

    python compare.py > study.md
"""

import json
import re
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
LINE = re.compile(r"(\(\d,\d\|\d,\d\))\s+tier1-only\s+jk\s+T1\s+([\d.e+]+) q/s")


def tier1(path: Path) -> pd.DataFrame:
    rows = pd.DataFrame([json.loads(line) for line in path.open()])
    rows = rows[(rows.variant == "tier1-only") & (rows.epilogue == "jk")]
    rows = rows[rows.quartets_per_second.notna()].drop_duplicates("cls", keep="last")
    return rows.set_index("cls")


def main() -> None:
    slots = tier1(HERE / "slots_everywhere_blocks128.jsonl")
    base = tier1(HERE / "blocks128.jsonl")
    above = base[base.total > 6].index.intersection(slots.index)
    t = pd.DataFrame(
        {
            "total": base.total[above],
            "slots": slots.slots_per_quartet[above].astype(int),
            "slots_qps": slots.quartets_per_second[above],
            "registers_qps": base.quartets_per_second[above],
        }
    )
    t["slots_over_registers"] = (t.slots_qps / t.registers_qps).round(3)
    print("## Tier 1 above total 6: slots against spills (blocks of 128)\n")
    print(t.sort_values(["total", "slots"]).to_markdown(floatfmt=".3g"))
    r = t.slots_over_registers
    print(f"\n{len(t)} classes: {r.min():.2f}x-{r.max():.2f}x (median {r.median():.2f}x)\n")
    b32 = {m[1]: float(m[2]) for m in map(LINE.match, (HERE / "blocks32_bench.log").open()) if m}
    cls = [c for c in b32 if c in base.index]
    u = pd.DataFrame(
        {"total": base.total[cls], "blocks32_qps": pd.Series(b32)[cls],
         "blocks128_qps": base.quartets_per_second[cls]}
    )  # fmt: skip
    u["ratio"] = (u.blocks32_qps / u.blocks128_qps).round(3)
    print("## Tier 1 up to total 6: blocks of 32 against blocks of 128 threads\n")
    print(u.sort_values("total").to_markdown(floatfmt=".3g"))
    r = u.ratio
    print(f"\n{len(u)} classes: {r.min():.2f}x-{r.max():.2f}x (median {r.median():.2f}x)")


if __name__ == "__main__":
    main()
