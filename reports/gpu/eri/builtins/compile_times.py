"""Tier 2 build times before and after (per class and output form): the library of 0897ea3
compiled each Tier 2 kernel in two forms (arrival and graph order) with __dmul_rn/__fma_rn/
__dadd_rn; that of e0001b0 compiles one, with the NVVM builtins. Development machine, two
builds at a time in both cases. Writes compile_times.md."""

import json
from pathlib import Path

here = Path(__file__).parent
previous = {(r["class"], r["spherical"]): r["forms"]
            for r in json.loads((here / "previous_tier2_builds.json").read_text())}  # fmt: skip
now = {}
for log in ("build_10.jsonl", "build_11_16.jsonl"):
    for line in (here / log).read_text().splitlines():
        r = json.loads(line)
        if "kernel" in r:
            now[(r["class"], r["spherical"])] = r
lines = [
    "| class | output | before: forms | before: seconds | now: seconds | before / now |",
    "|---|---|---|---|---|---|",
]
ratios = []
for key in sorted(previous, key=lambda k: (sum(map(int, k[0])), k)):
    forms = previous[key]
    if key not in now or len(forms) < 2:
        continue
    before = sum(f["compile_seconds"] for f in forms)
    after = now[key]["compile_seconds"]
    ratios.append(before / after)
    tag, sph = key
    lines.append(
        f"| ({tag[0]},{tag[1]}|{tag[2]},{tag[3]}) | {'spherical' if sph else 'Cartesian'} "
        f"| {len(forms)} | {before:.0f} | {after:.0f} | {before / after:.2f} |"
    )
ratios.sort()
lines.append("")
lines.append(
    f"{len(ratios)} kernels: before / now {ratios[0]:.2f}-{ratios[-1]:.2f}, "
    f"median {ratios[len(ratios) // 2]:.2f}."
)
(here / "compile_times.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines[-1:]))
