"""The GPU's screening kernel (``jk.tasks.SCREEN_KERNEL``), built for the host, against the
host screener: the same items for every block, including blocks split across rounds."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_emulation import emulated_kernel
from pyscf import gto, scf

from fusionrcg.jk import JK
from fusionrcg.jk.arrays import HostArrays
from fusionrcg.jk.tasks import (
    GATHER_KERNEL,
    SCREEN_KERNEL,
    DeviceScreener,
    HostScreener,
    Screen,
)


def _item_set(pairs) -> dict:
    """Per block (bra group start, ket group start): the multiset of its items."""
    found: dict = {}
    for block, items in pairs:
        rows = np.column_stack([items.quartets, items.scales, items.ranges.reshape(-1, 4)])
        key = (block.bra.start, block.ket.start)
        found.setdefault(key, []).extend(map(tuple, rows.tolist()))
    return {k: sorted(v) for k, v in found.items()}


def _screen(engine: JK, dm, with_j: bool = True, with_k: bool = True) -> Screen:
    """The screening of a build of ``dm`` at 1e-11 (the engine's segment blocks)."""
    sizes = np.diff([*engine.basis.ao, engine.basis.nao])
    blocks = HostArrays().block_absmax(dm[None], engine.basis.ao, sizes)
    return Screen(1e-11, blocks, float(blocks.max()), with_j, with_k)


def _emulated_screener(spread: bool, limit: int = 40) -> DeviceScreener:
    """The GPU's screener with its kernels built for the host, ``limit`` candidates a round."""
    kernel = emulated_kernel(SCREEN_KERNEL, "frcg_screen_items")
    gather = emulated_kernel(GATHER_KERNEL, "frcg_gather_items")
    return DeviceScreener(HostArrays(), limit, kernel, gather, spread=spread)


# J and K together in the default run; the J-only and K-only screens (each a C++ build and
# run of the emulated kernel) with the slow tests
@pytest.mark.parametrize(
    "with_j, with_k",
    [(True, True), pytest.param(False, True, marks=pytest.mark.slow),
     pytest.param(True, False, marks=pytest.mark.slow)],
)  # fmt: skip
def test_device_screening_kernel_makes_the_host_screeners_items(with_j, with_k):
    """Two waters 8 Angstrom apart: the exchange blocks between them decide many quartets."""
    mol = gto.M(
        atom="O 0 0 0; H 0 0.76 0.59; H 0 -0.76 0.59; O 8 0 0; H 8 0.76 0.59; H 8 -0.76 0.59",
        basis="cc-pvdz",
        verbose=0,
    )
    engine = JK(mol, backend="cpu", max_work=5)
    dm = scf.RHF(mol).run(max_cycle=2).make_rdm1()
    screen = _screen(engine, dm, with_j, with_k)
    host = HostScreener(HostArrays())
    device = _emulated_screener(spread=with_j and with_k)
    checked = 0
    for kernels, class_blocks in engine.classes:
        if kernels.cls.total > 2:  # the emulation is slow: the s and p classes
            continue
        expected = _item_set(host.class_items(engine.pairs, class_blocks, screen))
        got = _item_set(device.class_items(engine.pairs, class_blocks, screen))
        assert got == expected
        checked += sum(len(v) for v in expected.values())
    assert checked > 1000


def test_blocks_cut_into_bra_pieces_make_the_whole_blocks_items():
    """``JK(task_pairs=...)``: the pieces of a block (triangle blocks included) give together
    the whole block's items, on the host and in the device kernel."""
    mol = gto.M(atom="O 0 0 0; H 0 0.76 0.59; H 0 -0.76 0.59", basis="6-31g", verbose=0)
    whole = JK(mol, backend="cpu")
    cut = JK(mol, backend="cpu", task_pairs=2)
    assert len(cut.tasks) > len(whole.tasks)
    assert sum(t.quartets for t in cut.tasks) == sum(t.quartets for t in whole.tasks)
    dm = scf.RHF(mol).run(max_cycle=2).make_rdm1()
    screen = _screen(whole, dm)
    host = HostScreener(HostArrays())
    device = _emulated_screener(spread=False)
    for (kernels, whole_blocks), (_, pieces) in zip(whole.classes, cut.classes):
        if kernels.cls.total > 1:  # the emulation is slow: the s classes and (ps|ss)
            continue
        expected = _item_set(host.class_items(whole.pairs, whole_blocks, screen))
        assert _item_set(host.class_items(cut.pairs, pieces, screen)) == expected
        assert _item_set(device.class_items(cut.pairs, pieces, screen)) == expected


def test_rounds_over_several_classes_make_each_blocks_items():
    """``rounds``: the blocks of several classes screened together, in rounds that cut across
    classes and blocks, give each block (named by its position) the host screener's items;
    a round's pieces are packed one after another, so that ``spans`` gives each class's
    pieces of a round as one batch."""
    mol = gto.M(atom="O 0 0 0; H 0 0.76 0.59; H 0 -0.76 0.59", basis="cc-pvdz", verbose=0)
    engine = JK(mol, backend="cpu", max_work=5)
    dm = scf.RHF(mol).run(max_cycle=2).make_rdm1()
    screen = _screen(engine, dm)
    # the emulation is slow: the s classes and (ps|ss), each class's blocks together
    chosen = [(k.cls, b) for k, bl in engine.classes if k.cls.total <= 1 for b in bl]
    work = [b for _, b in chosen]
    device = _emulated_screener(spread=False, limit=200)  # rounds of several blocks
    rounds = list(device.rounds(engine.pairs, work, screen))
    assert len(rounds) > 1
    spanned = 0
    for found in rounds:
        assert all(work[p.index] is p.block for p in found.pieces)
        assert [p.index for p in found.pieces] == sorted(p.index for p in found.pieces)
        assert found.pieces[0].lo == 0 and found.pieces[-1].hi == found.items.size
        assert all(a.hi == b.lo for a, b in zip(found.pieces, found.pieces[1:]))
        for pieces, items in found.spans(lambda p: chosen[p.index][0]):
            assert len({chosen[p.index][0] for p in pieces}) == 1
            joined = np.concatenate([found.of(p).quartets for p in pieces])
            assert np.array_equal(items.quartets, joined)
            spanned += len(pieces) > 1
    assert spanned > 0  # some launch spans several blocks
    # a round holds at most the limit and one bra pair's items (a ket group's, chunked)
    widest = max(b.ket.size * b.items_per_quartet for b in work)
    assert all(found.items.size < 200 + widest for found in rounds)
    # each block's items as the host screener makes them, in its order (a warp per bra pair,
    # its kets in order): the order does not depend on how the device ran the warps
    got = _block_items((p.index, found.of(p)) for found in rounds for p in found.pieces)
    host = HostScreener(HostArrays()).rounds(engine.pairs, work, screen)
    expected = _block_items((p.index, found.of(p)) for found in host for p in found.pieces)
    assert got.keys() == expected.keys()
    for index, items in expected.items():
        assert np.array_equal(got[index], items)
    assert sum(len(v) for v in expected.values()) > 1000


def _block_items(pieces) -> dict:
    """Per block position: its items' rows (quartet, weight, ranges) in the order given."""
    found: dict = {}
    for index, items in pieces:
        rows = np.column_stack([items.quartets, items.scales, items.ranges.reshape(-1, 4)])
        found.setdefault(index, []).append(rows)
    return {k: np.concatenate(v) for k, v in found.items()}
