"""Shell data taken from a PySCF ``Mole`` in the form the engines consume."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .angmom import LMAX
from .errors import ClassError, ShellError


@dataclass(frozen=True)
class Shell:
    l: int
    center: np.ndarray  # (3,) bohr
    exponents: np.ndarray  # (nprim,)
    coefficients: np.ndarray  # (nprim, nctr), libcint's: radial normalization included

    @property
    def nprim(self) -> int:
        return self.exponents.size

    @property
    def nctr(self) -> int:
        return self.coefficients.shape[1]


def check_mole(mol) -> None:
    if getattr(mol, "_bas", None) is None or len(mol._bas) == 0:
        raise ShellError("the Mole has no basis; call mol.build() first")


def shell(mol, index: int) -> Shell:
    check_mole(mol)
    if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
        raise ShellError(f"shell index must be an integer, got {index!r}")
    if not 0 <= index < mol.nbas:
        raise ShellError(f"shell index {index} out of range 0..{mol.nbas - 1}")
    l = int(mol.bas_angular(index))
    if l > LMAX:
        raise ClassError(f"shell {index} has l = {l}; the generated path supports l <= {LMAX}")
    return Shell(
        l=l,
        center=np.asarray(mol.bas_coord(index), dtype=float),
        exponents=np.asarray(mol.bas_exp(index), dtype=float),
        coefficients=np.asarray(mol._libcint_ctr_coeff(index), dtype=float),
    )


def shell_quartet_indices(shells) -> tuple[int, int, int, int]:
    try:
        idx = tuple(shells)
    except TypeError:
        raise ShellError(f"a shell quartet needs four shell indices, got {shells!r}") from None
    if len(idx) != 4:
        raise ShellError(f"a shell quartet needs four shell indices, got {len(idx)}")
    return idx  # type: ignore[return-value]


def shell_quartet(mol, shells) -> tuple[Shell, Shell, Shell, Shell]:
    a, b, c, d = (shell(mol, i) for i in shell_quartet_indices(shells))
    return a, b, c, d
