"""Tables of this record (``python compare.py > study.md``): the product against 3fbaaea's
volatile slots (final/, two rounds each), and the sweep of the two register reserves."""

import json
from pathlib import Path
from statistics import median

HERE = Path(__file__).parent
SM_SHARED, BLOCK_RESERVED, WARP = 228 * 1024, 1024, 32


def fractions(run: str) -> dict[tuple[str, str], float]:
    rows = (json.loads(x) for x in (HERE / "final" / run / "measurements.jsonl").open())
    return {(r["cls"], r["epilogue"]): r["fraction_of_peak"] for r in rows if "error" not in r}


def slots_of_final() -> dict[str, tuple[int, int]]:
    rows = (json.loads(x) for x in (HERE / "final/verify/verify.jsonl").open())
    return {r["cls"]: (r["n_slots"], r["registers"]) for r in rows if r.get("cartesian") is False}


def warps(slots: int, registers: int) -> int:
    by_smem = SM_SHARED // (8 * slots * WARP + BLOCK_RESERVED) if slots else 99
    return min(by_smem, 65536 // (WARP * ((registers + 7) // 8 * 8)))


def main() -> None:
    runs = {r: fractions(r) for r in ("f1", "old1", "f2", "old2")}
    layout = slots_of_final()
    print("## Tier 1 slot reads and denser placements (H200)\n")
    print("Fraction of the FP64 peak, `3fbaaea` (volatile slots) against the product (`dd70012`)")
    print("in two interleaved rounds (`final/`); slots and registers of the product's store")
    print("kernel (`final/verify/`), warps per SM they allow.\n")
    print("| class | epilogue | old | new | new / old | slots | registers | warps |")
    print("|---|---|---|---|---|---|---|---|")
    ratios: dict[str, list[float]] = {"store": [], "jk": []}
    for key in runs["old1"]:
        old = (runs["old1"][key] + runs["old2"][key]) / 2
        new = (runs["f1"][key] + runs["f2"][key]) / 2
        ratios[key[1]].append(new / old)
        slots, regs = layout.get(key[0], (0, 0)) if key[1] == "store" else (None, None)
        shape = f"{slots} | {regs} | {warps(slots, regs)}" if slots else "- | - | -"
        print(f"| {key[0]} | {key[1]} | {old:.3f} | {new:.3f} | {new / old:.2f}x | {shape} |")
    for epi, r in ratios.items():
        print(f"\n{epi}: {min(r):.2f}x-{max(r):.2f}x, median {median(r):.2f}x over {len(r)}.")
    rows = [json.loads(x) for x in (HERE / "sweep/sweep.jsonl").open()]
    configs = sorted({(r["F"], r["P2"]) for r in rows}, key=lambda c: (-c[0], c[1]))
    print("\n## Sweep: Phase 1 fixed reserve F / Phase 2 register values P2 (`sweep/`)\n")
    print(
        "Fraction of the peak (slots per thread, warps per SM); the model's placement is 130/32.\n"
    )
    print("| class | " + " | ".join(f"{f}/{p}" for f, p in configs) + " |")
    print("|---|" + "---|" * len(configs))
    for cls in sorted({r["cls"] for r in rows}):
        got = {(r["F"], r["P2"]): r for r in rows if r["cls"] == cls}
        cells = []
        for c in configs:
            r = got.get(c)
            cells.append(
                f"{r['fraction_of_peak']:.3f} ({r['slots']}, {warps(r['slots'], r['registers'])})"
                if r
                else "spills"
            )
        print(f"| {cls} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
