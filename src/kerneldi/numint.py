"""Drop-in NumInt: ``mf._numint = kerneldi.NumInt(backend="cpu" | "gpu")``.

The returned object is PySCF's NumInt (CPU) or GPU4PySCF's NumInt (GPU) with ``nr_rks`` and
``nr_uks`` replaced by the block-sparse engine; everything else (libxc, hybrid coefficients,
grid pruning, response kernels) is inherited. The engine's block structure is built once per
geometry and grid and reused while they stay the same, so an SCF pays for it once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Iterator

import numpy as np
from pyscf.dft import numint as pyscf_numint

from . import integrate
from .errors import BackendUnavailable, DensityMatrixError, FunctionalError, GridError, InputError
from .forms import occupied_orbitals
from .integrate import AO_DERIV
from .layout import make_layout
from .settings import Settings

ENGINES = ("block", "dense")
# settings an engine applies to the block structure it has built
KEEPS_BLOCKS = {
    "t_d",
    "mma",
    "density_form",
    "orbital_rotation",
    "tiling",
    "staging",
    "potential_tiles",
}
_LAPLACIAN_MGGA = ("CC06", "CS", "BR89", "MK00")
# hermi=1 with a GGA or meta-GGA: max |D - D^T| / max(1, max |D|) up to which D counts as the
# symmetric matrix the caller declared (the rounding of C n C^T is far below it)
SYMMETRY_TOL = 1e-12


def _is_device_array(a) -> bool:
    """CuPy arrays and their subclasses (GPU4PySCF tags density matrices with one)."""
    return hasattr(a, "__cuda_array_interface__")


def _host(a) -> np.ndarray:
    return a.get() if _is_device_array(a) else np.asarray(a)


class KerneLDIMixin:
    """``nr_rks``/``nr_uks`` through a KerneLDI engine; mixed into a PySCF-API NumInt."""

    _kerneldi_backend = "cpu"
    _keys = {
        "settings",
        "engine_kind",
        "layout_seconds",
        "orders_reused",
        "grid_order_reused",
        "task_selection",
    }
    # the gradient's engine: AO derivatives one order above the energy's, same layout rules
    _grad_engine = None
    _grad_engine_key = None

    def __init__(self, settings: Settings | None = None, engine: str = "block", **options):
        super().__init__()
        if engine not in ENGINES:
            raise InputError(f"engine must be one of {ENGINES}, got {engine!r}")
        if settings is not None and options:
            raise InputError("pass either settings or keyword options, not both")
        self.settings = settings if settings is not None else Settings(**options)
        self.engine_kind = engine
        self._engine = None
        self._engine_key = None
        self.layout_seconds = 0.0
        self.orders_reused = False  # the last geometry's basis order kept
        self.grid_order_reused = False  # and its grid order
        self.task_selection: tuple[int, ...] | None = None

    # -- engine cache -----------------------------------------------------------------------
    def _new_engine(self, mol, layout, xctype: str, deriv: int | None = None):
        """An engine holding AO derivatives up to ``deriv`` (default: the energy's order)."""
        from . import cpu

        return cpu.make_engine(self.engine_kind, mol, layout, self.settings, xctype, deriv)

    def _grid_arrays(self, mol, grids):
        if grids.coords is None:
            grids.build(with_non0tab=True)
        if grids.weights is None or grids.size == 0:
            raise GridError("the grid has no points")
        return grids.coords, grids.weights, getattr(grids, "atm_idx", None)

    def _engine_key_of(self, mol, grids):
        coords, weights, _ = self._grid_arrays(mol, grids)
        return (
            _mol_fingerprint(mol),
            id(coords),
            id(weights),
            tuple(coords.shape),
            float(weights.sum()),
            float(coords[:: max(1, len(coords) // 97)].sum()),
        )

    def get_engine(self, mol, grids, xctype: str):
        """The engine of this geometry and grid, built on first use and reused after."""
        coords, weights, atm_idx = self._grid_arrays(mol, grids)
        key = self._engine_key_of(mol, grids)
        eng = self._engine
        if eng is None or self._engine_key != key or eng.deriv < AO_DERIV[xctype]:
            previous = self._engine.layout if self._engine is not None else None
            self._engine = None  # release the old blocks before building new ones
            t0 = time.perf_counter()
            near = previous if self._near(mol, previous) else None
            basis_perm = None if near is None else near.basis_perm
            layout = self._layout(mol, coords, weights, atm_idx, basis_perm, near)
            self.layout_seconds = time.perf_counter() - t0
            self.orders_reused = near is not None
            self.grid_order_reused = near is not None and layout.grid_perm is near.grid_perm
            eng = self._engine = self._new_engine(mol, layout, xctype)
            self._engine_key = key
            self._orders_of = (_basis_fingerprint(mol), mol.atom_coords())
        return eng

    def _layout(self, mol, coords, weights, atm_idx, basis_perm, previous=None):
        """The block layout of this grid under the settings (from host copies of its arrays,
        or from its device arrays with ``grid_order_on_device`` on the GPU backend), keeping
        ``basis_perm`` and, where it still orders this grid, ``previous``'s grid order."""
        if self.settings.grid_order_on_device and self._kerneldi_backend == "gpu":
            return make_layout(mol, coords, weights, atm_idx, self.settings, basis_perm)
        atoms = None if atm_idx is None else _host(atm_idx)
        return make_layout(mol, _host(coords), _host(weights), atoms, self.settings, basis_perm,
                           previous)  # fmt: skip

    def get_grad_engine(self, mol, grids, xctype: str):
        """The gradient's engine of this geometry and grid (AO derivatives one order above the
        energy's, the same layout rules and thresholds), built on first use, reused after; it
        takes the energy engine's basis order where that one is of the same geometry."""
        key = self._engine_key_of(mol, grids)
        deriv = AO_DERIV[xctype] + 1
        eng = self._grad_engine
        if eng is None or self._grad_engine_key != key or eng.deriv < deriv:
            self._grad_engine = None
            coords, weights, atm_idx = self._grid_arrays(mol, grids)
            energy = self.energy_layout_of(mol)
            basis_perm = None if energy is None else energy.basis_perm
            layout = self._layout(mol, coords, weights, atm_idx, basis_perm, energy)
            eng = self._grad_engine = self._new_engine(mol, layout, xctype, deriv)
            self._grad_engine_key = key
        return eng

    def energy_layout_of(self, mol):
        """The energy engine's layout where it was built for this geometry, else None."""
        if self._engine is None or self._engine_key is None:
            return None
        if self._engine_key[0] != _mol_fingerprint(mol):
            return None
        return self._engine.layout

    def basis_order_of(self, mol):
        """The energy engine's basis order where it was built for this geometry, else None."""
        layout = self.energy_layout_of(mol)
        return None if layout is None else layout.basis_perm

    def _near(self, mol, previous) -> bool:
        """Whether ``previous`` (the last geometry's layout) is of the same molecule and basis
        with every atom moved less than ``settings.reuse_orders_bohr`` (an MD or optimization
        step: the functions' reach on the grid hardly changes, and the grid's atom-centred
        points moved with their atoms): its basis order is kept, and its grid order where
        ``layout.kept_grid_order`` finds that it still orders the new grid."""
        limit = self.settings.reuse_orders_bohr
        if previous is None or limit <= 0 or getattr(self, "_orders_of", None) is None:
            return False
        basis, atoms = self._orders_of
        if basis != _basis_fingerprint(mol) or atoms.shape != mol.atom_coords().shape:
            return False
        return bool(np.abs(mol.atom_coords() - atoms).max() < limit)

    # -- grid tasks (``tasks.py``): one integration spread over workers ---------------------
    def xc_tasks(self, mol, grids, xc_code) -> list:
        """The grid tasks (``kerneldi.tasks.XcTask``) of the block engine of this molecule,
        grid and functional, in the engine's order; ``select_tasks`` takes their indices."""
        eng = self.get_engine(mol, grids, self.checked_xctype(xc_code))
        if not hasattr(eng, "tasks"):
            raise InputError(f"the {self.engine_kind!r} engine does not split into grid tasks")
        return eng.tasks()

    def select_tasks(self, tasks) -> None:
        """From now on ``nr_rks``/``nr_uks`` integrate only the grid points of ``tasks``
        (indices into ``xc_tasks``): nelec, Exc and Vxc of a partition of the tasks add up to
        the whole grid's. A collection holds for every later call; an iterator (a scheduler
        handing tasks out) is drawn from by the next call, which must integrate one density
        (one set, both spins of UKS); None integrates every task again."""
        if tasks is None or isinstance(tasks, Iterator):
            self.task_selection = tasks
        else:
            self.task_selection = tuple(sorted({int(t) for t in tasks}))

    def _one_set_when_drawn(self, nset: int) -> None:
        if isinstance(self.task_selection, Iterator) and nset > 1:
            raise InputError(
                f"{nset} density sets with tasks drawn from an iterator: an iterator serves one "
                "integration; select a collection of tasks instead"
            )

    def _engine_for(self, mol, grids, xctype: str):
        eng = self.get_engine(mol, grids, xctype)
        if self.task_selection is not None or getattr(eng, "selected", None) is not None:
            if not hasattr(eng, "select"):
                raise InputError(f"the {self.engine_kind!r} engine does not split into tasks")
            eng.select(self.task_selection)
        return eng

    def reset(self, *args, **kwargs):
        self._engine = None
        self._engine_key = None
        self._grad_engine = None
        self._grad_engine_key = None
        parent = getattr(super(), "reset", None)
        return parent(*args, **kwargs) if parent is not None else self

    def stats(self) -> dict:
        """Block counts and fractions of the current engine (after at least one call)."""
        if self._engine is None:
            return {}
        orders = {"basis_order": self.settings.basis_order, "grid_order": self.settings.grid_order}
        return {"layout_seconds": self.layout_seconds, "orders_reused": self.orders_reused,
                "grid_order_reused": self.grid_order_reused,
                **orders, **self._engine.stats()}  # fmt: skip

    def grad_stats(self) -> dict:
        """Block counts and pair fractions of the gradient's engine (after a gradient)."""
        return {} if self._grad_engine is None else self._grad_engine.stats()

    def phase_seconds(self, call) -> dict[str, float]:
        """Seconds per engine phase (AO values, density, potential) of ``call()`` and of the
        whole call, timed with device synchronizations around each phase (so slightly slower
        than an untimed call); empty for engines without phase timers."""
        timer = getattr(self._engine, "timer", None)
        if timer is None:
            call()
            return {}
        timer.enabled, timer.seconds = True, {}
        try:
            t0 = time.perf_counter()
            call()
            timer.device.synchronize()
            total = time.perf_counter() - t0
        finally:
            timer.enabled = False
        return dict(timer.seconds) | {"call": total}

    def update_settings(self, **changes) -> None:
        """New settings; the pair threshold, the GPU product mode and tiling, the density form
        and the orbital rotation keep the block structure already built, any other change
        rebuilds it on the next call."""
        settings = dataclasses.replace(self.settings, **changes)
        self._grad_engine = None  # rebuilt on the next gradient
        self._grad_engine_key = None
        eng = self._engine
        if eng is not None and set(changes) <= KEEPS_BLOCKS:
            if hasattr(eng, "apply_settings"):  # the GPU's: checks (and raises) first
                eng.apply_settings(settings)
            else:
                eng.settings = dataclasses.replace(eng.settings, **changes)
        elif eng is not None:
            self._engine = None
            self._engine_key = None
        self.settings = settings

    def set_mma(self, mma: str) -> None:
        """Switch the GPU product mode, keeping the block structure already built."""
        self.update_settings(mma=mma)

    # -- validation -------------------------------------------------------------------------
    def checked_xctype(self, xc_code) -> str:
        if not isinstance(xc_code, str) or not xc_code.strip():
            raise FunctionalError(f"xc_code must be a functional name, got {xc_code!r}")
        try:
            xctype = self._xc_type(xc_code)
        except Exception as err:  # libxc's parser raises KeyError, ValueError, ...
            raise FunctionalError(
                f"unknown exchange-correlation functional {xc_code!r}: {err}"
            ) from None
        if xctype == "MGGA" and any(x in xc_code.upper() for x in _LAPLACIAN_MGGA):
            raise FunctionalError(
                f"{xc_code!r} needs the density Laplacian, which is not supported"
            )
        if xctype not in integrate.XCTYPES + ("HF",):
            raise FunctionalError(f"{xc_code!r} is of type {xctype}, not LDA, GGA or meta-GGA")
        return xctype

    def _array_in(self, dms, nao: int, uks: bool):
        """Density matrices as this backend's float64 array, and whether they came as CuPy."""
        device_in = _is_device_array(dms)
        if device_in:
            dm = dms if self._kerneldi_backend == "gpu" else dms.get()
        else:
            try:
                dm = np.asarray(dms)
            except Exception as err:
                raise DensityMatrixError(f"density matrices must be an array: {err}") from None
            if self._kerneldi_backend == "gpu":
                import cupy

                dm = cupy.asarray(dm)
        if dm.dtype.kind == "c":
            raise DensityMatrixError("complex density matrices are not supported")
        if dm.dtype.kind not in "fiu":
            raise DensityMatrixError(f"density matrices must be real numbers, got {dm.dtype}")
        expected = (
            "(nao, nao), (2, nao, nao) or (2, nset, nao, nao)"
            if uks
            else ("(nao, nao) or (nset, nao, nao)")
        )
        ok = dm.ndim >= 2 and dm.shape[-2:] == (nao, nao)
        ok = ok and (dm.ndim in (2, 3, 4) and dm.shape[0] == 2 if uks and dm.ndim > 2 else True)
        ok = ok and dm.ndim <= (4 if uks else 3)
        if not ok:
            raise DensityMatrixError(
                f"density matrix shape {dm.shape} does not fit the molecule (nao = {nao}): "
                f"expected {expected}"
            )
        dm = dm.astype(np.float64, copy=False)
        if not bool(abs(dm).max() < np.inf):
            raise DensityMatrixError("density matrix contains NaN or inf")
        return dm, device_in

    @staticmethod
    def _symmetrized(dm, hermi: int, xctype: str):
        """(D + D^T)/2, which the engines integrate, where that is PySCF's answer for ``hermi``.

        PySCF's NumInt symmetrizes a real D unless ``hermi == 1``; with ``hermi == 1`` it takes
        D as given, which for LDA gives the same densities (phi^T D phi) but for GGA and
        meta-GGA the gradient 2 grad(phi)^T D phi of a non-symmetric D. The engines use D's
        symmetry, so that case is refused rather than answered differently."""
        sym = 0.5 * (dm + dm.swapaxes(-1, -2))
        if hermi != 1 or xctype not in ("GGA", "MGGA"):
            return sym
        asym = float(abs(dm - sym).max()) * 2
        if asym > SYMMETRY_TOL * max(1.0, float(abs(dm).max())):
            raise DensityMatrixError(
                f"hermi=1 declares the density matrix symmetric, but max|D - D^T| = {asym:.3g}: "
                f"PySCF would then take the {xctype} density gradient from D as given "
                "(2 grad(phi)^T D phi), which this engine does not; pass hermi=0 to integrate "
                "(D + D^T)/2, as PySCF does for hermi=0"
            )
        return sym

    def _orbitals(self, dms, dm, spin_halves: bool = False):
        """C sqrt(n) per density matrix (spin-major, as ``dm``) from the tags of ``dms``, or
        None (see ``forms.occupied_orbitals``)."""
        if self.settings.density_form == "matrix":
            return None
        return occupied_orbitals(dms, _xp(dm), spin_halves)

    def _array_out(self, a, device_in: bool):
        if device_in and not _is_device_array(a):
            import cupy

            return cupy.asarray(a)
        return _host(a) if not device_in else a

    # -- the drop-in entry points -----------------------------------------------------------
    def nr_rks(
        self, mol, grids, xc_code, dms, relativity=0, hermi=1, max_memory=2000, verbose=None
    ):
        """(nelec, Exc, Vxc) as PySCF's ``NumInt.nr_rks`` returns them, ``hermi`` as PySCF
        takes it (``_symmetrized``)."""
        if relativity:
            raise InputError("relativistic XC is not supported")
        xctype = self.checked_xctype(xc_code)
        nao = mol.nao_nr()
        dm, device_in = self._array_in(dms, nao, uks=False)
        dm = self._symmetrized(dm, hermi, xctype)
        sets = dm.reshape(-1, nao, nao)
        orbitals = self._orbitals(dms, dm) or [None] * len(sets)
        if xctype == "HF":
            zeros = np.zeros(len(sets))
            vmat = self._array_out(np.zeros((len(sets), nao, nao)), device_in)
        else:
            self._one_set_when_drawn(len(sets))
            eng = self._engine_for(mol, grids, xctype)
            out = [integrate.rks(eng, self, xc_code, xctype, d, c) for d, c in zip(sets, orbitals)]
            nelec_l, exc_l, vmat_l = zip(*out)
            zeros = None
            xp = eng.xp
            vmat = self._array_out(xp.stack(vmat_l), device_in)
        nelec = zeros if zeros is not None else np.array(nelec_l)
        excsum = zeros if zeros is not None else np.array(exc_l)
        if dm.ndim == 2:
            return nelec[0], excsum[0], vmat[0]
        return nelec, excsum, vmat

    def nr_uks(
        self, mol, grids, xc_code, dms, relativity=0, hermi=1, max_memory=2000, verbose=None
    ):
        """((nelec_a, nelec_b), Exc, (Vxc_a, Vxc_b)) as PySCF's ``NumInt.nr_uks`` returns them,
        ``hermi`` as PySCF takes it (``_symmetrized``)."""
        if relativity:
            raise InputError("relativistic XC is not supported")
        xctype = self.checked_xctype(xc_code)
        nao = mol.nao_nr()
        dm, device_in = self._array_in(dms, nao, uks=True)
        dm = self._symmetrized(dm, hermi, xctype)
        closed = dm.ndim == 2
        orbitals = self._orbitals(dms, dm, spin_halves=closed)
        if closed:  # a closed-shell density, split as PySCF does
            dm = _xp(dm).stack([dm * 0.5] * 2)
            orbitals = orbitals and orbitals * 2
        single = dm.ndim == 3
        dma, dmb = (d.reshape(-1, nao, nao) for d in dm)
        nset = len(dma)
        orbitals = orbitals or [None] * (2 * nset)
        if xctype == "HF":
            nelec = np.zeros((2, nset))
            excsum = np.zeros(nset)
            vmat = self._array_out(np.zeros((2, nset, nao, nao)), device_in)
        else:
            self._one_set_when_drawn(nset)
            eng = self._engine_for(mol, grids, xctype)
            out = [
                integrate.uks(eng, self, xc_code, xctype, a, b, (orbitals[k], orbitals[nset + k]))
                for k, (a, b) in enumerate(zip(dma, dmb))
            ]
            nelec = np.array([o[0] for o in out]).T
            excsum = np.array([o[1] for o in out])
            xp = eng.xp
            vmat = xp.stack([xp.stack([o[2][s] for o in out]) for s in (0, 1)])
            vmat = self._array_out(vmat, device_in)
        if single:
            return nelec[:, 0], excsum[0], vmat[:, 0]
        return nelec, excsum, vmat

    def nr_vxc(
        self, mol, grids, xc_code, dms, spin=0, relativity=0, hermi=0, max_memory=2000, verbose=None
    ):
        if spin == 0:
            return self.nr_rks(mol, grids, xc_code, dms, relativity, hermi, max_memory, verbose)
        return self.nr_uks(mol, grids, xc_code, dms, relativity, hermi, max_memory, verbose)

    get_vxc = nr_vxc

    # -- nuclear gradient -------------------------------------------------------------------
    def get_vxc_grad(self, mol, grids, xc_code, dms, spin: int = 0, grid_response: bool = False):
        """(exc1_grid, vmat) as PySCF's ``grad.rks.get_vxc`` (``spin=0``, dms (nao, nao),
        vmat (3, nao, nao)) or ``grad.uks.get_vxc`` (``spin=1``, dms (2, nao, nao), vmat
        (2, 3, nao, nao)) return them, or their ``get_vxc_full_response`` with
        ``grid_response`` (exc1_grid (natm, 3); None without); see ``kerneldi.grad``."""
        from . import grad

        return grad.get_vxc(self, mol, grids, xc_code, dms, spin, grid_response)

    def xc_gradient(self, mol, grids, xc_code, dms, spin: int = 0, grid_response: bool = False):
        """(natm, 3): the XC part of dE/dR (Eh/Bohr) that PySCF's analytic gradient adds."""
        from . import grad

        return grad.xc_gradient(self, mol, grids, xc_code, dms, spin, grid_response)


def _xp(a):
    if _is_device_array(a):
        import cupy

        return cupy
    return np


def _basis_fingerprint(mol) -> str:
    """The molecule without its geometry: atoms, charges, shells and basis exponents."""
    h = hashlib.sha1()
    h.update(np.ascontiguousarray(mol._atm[:, :2]).tobytes())
    h.update(np.ascontiguousarray(mol._bas).tobytes())
    h.update(str((mol.charge, mol.spin, mol.cart)).encode())
    return h.hexdigest()


def _mol_fingerprint(mol) -> str:
    h = hashlib.sha1()
    for arr in (mol.atom_coords(), mol._atm, mol._bas, mol._env):
        h.update(np.ascontiguousarray(arr).tobytes())
    h.update(b"cart" if mol.cart else b"sph")
    return h.hexdigest()


class CPUNumInt(KerneLDIMixin, pyscf_numint.NumInt):
    """PySCF's NumInt with KerneLDI's CPU engine (NumPy/SciPy products)."""

    _kerneldi_backend = "cpu"


class _Dispatch(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, KerneLDIMixin)


class NumInt(metaclass=_Dispatch):
    """``NumInt(backend="cpu" | "gpu", engine="block" | "dense", settings=None, **options)``.

    ``backend="cpu"`` gives a PySCF NumInt, ``"gpu"`` a GPU4PySCF NumInt, both with KerneLDI's
    ``nr_rks``/``nr_uks``. ``engine="dense"`` runs the dense baselines (EXC-OpenBLAS on the
    CPU, EXC-cuBLAS on the GPU) through the same code path. ``options`` are ``Settings``
    fields (``block_size``, ``t_b``, ``t_d``, ``mma``, ...).
    """

    def __new__(cls, backend: str = "cpu", **kwargs):
        if backend == "cpu":
            return CPUNumInt(**kwargs)
        if backend == "gpu":
            from .gpu.numint import gpu_numint_class

            return gpu_numint_class()(**kwargs)
        raise BackendUnavailable(f"backend must be 'cpu' or 'gpu', got {backend!r}")
