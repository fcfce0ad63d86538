"""Array operations of the J/K engine on the host (NumPy) or the device (CuPy).

The engine's screening and work lists are written once against ``xp`` (``numpy`` or ``cupy``);
what the two libraries do not share is here: the block maxima of the densities and moving
arrays between host and device.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_BLOCK_ABSMAX = r"""
// Largest |D| of each (segment, segment) block over the n_dm densities, and over the transposed
// block too: out[sa * nseg + sb] (both orders are written, so the result is symmetric).
extern "C" __global__ void frcg_block_absmax(
    const int nseg, const int nao, const int n_dm, const int* __restrict__ seg_ao,
    const int* __restrict__ seg_size, const double* __restrict__ dm, float* __restrict__ out)
{
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (t >= (long long)nseg * nseg) return;
    const int sa = (int)(t / nseg), sb = (int)(t % nseg);
    if (sb > sa) return;
    const int oa = seg_ao[sa], na = seg_size[sa], ob = seg_ao[sb], nb = seg_size[sb];
    double m = 0.0;
    for (int k = 0; k < n_dm; ++k) {
        const double* d = dm + (size_t)k * nao * nao;
        for (int i = 0; i < na; ++i)
            for (int j = 0; j < nb; ++j) {
                m = fmax(m, fabs(d[(size_t)(oa + i) * nao + ob + j]));
                m = fmax(m, fabs(d[(size_t)(ob + j) * nao + oa + i]));
            }
    }
    out[(size_t)sa * nseg + sb] = (float)m;
    out[(size_t)sb * nseg + sa] = (float)m;
}
"""


class HostArrays:
    """NumPy: the CPU backend."""

    device = False

    def __init__(self) -> None:
        self.xp = np

    def asarray(self, a, dtype=None):
        return np.asarray(a, dtype=dtype)

    def to_host(self, a) -> np.ndarray:
        return np.asarray(a)

    def add_at(self, target, index, values) -> None:
        """target[index] += values, repeated indices adding up (``target`` flat)."""
        np.add.at(target, index, values)

    def block_absmax(self, dm, seg_ao: np.ndarray, seg_size: np.ndarray) -> np.ndarray:
        """(nseg, nseg) float32: the largest |D[i, j]| or |D[j, i]| of each segment block over
        the densities ``dm`` (n_dm, nao, nao); segments cover the AOs in order."""
        a = np.abs(np.asarray(dm)).max(axis=0)
        a = np.maximum(a, a.T)
        starts = np.asarray(seg_ao, dtype=np.intp)
        rows = np.maximum.reduceat(a, starts, axis=0)
        return np.maximum.reduceat(rows, starts, axis=1).astype(np.float32)


class DeviceArrays:
    """CuPy: the GPU backend."""

    device = True

    def __init__(self, cupy: Any) -> None:
        self.xp = cupy
        self._absmax = cupy.RawKernel(_BLOCK_ABSMAX, "frcg_block_absmax")

    def asarray(self, a, dtype=None):
        return self.xp.asarray(a, dtype=dtype)

    def to_host(self, a) -> np.ndarray:
        return self.xp.asnumpy(a)

    def add_at(self, target, index, values) -> None:
        """target[index] += values, repeated indices adding up (``target`` flat)."""
        import cupyx

        cupyx.scatter_add(target, index, values)

    def block_absmax(self, dm, seg_ao, seg_size):
        cp = self.xp
        nseg = int(seg_ao.shape[0])
        nao = int(dm.shape[-1])
        out = cp.empty((nseg, nseg), dtype=cp.float32)
        total = nseg * nseg
        threads = 256
        self._absmax(
            ((total + threads - 1) // threads,),
            (threads,),
            (np.int32(nseg), np.int32(nao), np.int32(dm.shape[0]), seg_ao, seg_size, dm, out),
        )
        return out


def expand(xp, counts):
    """For ragged runs of ``counts[i]`` elements each: the run of every element and its index
    within the run (both int64), without a loop over the runs."""
    counts = xp.asarray(counts, dtype=xp.int64)
    ends = xp.cumsum(counts)
    total = int(ends[-1]) if counts.shape[0] else 0
    t = xp.arange(total, dtype=xp.int64)
    owner = xp.searchsorted(ends, t, side="right")
    return owner, t - (ends - counts)[owner]
