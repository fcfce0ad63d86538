"""The basis a J/K engine works in: PySCF's shells as segments, with each generally contracted
shell (several contraction columns over shared primitives, as in cc-pVXZ and ANO) replaced by
its primitives.

As segments of one column each, a shell of n primitives and c columns would have its primitive
pairs evaluated c times over, each pair of such shells c^2 times; as n one-primitive segments
each primitive pair is evaluated once. J and K are then built in the expanded basis and
contracted back: with AO = expanded AO @ C, D' = C D C^T and J = C^T J' C (likewise K).
"""

from __future__ import annotations

import numpy as np
from pyscf import gto

from ..angmom import LMAX, ClassError, shell_size
from ..runtime.basis import SegmentedBasis
from ..shells import check_mole


def engine_basis(mol, decontract: bool = True) -> tuple[SegmentedBasis, np.ndarray | None]:
    """The engine's segments, and the contraction C (expanded AOs x AOs), or None when no
    shell is expanded (the segments are then PySCF's AOs). Without ``decontract`` every
    contraction column is a segment over all its shell's primitives."""
    check_mole(mol)
    spherical = not mol.cart
    ls, xyz, prim, ao, exps, coefs, first, counts = [], [], [], [], [], [], [], []
    ao_loc = mol.ao_loc_nr(cart=mol.cart)
    rows, cols, values = [], [], []
    n_expanded = 0
    for s in range(mol.nbas):
        l = int(mol.bas_angular(s))
        if l > LMAX:
            raise ClassError(f"shell {s} has l = {l}; the generated path supports l <= {LMAX}")
        e = np.asarray(mol.bas_exp(s), dtype=float)
        c = np.asarray(mol._libcint_ctr_coeff(s), dtype=float)  # (nprim, nctr)
        nf = shell_size(l, spherical)
        general = decontract and c.shape[1] > 1
        # segments: each column over all primitives, or each primitive alone (normalized)
        if general:
            norms = np.array([gto.gto_norm(l, x) for x in e])
            segments = [(e[p : p + 1], norms[p : p + 1]) for p in range(e.size)]
        else:
            segments = [(e, c[:, k]) for k in range(c.shape[1])]
        first.append(len(ls))
        counts.append(len(segments))
        for k, (se, sc) in enumerate(segments):
            ls.append(l)
            xyz.append(mol.bas_coord(s))
            prim.append((len(exps), se.size))
            ao.append(n_expanded + k * nf)
            exps.extend(se)
            coefs.extend(sc)
        # C: expanded AO (segment k, component m) -> AO (column j, component m)
        m = np.arange(nf)
        if general:
            for p in range(e.size):
                for j in range(c.shape[1]):
                    rows.append(n_expanded + p * nf + m)
                    cols.append(ao_loc[s] + j * nf + m)
                    values.append(np.full(nf, c[p, j] / norms[p]))
        else:
            m = np.arange(len(segments) * nf)
            rows.append(n_expanded + m)
            cols.append(ao_loc[s] + m)
            values.append(np.ones(m.size))
        n_expanded += len(segments) * nf
    basis = SegmentedBasis(
        l=np.asarray(ls, dtype=np.int32),
        xyz=np.ascontiguousarray(xyz, dtype=float),
        prim=np.asarray(prim, dtype=np.int32),
        ao=np.asarray(ao, dtype=np.int32),
        exponents=np.asarray(exps, dtype=float),
        coefficients=np.asarray(coefs, dtype=float),
        first_segment=np.asarray(first, dtype=np.int32),
        nctr=np.asarray(counts, dtype=np.int32),
        nao=n_expanded,
        spherical=spherical,
    )
    if n_expanded == int(ao_loc[-1]):
        return basis, None
    contraction = np.zeros((n_expanded, int(ao_loc[-1])))
    contraction[np.concatenate(rows), np.concatenate(cols)] = np.concatenate(values)
    return basis, contraction
