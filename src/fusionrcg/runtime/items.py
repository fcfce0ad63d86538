"""The work items of one kernel launch, as the J/K engine builds them on the executor's side.

Item ``q`` is one canonical segment quartet (or a chunk of its primitive pairs), its weight, and
the rows of the primitive-pair table its bra and its ket loop over: ``ranges[2q]`` and
``ranges[2q + 1]`` (first row, row count). The kernels read them through ``qpair[q] = (2q, 2q +
1)``. The arrays are NumPy arrays on the CPU and CuPy arrays on the GPU.
"""

from __future__ import annotations

from collections.abc import Iterator
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

    def slice(self, lo: int, hi: int) -> ItemBatch:
        """Items [lo, hi) (views of these arrays)."""
        return ItemBatch(self.quartets[lo:hi], self.scales[lo:hi], self.ranges[2 * lo : 2 * hi])

    def parts(self, per_item_bytes: int, budget: int) -> Iterator[ItemBatch]:
        """The batch in consecutive parts whose buffers (``per_item_bytes`` per item) fit
        ``budget`` (a part holds one item at least)."""
        n = self.size
        step = n if per_item_bytes == 0 else max(1, budget // per_item_bytes)
        if 0 < n <= step:  # one part: the batch itself, no new views
            yield self
            return
        for lo in range(0, n, step):
            yield self.slice(lo, min(n, lo + step))
