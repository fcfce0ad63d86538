"""Static schedule of the sweep's kernels (scripts/sweep_build.py), read from their SASS (no GPU).

    python static.py SWEEP_ROOT BASE_KERNEL_DIR > static.md

Per kernel: Phase 1 (one primitive quartet) and Phase 2 as in ``../sass_mix/sass_mix.py``
(needs ``cuobjdump`` on PATH): FP64 instructions, the stall cycles ptxas encoded (with one
warp per sub-partition they are the cycles the phase takes, less scoreboard waits), those
cycles per FP64 instruction (2 at the FP64 pipe's rate), and shared-memory loads and stores.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sass_mix"))
from sass_mix import FP64, disassemble, phases  # noqa: E402


def stats(part) -> tuple[int, int, int, int]:
    fp = sum(1 for x in part if x.op in FP64)
    lds = sum(1 for x in part if x.op == "LDS")
    sts = sum(1 for x in part if x.op == "STS")
    return fp, sum(x.stall for x in part), lds, sts


def _entry(kernel_dir: Path, cls: str) -> dict:
    entries = [json.loads(p.read_text()) for p in (kernel_dir / "index").glob("*.json")]
    return next(e for e in entries if e["binary"].startswith(f"frcg_{cls}_"))


def main(root: str, base: str) -> None:
    configs = json.loads((Path(root) / "configs.json").read_text())
    # the kernels before the change (BASE_KERNEL_DIR: the previous tree's library) first
    before = [
        dict(cls=c, F="before", slots="-", spill=0)
        for c in dict.fromkeys(x["cls"] for x in configs)
    ]
    configs = before + configs
    print("| class | config | slots | P1 FP64 | P1 cycles | per FP64 | P1 LDS+STS "
          "| P2 FP64 | P2 cycles | per FP64 | P2 LDS+STS |")  # fmt: skip
    print("|---" * 11 + "|")
    for c in configs:
        if c["spill"]:
            continue
        where = Path(base) if c["F"] == "before" else Path(root) / f"k_{c['F']}_{c['P2']}"
        entry = _entry(where, c["cls"])
        body, tail = phases(disassemble(str(where / entry["binary"])))
        f1, c1, l1, s1 = stats(body)
        f2, c2, l2, s2 = stats(tail)
        n = entry["n_slots"]
        print(f"| {c['cls']} | {c['F']} | {n} | {f1} | {c1} | {c1 / f1:.2f} | {l1 + s1} "
              f"| {f2} | {c2} | {c2 / f2:.2f} | {l2 + s2} |")  # fmt: skip


if __name__ == "__main__":
    main(*sys.argv[1:3])
