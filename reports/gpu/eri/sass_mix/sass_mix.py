"""Instruction mix of the Tier 1 store kernels by phase, read from their SASS (no GPU).

    python sass_mix.py [KERNEL_DIR] > sass_mix.md

Builds (or takes from KERNEL_DIR, default a temporary library) the product's Tier 1 store
kernels of the classes below and disassembles them with ``cuobjdump`` (the CUDA toolkit's, or
the ``nvidia-cuda-cuobjdump`` wheel's ``nvidia/cu13/bin``; either on PATH). The primitive
loops are the region between the outer loop's back-edge target and its back-edge; Phase 1 is
the inner loop's body (one primitive quartet), Phase 2 what follows the loops. Per phase:
instructions, FP64 instructions (DFMA/DMUL/DADD), shared loads and stores, global stores with
their address arithmetic (IMAD other than the IMAD.MOV moves, LDC), the graph FLOPs per FP64
instruction (an FP64 warp instruction holds a sub-partition's FP64 pipe for two cycles,
whatever its FLOPs), and the stall cycles ptxas encoded in the control bits (the static
schedule, without scoreboard waits).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass

from fusionrcg.angmom import QuartetClass
from fusionrcg.build.library import get_kernel

# the three below 30% of the FP64 peak and three above it with slots, at the benchmark's
# mean primitive quartets per quartet (reports/eri/gpu/tier1_peak.md)
CLASSES = {
    (2, 2, 1, 1): 2.25,
    (2, 1, 2, 1): 2.25,
    (3, 1, 1, 1): 2.13,
    (2, 2, 2, 0): 3.57,
    (3, 0, 2, 1): 3.60,
    (3, 0, 3, 0): 7.85,
}
FP64 = {"DFMA", "DMUL", "DADD"}
LINE = re.compile(r"\s+/\*([0-9a-f]+)\*/\s+(.*?);\s+/\* (0x[0-9a-f]+) \*/")
CONTROL = re.compile(r"/\* (0x[0-9a-f]+) \*/")


@dataclass(frozen=True)
class Instruction:
    address: int
    op: str  # opcode without modifiers
    mnemonic: str  # with them
    text: str
    stall: int  # cycles before the warp's next issue, from the control bits


def disassemble(cubin: str) -> list[Instruction]:
    lines = subprocess.run(
        ["cuobjdump", "-sass", cubin], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    out = []
    for i, line in enumerate(lines):
        m = LINE.match(line)
        if m:
            control = int(CONTROL.search(lines[i + 1]).group(1), 16)
            text = m.group(2).strip()
            mnemonic = re.sub(r"^@!?U?P\w+\s+", "", text).split()[0]
            op = mnemonic.split(".")[0]
            out.append(Instruction(int(m.group(1), 16), op, mnemonic, text, (control >> 41) & 0xF))
    return out


def phases(code: list[Instruction]) -> tuple[list[Instruction], list[Instruction]]:
    """Phase 1's loop body (the innermost backward branch's range) and Phase 2 (after the
    outermost loop, to the first EXIT)."""
    back = []
    for ins in code:
        target = re.search(r"BRA\s+(?:`\()?0x([0-9a-f]+)", ins.text)
        if ins.op == "BRA" and target and int(target.group(1), 16) < ins.address:
            back.append((int(target.group(1), 16), ins.address))
    inner, outer = max(back), min(back)
    body = [x for x in code if inner[0] <= x.address <= inner[1]]
    after = [x for x in code if x.address > outer[1]]
    end = next(i for i, x in enumerate(after) if x.op == "EXIT")
    return body, after[: end + 1]


def row(part: list[Instruction], flops: float) -> dict[str, float]:
    ops = Counter(x.op for x in part)
    fp = sum(ops[o] for o in FP64)
    return {
        "instructions": len(part),
        "fp64": fp,
        "LDS": ops["LDS"],
        "STS": ops["STS"],
        "STG": ops["STG"],
        # IMAD.MOV is a register move that ptxas issues on the integer pipe
        "IMAD+LDC": sum(
            1
            for x in part
            if x.op == "LDC"
            or x.mnemonic.startswith("IMAD")
            and not x.mnemonic.startswith("IMAD.MOV")
        ),  # fmt: skip
        "flops/fp64": flops / fp if fp else 0.0,
        "static cycles": sum(x.stall for x in part),
    }


def main() -> None:
    directory = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
    print("| class | phase | instructions | FP64 | LDS | STS | STG | IMAD+LDC | FLOPs per FP64 "
          "instruction | static stall cycles | share of a quartet's instructions |")  # fmt: skip
    print("|---" * 11 + "|")
    for ls, prims in CLASSES.items():
        kernel = get_kernel(QuartetClass(*ls), "tier1-only", directory=directory)
        body, tail = phases(disassemble(str(kernel.binary)))
        f = kernel.flops
        per_prim = f.vrr_per_primitive + f.accumulate_per_primitive
        rows = [("1 (per primitive quartet)", row(body, per_prim), prims),
                ("2", row(tail, f.hrr_per_contracted), 1.0)]  # fmt: skip
        total = sum(r["instructions"] * n for _, r, n in rows)
        for name, r, n in rows:
            share = r["instructions"] * n / total
            print(f"| {QuartetClass(*ls)} | {name} | {r['instructions']} | {r['fp64']} | "
                  f"{r['LDS']} | {r['STS']} | {r['STG']} | {r['IMAD+LDC']} | "
                  f"{r['flops/fp64']:.2f} | {r['static cycles']} | {share:.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
