"""Where the GPU backend runs: CuPy on a CUDA GPU, or the host emulation of the kernels.

A device gives the array module, the compiled kernels, an AO evaluator in the layout
(comp, nao, npoints), the free memory and a synchronization point. An evaluator also takes an
``AOSubset``: the whole shells holding some of its rows, evaluated alone (rows in the subset's
order), so that a grid batch computes only the AOs its kept blocks need.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cpu import eval_ao_cols, shells_holding
from ..errors import BackendUnavailable
from . import kernels as kd


@dataclass(frozen=True)
class AOSubset:
    rows: np.ndarray  # evaluator rows computed, in output order (whole shells)
    position: np.ndarray  # evaluator row -> output row of the subset, -1 if not computed
    screening: tuple | None = None  # the evaluator's own description of the shells

    def output_rows(self, evaluator_rows: np.ndarray) -> np.ndarray:
        """The row of the subset's output holding each of ``evaluator_rows``, -1 where it is
        -1 (padding) or not evaluated."""
        return np.where(evaluator_rows >= 0, self.position[np.maximum(evaluator_rows, 0)], -1)


def _subset_rows(ao_loc: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shells (bool mask over ao_loc's shells) holding the rows ``wanted``, and their rows."""
    mask = shells_holding(ao_loc, wanted)
    rows = np.concatenate(
        [np.arange(ao_loc[s], ao_loc[s + 1]) for s in np.flatnonzero(mask)] or [np.zeros(0, int)]
    )
    return mask, rows


def _positions(rows: np.ndarray, nao: int) -> np.ndarray:
    position = np.full(nao, -1, dtype=np.int32)
    position[rows] = np.arange(len(rows), dtype=np.int32)
    return position


class PySCFAO:
    """PySCF's AO values as (comp, nao, npoints) in PySCF's AO order."""

    def __init__(self, mol):
        self.mol = mol

    def rows(self, order: np.ndarray) -> np.ndarray:
        """Rows of the evaluator's output holding the PySCF AOs ``order``."""
        return np.asarray(order)

    def subset(self, wanted: np.ndarray) -> AOSubset:
        _, rows = _subset_rows(self.mol.ao_loc_nr(), wanted)
        return AOSubset(rows, _positions(rows, self.mol.nao_nr()))

    def __call__(self, coords, deriv: int, subset: AOSubset | None = None):
        ao = eval_ao_cols(self.mol, coords, deriv)
        return ao if subset is None else np.ascontiguousarray(ao[:, subset.rows])


class GPU4PySCFAO:
    """GPU4PySCF's AO evaluator on its sorted molecule (no dense re-contraction), with the map
    from its row order to PySCF's, checked against PySCF's values at construction."""

    def __init__(self, mol):
        import cupy
        from gpu4pyscf.dft import numint as gni

        self.mol = mol
        try:
            opt = gni.NumInt().build(mol, None).gdftopt
        except Exception:  # an older or newer NumInt.build signature
            opt = gni._GDFTOpt.from_mol(mol)
        self._gni, self.opt, self.sorted_mol = gni, opt, opt._sorted_mol
        idx = np.asarray(cupy.asnumpy(cupy.asarray(opt._ao_idx)), dtype=np.int64)
        nao = mol.nao_nr()
        if len(idx) != nao or not np.array_equal(np.sort(idx), np.arange(nao)):
            raise BackendUnavailable("GPU4PySCF's sorted AO index is not a permutation of the AOs")
        self.inverse = np.argsort(idx)  # PySCF AO -> row of GPU4PySCF's output
        self._check(cupy)

    def rows(self, order: np.ndarray) -> np.ndarray:
        return self.inverse[np.asarray(order)]

    def subset(self, wanted: np.ndarray) -> AOSubset:
        """The shells of the sorted molecule holding rows ``wanted``, in the form of
        GPU4PySCF's grid screening (shell list, AO offsets, offsets per contraction group)."""
        import cupy

        ao_loc = np.asarray(self.sorted_mol.ao_loc_nr())
        mask, rows = _subset_rows(ao_loc, wanted)
        shells = np.flatnonzero(mask).astype(np.int32)
        ao_loc_slice = np.append(0, np.cumsum(np.diff(ao_loc)[shells])).astype(np.int32)
        before = np.cumsum(mask, dtype=np.int32)  # selected shells up to and including each
        groups = np.asarray(self.opt.l_ctr_offsets)
        ctr_offsets_slice = np.ascontiguousarray(before[groups - 1], dtype=np.int32)
        ctr_offsets_slice[0] = 0
        screening = (int(len(rows)), cupy.asarray(shells), cupy.asarray(ao_loc_slice),
                     ctr_offsets_slice)  # fmt: skip
        return AOSubset(rows, _positions(rows, int(ao_loc[-1])), screening)

    def __call__(self, coords, deriv: int, subset: AOSubset | None = None):
        ao = self._gni.eval_ao(
            self.sorted_mol, coords, deriv=deriv, gdftopt=self.opt, transpose=False,
            screening_info=None if subset is None else subset.screening,
        )  # fmt: skip
        return ao[None] if deriv == 0 else ao

    def _check(self, cupy) -> None:
        pts = (self.mol.atom_coords()[:16, None, :] + np.array([[0.3, -0.2, 0.5]])).reshape(-1, 3)
        ref = eval_ao_cols(self.mol, pts, 1)
        full = cupy.asnumpy(self(cupy.asarray(pts), 1))
        err = float(np.abs(full[:, self.inverse] - ref).max())
        # every third row's shell evaluated alone must give the same values
        sub = self.subset(np.arange(0, full.shape[1], 3))
        part = cupy.asnumpy(self(cupy.asarray(pts), 1, sub))
        err = max(err, float(np.abs(part - full[:, sub.rows]).max()))
        if err > 1e-10 * max(1.0, float(np.abs(ref).max())):
            raise BackendUnavailable(
                f"GPU4PySCF's AO values differ from PySCF's by {err:.2e}: its AO order or "
                "evaluator interface is not the one this backend was written for"
            )


class CupyDevice:
    """A CUDA GPU through CuPy, AO values from GPU4PySCF."""

    def __init__(self):
        import cupy

        self.xp = cupy

    def kernels(self, d: int, mma: str) -> dict:
        return {name: _CupyLaunch(k, smem) for name, (k, smem) in kd.module(d, mma).items()}

    def ao_evaluator(self, mol):
        return GPU4PySCFAO(mol)

    def fp64_tensor_cores(self) -> bool:
        """FP64 MMA (DMMA) from compute capability 8.0 on."""
        return int(self.xp.cuda.Device().compute_capability) >= 80  # CuPy gives "90" for 9.0

    def free_bytes(self) -> int:
        free, _ = self.xp.cuda.runtime.memGetInfo()
        return int(free + self.xp.get_default_memory_pool().free_bytes())

    def synchronize(self) -> None:
        self.xp.cuda.Device().synchronize()


class _CupyLaunch:
    def __init__(self, kernel, smem: int):
        self.kernel, self.smem = kernel, smem

    def __call__(self, grid: int, args) -> None:
        if grid > 0:
            self.kernel((grid,), (kd.NT,), tuple(args), shared_mem=self.smem)


class EmulatedDevice:
    """The kernels built for the host (``emulate.py``), NumPy arrays, PySCF's AO values."""

    xp = np

    def __init__(self, memory_bytes: float = 2e9, tensor_cores: bool = False):
        self.memory_bytes = memory_bytes
        self.tensor_cores = tensor_cores  # what "auto" picks: the emulation runs either mode

    def kernels(self, d: int, mma: str) -> dict:
        from .emulate import EmulatedKernel, library, symbol

        lib = library(d, mma)
        return {
            name: EmulatedKernel(getattr(lib, symbol(name)))
            for name in kd.names(d, kd.MMA_CODES[mma])
        }

    def ao_evaluator(self, mol):
        return PySCFAO(mol)

    def fp64_tensor_cores(self) -> bool:
        return self.tensor_cores

    def free_bytes(self) -> int:
        return int(self.memory_bytes)

    def synchronize(self) -> None:
        pass
