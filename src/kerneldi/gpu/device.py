"""Where the GPU backend runs: CuPy on a CUDA GPU, or the host emulation of the kernels.

A device gives the array module, the compiled kernels, an AO evaluator in the layout
(comp, nao, npoints), the free memory and a synchronization point.
"""

from __future__ import annotations

import numpy as np

from ..cpu import eval_ao_cols
from ..errors import BackendUnavailable
from . import kernels as kd


class PySCFAO:
    """PySCF's AO values as (comp, nao, npoints) in PySCF's AO order."""

    def __init__(self, mol):
        self.mol = mol

    def rows(self, order: np.ndarray) -> np.ndarray:
        """Rows of the evaluator's output holding the PySCF AOs ``order``."""
        return np.asarray(order)

    def __call__(self, coords, deriv: int):
        return eval_ao_cols(self.mol, coords, deriv)


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

    def __call__(self, coords, deriv: int):
        ao = self._gni.eval_ao(
            self.sorted_mol, coords, deriv=deriv, gdftopt=self.opt, transpose=False
        )
        return ao[None] if deriv == 0 else ao

    def _check(self, cupy) -> None:
        pts = (self.mol.atom_coords()[:16, None, :] + np.array([[0.3, -0.2, 0.5]])).reshape(-1, 3)
        ref = eval_ao_cols(self.mol, pts, 1)
        got = cupy.asnumpy(self(cupy.asarray(pts), 1))[:, self.inverse]
        err = float(np.abs(got - ref).max())
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

    def __init__(self, memory_bytes: float = 2e9):
        self.memory_bytes = memory_bytes

    def kernels(self, d: int, mma: str) -> dict:
        from .emulate import EmulatedKernel, library, symbol

        lib = library(d, mma)
        return {
            name: EmulatedKernel(getattr(lib, symbol(name)))
            for name in kd.names(d, kd.MMA_CODES[mma])
        }

    def ao_evaluator(self, mol):
        return PySCFAO(mol)

    def free_bytes(self) -> int:
        return int(self.memory_bytes)

    def synchronize(self) -> None:
        pass
