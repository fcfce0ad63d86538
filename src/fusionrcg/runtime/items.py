"""The work items of one kernel launch, as the J/K engine builds them on the executor's side.

Item ``q`` is one canonical segment quartet (or a chunk of its primitive pairs), its weight, and
the rows of the primitive-pair table its bra and its ket loop over: ``ranges[2q]`` and
``ranges[2q + 1]`` (first row, row count). The kernels read them through ``qpair[q] = (2q, 2q +
1)``. The arrays are NumPy arrays on the CPU and CuPy arrays on the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ItemBatch:
    quartets: Any  # (n, 4) int32: segment indices a, b, c, d
    scales: Any  # (n,) float64: the symmetry weight of the quartet
    ranges: Any  # (2n, 2) int32: bra and ket primitive-pair rows of each item

    @property
    def size(self) -> int:
        return int(self.scales.shape[0])
