"""The J/K engine's class streams (``fusionrcg.jk.streams``): the ordering contract with a
stand-in for CuPy's streams and events (no GPU needed), and on a GPU the same J and K from one
stream as from several."""

from __future__ import annotations

import numpy as np
import pytest

from fusionrcg.jk.streams import ClassStreams


class _Event:
    def __init__(self, log: list, stream: _Stream) -> None:
        self.stream = stream
        self.done = False
        log.append(("record", stream.name))


class _Stream:
    current: list[_Stream] = []

    def __init__(self, log: list, name: str) -> None:
        self.log = log
        self.name = name

    def record(self) -> _Event:
        return _Event(self.log, self)

    def wait_event(self, event: _Event) -> None:
        self.log.append(("wait", self.name, event.stream.name))

    def __enter__(self):
        _Stream.current.append(self)
        self.log.append(("enter", self.name))

    def __exit__(self, *exc):
        _Stream.current.pop()
        self.log.append(("exit", self.name))


class _FakeCupy:
    """CuPy's stream API as far as ``ClassStreams`` uses it, logging each call."""

    def __init__(self) -> None:
        self.log: list = []
        self.caller = _Stream(self.log, "caller")
        made = iter(range(100))
        log = self.log

        class cuda:
            @staticmethod
            def Stream(non_blocking: bool):
                assert non_blocking  # the legacy default stream must not serialize them
                return _Stream(log, f"s{next(made)}")

            @staticmethod
            def get_current_stream():
                return _Stream.current[-1] if _Stream.current else self.caller

        self.cuda = cuda


def test_streams_start_after_and_end_before_the_callers_work():
    cp = _FakeCupy()
    pool = ClassStreams(cp, 3)
    with pool.build():
        assert [e for e in cp.log if e[0] == "wait"] == [
            ("wait", f"s{i}", "caller") for i in range(3)
        ]
        cp.log.clear()
        for _ in range(4):
            with pool.one_class():
                assert cp.cuda.get_current_stream().name.startswith("s")
    assert cp.cuda.get_current_stream() is cp.caller
    waits = [e for e in cp.log if e[0] == "wait"]
    assert waits == [("wait", "caller", f"s{i}") for i in range(3)]


def test_classes_go_to_idle_streams_first():
    cp = _FakeCupy()
    pool = ClassStreams(cp, 3)
    used = []
    with pool.build():
        for _ in range(3):
            with pool.one_class():
                used.append(cp.cuda.get_current_stream().name)
        pool._last[1].done = True  # only s1 has finished its class
        with pool.one_class():
            used.append(cp.cuda.get_current_stream().name)
        with pool.one_class():  # none idle: the next in turn
            used.append(cp.cuda.get_current_stream().name)
    assert used == ["s0", "s1", "s2", "s1", "s2"]


def test_one_stream_runs_on_the_callers_stream():
    cp = _FakeCupy()
    pool = ClassStreams(cp, 1)
    with pool.build(), pool.one_class():
        assert cp.cuda.get_current_stream() is cp.caller
    assert cp.log == []


def test_an_error_in_a_class_still_orders_the_caller_after_the_streams():
    cp = _FakeCupy()
    pool = ClassStreams(cp, 2)
    with pytest.raises(RuntimeError), pool.build(), pool.one_class():
        raise RuntimeError("kernel failed")
    assert ("wait", "caller", "s0") in cp.log and ("wait", "caller", "s1") in cp.log
    assert cp.cuda.get_current_stream() is cp.caller


def test_the_caller_waits_for_a_mark_without_the_streams_later_work():
    """``mark`` then ``wait``: the caller's stream is ordered after each stream's work at the
    mark (a round's readers), not after what the streams are given later."""
    cp = _FakeCupy()
    pool = ClassStreams(cp, 2)
    with pool.build():
        with pool.one_class():
            pass
        marked = pool.mark()
        assert [e.stream.name for e in marked] == ["s0", "s1"]
        cp.log.clear()
        with pool.one_class():
            pass
        pool.wait(marked)
        assert [e for e in cp.log if e[0] == "wait"] == [
            ("wait", "caller", "s0"), ("wait", "caller", "s1")
        ]  # fmt: skip
    one = ClassStreams(cp, 1)
    assert one.mark() == []
    cp.log.clear()
    one.wait([])
    assert cp.log == []


def test_streams_follow_what_the_caller_made_during_a_build():
    """A work list the caller's stream writes during a build (a screening round): every stream
    waits for the caller's work so far before reading it; one stream needs no ordering."""
    cp = _FakeCupy()
    pool = ClassStreams(cp, 3)
    with pool.build():
        cp.log.clear()
        pool.follow()
        assert cp.log == [("record", "caller")] + [("wait", f"s{i}", "caller") for i in range(3)]
    one = ClassStreams(cp, 1)
    cp.log.clear()
    one.follow()
    assert cp.log == []


def test_stream_count_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        ClassStreams(_FakeCupy(), 0)


@pytest.mark.gpu
@pytest.mark.slow
def test_one_stream_and_several_give_the_same_jk(get_molecule, gpu_present):
    """cc-pVQZ (every class up to (gg|gg)): the classes overlapping on eight streams add the
    same J and K as one after another (1e-11: atomics add in another order)."""
    if not gpu_present:
        pytest.skip("needs a CUDA GPU")
    from pyscf import scf

    from fusionrcg.jk import JK

    mol = get_molecule("water_clusters/002", "cc-pvqz")
    dm = scf.RHF(mol).run(max_cycle=2).make_rdm1()
    one = JK(mol, backend="gpu", tol=1e-14, streams=1).get_jk(dm)
    several = JK(mol, backend="gpu", tol=1e-14, streams=8).get_jk(dm)
    for a, b in zip(one, several):
        assert np.abs(a - b).max() <= 1e-11


@pytest.mark.gpu
def test_many_rounds_on_many_streams_under_a_raw_allocator(get_molecule, gpu_present):
    """Rounds of a few thousand items, each written on the caller's stream and read by eight
    streams, with every caller allocation straight from the device (GPU4PySCF's allocator does
    so above 100 MiB; its frees wait for the device and so hide a missing stream order): J and
    K match PySCF's (1e-10)."""
    if not gpu_present:
        pytest.skip("needs a CUDA GPU")
    import cupy
    from pyscf import scf

    from fusionrcg.jk import JK

    mol = get_molecule("water_clusters/004", "cc-pvdz")
    dm = scf.RHF(mol).run(max_cycle=2).make_rdm1()
    ref = scf.hf.get_jk(mol, dm)
    cupy.cuda.set_allocator(cupy.cuda.memory._malloc)
    try:
        engine = JK(mol, backend="gpu", tol=1e-14, streams=8, round_items=4096)
        for _ in range(2):
            got = engine.get_jk(cupy.asarray(dm))
            for v, r in zip(got, ref):
                assert np.abs(v.get() - r).max() <= 1e-10
    finally:
        cupy.cuda.set_allocator(cupy.get_default_memory_pool().malloc)
