"""A PySCF basis as the flat arrays the generated kernels read.

Kernels take segmented shells (one contraction column each). A generally contracted PySCF shell
with ``nctr`` columns becomes ``nctr`` segments that share its primitives' exponents; segment
``c`` of shell ``s`` covers AOs ``ao_loc[s] + c * nf`` onwards, which is PySCF's order.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from itertools import product

import numpy as np

from ..angmom import LMAX, ClassError, shell_size
from ..shells import check_mole


@dataclass(frozen=True)
class SegmentedBasis:
    l: np.ndarray  # (nseg,) angular momentum
    xyz: np.ndarray  # (nseg, 3) centre, bohr
    prim: np.ndarray  # (nseg, 2) int32: first primitive, primitive count
    ao: np.ndarray  # (nseg,) int32: first AO of the segment
    exponents: np.ndarray  # (nprim_total,)
    coefficients: np.ndarray  # (nprim_total,) libcint normalization included
    first_segment: np.ndarray  # (nbas,) first segment of each PySCF shell
    nctr: np.ndarray  # (nbas,)
    nao: int
    spherical: bool

    def save(self, path) -> None:
        """Write the arrays (npz), so that benchmarks can run where PySCF is absent."""
        np.savez(path, **{f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def load(cls, path) -> SegmentedBasis:
        with np.load(path) as data:
            values = {f.name: data[f.name] for f in fields(cls)}
        values["nao"] = int(values["nao"])
        values["spherical"] = bool(values["spherical"])
        return cls(**values)

    def segments_with_l(self, l: int) -> np.ndarray:
        return np.flatnonzero(self.l == l).astype(np.int32)

    def segments(self, shell: int) -> range:
        start = int(self.first_segment[shell])
        return range(start, start + int(self.nctr[shell]))

    def segment_quartets(self, shells) -> list[tuple[int, int, int, int]]:
        """All segment quartets of a shell quartet, in PySCF's contraction-major order."""
        return list(product(*(self.segments(s) for s in shells)))


def segment_basis(mol) -> SegmentedBasis:
    check_mole(mol)
    spherical = not mol.cart
    ls, xyz, prim, ao, exps, coefs, first, nctrs = [], [], [], [], [], [], [], []
    ao_loc = mol.ao_loc_nr(cart=mol.cart)
    for s in range(mol.nbas):
        l = int(mol.bas_angular(s))
        if l > LMAX:
            raise ClassError(f"shell {s} has l = {l}; the generated path supports l <= {LMAX}")
        e = np.asarray(mol.bas_exp(s), dtype=float)
        c = np.asarray(mol._libcint_ctr_coeff(s), dtype=float)
        first.append(len(ls))
        nctrs.append(c.shape[1])
        nf = shell_size(l, spherical)
        for k in range(c.shape[1]):
            ls.append(l)
            xyz.append(mol.bas_coord(s))
            prim.append((len(exps), e.size))
            ao.append(ao_loc[s] + k * nf)
            exps.extend(e)
            coefs.extend(c[:, k])
    return SegmentedBasis(
        l=np.asarray(ls, dtype=np.int32),
        xyz=np.ascontiguousarray(xyz, dtype=float),
        prim=np.asarray(prim, dtype=np.int32),
        ao=np.asarray(ao, dtype=np.int32),
        exponents=np.asarray(exps, dtype=float),
        coefficients=np.asarray(coefs, dtype=float),
        first_segment=np.asarray(first, dtype=np.int32),
        nctr=np.asarray(nctrs, dtype=np.int32),
        nao=int(ao_loc[-1]),
        spherical=spherical,
    )
