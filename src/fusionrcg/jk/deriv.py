"""Nuclear-derivative Coulomb and exchange from the generated first-derivative classes.

A canonical quartet (ab|cd) of the engine's work lists runs the derivative classes of its
positions A, B and C (``QuartetClass(..., deriv=p)``: the gradient of the functions at p); the
fourth follows from translational invariance, (nabla_D) = -(nabla_A + nabla_B + nabla_C). The
contraction (``contract_deriv_items``) is that of PySCF's gradient ``get_jk``
(``pyscf.grad.rhf.get_jk``):

    J[x, i, j] = -sum_kl (nabla_x i j|k l) D_lk,    K[x, i, l] = -sum_jk (nabla_x i j|k l) D_jk,

summed over the eight index permutations of each quartet (its symmetry weight ``scale`` is the
number of distinct ones over eight, as in the energy build). The per-atom energy gradient of
GPU4PySCF's ``jk_energy_per_atom`` needs no matrices: each item's derivative integrals are
summed against the density weights of the energy, in the kernel (the generated gradient
epilogue of Tier 1 classes) or after it from the stored integrals (``add_position_gradient``).
The energies are GPU4PySCF's: for one density D (a restricted total density) E_J = 1/2 sum
(ij|kl) D_ij D_kl and E_K = 1/4 sum (ij|kl) D_ik D_jl; for two (spin densities) E_J of their
sum and E_K = 1/2 sum_s sum (ij|kl) Ds_ik Ds_jl.
"""

from __future__ import annotations

DERIV_POSITIONS = (0, 1, 2)
"""The quartet positions whose derivative classes run; the fourth is their negated sum."""


def _item_aos(xp, shape, quartets, seg_ao):
    """The AOs of each item's four segments: four (n, size) index arrays."""
    return tuple(seg_ao[quartets[:, k]][:, None] + xp.arange(s) for k, s in enumerate(shape))


def _block(d, rows, cols):
    """(n, len rows, len cols) blocks of ``d`` (nao, nao) at per-item AO ``rows``, ``cols``."""
    return d[rows[:, :, None], cols[:, None, :]]


def contract_deriv_items(arrays, shape, grads, quartets, scales, seg_ao, dm, vj, vk) -> None:
    """Adds the derivative J and K of one batch of items of one canonical class into ``vj``
    and ``vk`` ((n_dm, 3, nao, nao) each, either may be None) for the densities ``dm`` (n_dm,
    nao, nao). ``grads``: per position A, B, C the items' derivative integrals (n, 3 * na * nb
    * nc * nd: x, y, z leading); ``quartets`` (n, 4) the items' segments, ``scales`` (n,)
    their symmetry weights, ``seg_ao`` each segment's first AO; ``arrays``: ``HostArrays`` or
    ``DeviceArrays`` (where all of them live)."""
    xp = arrays.xp
    n = int(scales.shape[0])
    if n == 0:
        return
    na, nb, nc, nd = shape
    w = scales.reshape(n, 1, 1, 1, 1, 1)
    g = [xp.asarray(x).reshape(n, 3, na, nb, nc, nd) * w for x in grads]
    g.append(-(g[0] + g[1] + g[2]))
    ga, gb, gc, gd = g
    a, b, c, d = _item_aos(xp, shape, quartets, seg_ao)
    nao = int(dm.shape[-1])

    def add(target, rows, cols, values) -> None:  # target[x, rows, cols] -= values (n, 3, r, c)
        flat = (rows[:, :, None] * nao + cols[:, None, :]).ravel()
        for x in range(3):
            arrays.add_at(target[x].reshape(-1), flat, -values[:, x].ravel())

    for m in range(int(dm.shape[0])):
        dens = dm[m]
        if vj is not None:
            dcd = _block(dens, c, d) + _block(dens, d, c).transpose(0, 2, 1)
            dab = _block(dens, a, b) + _block(dens, b, a).transpose(0, 2, 1)
            add(vj[m], a, b, xp.einsum("qxabcd,qcd->qxab", ga, dcd))
            add(vj[m], b, a, xp.einsum("qxabcd,qcd->qxba", gb, dcd))
            add(vj[m], c, d, xp.einsum("qxabcd,qab->qxcd", gc, dab))
            add(vj[m], d, c, xp.einsum("qxabcd,qab->qxdc", gd, dab))
        if vk is not None:
            # (ab|cd), (ab|dc), (ba|cd), (ba|dc), (cd|ab), (cd|ba), (dc|ab), (dc|ba)
            add(vk[m], a, d, xp.einsum("qxabcd,qbc->qxad", ga, _block(dens, b, c)))
            add(vk[m], a, c, xp.einsum("qxabcd,qbd->qxac", ga, _block(dens, b, d)))
            add(vk[m], b, d, xp.einsum("qxabcd,qac->qxbd", gb, _block(dens, a, c)))
            add(vk[m], b, c, xp.einsum("qxabcd,qad->qxbc", gb, _block(dens, a, d)))
            add(vk[m], c, b, xp.einsum("qxabcd,qda->qxcb", gc, _block(dens, d, a)))
            add(vk[m], c, a, xp.einsum("qxabcd,qdb->qxca", gc, _block(dens, d, b)))
            add(vk[m], d, b, xp.einsum("qxabcd,qca->qxdb", gd, _block(dens, c, a)))
            add(vk[m], d, a, xp.einsum("qxabcd,qcb->qxda", gd, _block(dens, c, b)))


def energy_weights(xp, shape, quartets, seg_ao, dms, total, j_factor: float, k_factor: float):
    """(n, na, nb, nc, nd): the density weights W of the items' integrals in j_factor E_J -
    k_factor E_K = sum over unique quartets of scale * sum_abcd (ab|cd) W_abcd, for symmetric
    densities ``dms`` (one total density, or two spin densities, as the module states) and
    their sum ``total``: W = 4 j Dt_ab Dt_cd - k kappa sum_s (Ds_ac Ds_bd + Ds_ad Ds_bc),
    kappa 1 for a total density and 2 for spin densities."""
    a, b, c, d = _item_aos(xp, shape, quartets, seg_ao)
    w = 0.0
    if j_factor:
        w = (4.0 * j_factor) * xp.einsum("qab,qcd->qabcd", _block(total, a, b), _block(total, c, d))
    if k_factor:
        kappa = 1.0 if dms.shape[0] == 1 else 2.0
        for dens in dms:
            exchange = xp.einsum("qac,qbd->qabcd", _block(dens, a, c), _block(dens, b, d))
            exchange += xp.einsum("qad,qbc->qabcd", _block(dens, a, d), _block(dens, b, c))
            w = w - (kappa * k_factor) * exchange
    return w


def scaled_weights(xp, shape, quartets, scales, seg_ao, dms, total, j_factor, k_factor):
    """``energy_weights`` times each item's symmetry weight, shaped (n, 1, na * nb * nc * nd)
    to meet a position's derivative integrals (n, 3, ...)."""
    n = int(scales.shape[0])
    w = energy_weights(xp, shape, quartets, seg_ao, dms, total, j_factor, k_factor)
    return w.reshape(n, 1, -1) * scales.reshape(n, 1, 1)


def add_position_gradient(arrays, grad, position: int, quartets, weights, seg_atom, de) -> None:
    """Adds one position's share of j_factor dE_J/dR - k_factor dE_K/dR into ``de`` (natm * 3,
    flat) without forming derivative matrices: the items' derivative integrals on
    ``position`` (A, B or C; ``grad`` (n, 3 * na * nb * nc * nd)) summed against the
    ``scaled_weights`` are minus the energy's derivative by the atom of that position's
    segment and, by translational invariance, plus its derivative by the atom of D's (the
    generated gradient epilogue does the same inside the kernel)."""
    xp = arrays.xp
    n = int(weights.shape[0])
    if n == 0:
        return
    sums = (xp.asarray(grad).reshape(n, 3, -1) * weights).sum(axis=2)  # (n, 3)
    three = xp.arange(3)
    for segment, sign in ((quartets[:, position], -1.0), (quartets[:, 3], 1.0)):
        rows = seg_atom[segment].astype(xp.int64)[:, None] * 3 + three
        arrays.add_at(de, rows.ravel(), sign * sums.ravel())
