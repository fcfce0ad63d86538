"""The GPU executor and a kernel's local memory, which CUDA reserves for every resident
thread: the largest of an engine's kernels is reserved when they are loaded (the stack limit),
and a launch or reservation refused for memory frees the cached blocks, is tried once more,
then raises a ``DeviceError`` with the sizes. Runs on the CPU with stand-ins for CuPy's
objects."""

from types import SimpleNamespace

import pytest

import fusionrcg.runtime.gpu as gpu
from fusionrcg.errors import DeviceError
from fusionrcg.runtime.gpu import (
    CUDA_ERROR_OUT_OF_MEMORY,
    CUDA_LIMIT_STACK_SIZE,
    GpuExecutor,
    launch_out_of_memory,
)


class CUDADriverError(Exception):
    """Stands for ``cupy_backends.cuda.api.driver.CUDADriverError`` (matched by name)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"CUDA driver error {status}")
        self.status = status


class Refusing:
    """A kernel function that the driver refuses ``refusals`` times, then runs."""

    local_size_bytes = 25_744

    def __init__(self, refusals: int, status: int = CUDA_ERROR_OUT_OF_MEMORY) -> None:
        self.refusals, self.status, self.runs = refusals, status, 0

    def __call__(self, grid, block, args, shared_mem=0) -> None:
        if self.refusals:
            self.refusals -= 1
            raise CUDADriverError(self.status)
        self.runs += 1


class Runtime:
    """Stands for ``cupy.cuda.runtime``'s limits: ``refusals`` refused stack limits first."""

    def __init__(self, stack: int, refusals: int = 0) -> None:
        self.stack, self.refusals, self.set = stack, refusals, []

    def deviceGetLimit(self, limit: int) -> int:
        assert limit == CUDA_LIMIT_STACK_SIZE
        return self.stack

    def deviceSetLimit(self, limit: int, value: int) -> None:
        assert limit == CUDA_LIMIT_STACK_SIZE
        if self.refusals:
            self.refusals -= 1
            raise CUDARuntimeError(CUDA_ERROR_OUT_OF_MEMORY)
        self.set.append(value)
        self.stack = value


class CUDARuntimeError(CUDADriverError):
    """Stands for ``cupy_backends.cuda.api.runtime.CUDARuntimeError`` (matched by name)."""


def _executor(events: list[str], runtime: Runtime | None = None) -> GpuExecutor:
    device = SimpleNamespace(
        synchronize=lambda: events.append("synchronize"),
        attributes={"MaxThreadsPerMultiProcessor": 2048, "MultiProcessorCount": 132},
        mem_info=(3 * 2**30, 80 * 2**30),
    )
    pool = SimpleNamespace(free_all_blocks=lambda: events.append("default pool"))
    cp = SimpleNamespace(
        cuda=SimpleNamespace(Device=lambda: device, runtime=runtime),
        get_default_memory_pool=lambda: pool,
    )
    executor = GpuExecutor.__new__(GpuExecutor)
    executor.cp = cp
    executor.reclaimers = [lambda: events.append("workspace")]
    return executor


KERNEL = SimpleNamespace(name="frcg_3222_full_sph_t1_store")


def test_launch_runs_once_without_reclaiming():
    events: list[str] = []
    fn = Refusing(0)
    _executor(events)._launch(KERNEL, fn, 4, 128, (), 0)
    assert fn.runs == 1 and events == []


def test_refused_launch_frees_cached_blocks_and_retries():
    events: list[str] = []
    fn = Refusing(1)
    _executor(events)._launch(KERNEL, fn, 4, 128, (), 0)
    assert fn.runs == 1
    assert events == ["synchronize", "workspace", "default pool"]


def test_second_refusal_names_the_kernel_and_its_local_memory():
    fn = Refusing(2)
    with pytest.raises(DeviceError) as err:
        _executor([])._launch(KERNEL, fn, 4, 128, (), 0)
    text = str(err.value)
    # 25,744 bytes for each of 2048 threads on each of 132 SMs: 6.5 GiB
    assert "frcg_3222_full_sph_t1_store" in text and "25744 bytes" in text
    assert "6.5 GiB" in text and "3.0 GiB free" in text


def test_other_driver_errors_pass_through_untouched():
    events: list[str] = []
    fn = Refusing(1, status=700)  # CUDA_ERROR_ILLEGAL_ADDRESS
    with pytest.raises(CUDADriverError):
        _executor(events)._launch(KERNEL, fn, 4, 128, (), 0)
    assert events == []
    assert not launch_out_of_memory(MemoryError())


def _kernels(monkeypatch, local_bytes: dict[str, int]):
    """Library kernels whose loaded functions have ``local_bytes`` of local memory."""
    functions = {name: SimpleNamespace(local_size_bytes=n) for name, n in local_bytes.items()}
    monkeypatch.setattr(gpu, "_function", lambda binary, name: functions[name])
    return [SimpleNamespace(binary=None, name=name) for name in local_bytes]


def test_reservation_raises_the_stack_to_the_largest_kernel(monkeypatch):
    runtime = Runtime(stack=1024)
    kernels = _kernels(monkeypatch, {"small": 0, "spills": 25_744, "middle": 9_000})
    _executor([], runtime).reserve_local_memory(kernels)
    assert runtime.set == [25_744]


def test_reservation_keeps_a_larger_stack(monkeypatch):
    runtime = Runtime(stack=44_552)
    _executor([], runtime).reserve_local_memory(_kernels(monkeypatch, {"spills": 25_744}))
    assert runtime.set == []


def test_refused_reservation_reclaims_then_names_the_kernel(monkeypatch):
    events: list[str] = []
    runtime = Runtime(stack=1024, refusals=1)
    _executor(events, runtime).reserve_local_memory(_kernels(monkeypatch, {"spills": 25_744}))
    assert runtime.set == [25_744] and events == ["synchronize", "workspace", "default pool"]
    runtime = Runtime(stack=1024, refusals=2)
    with pytest.raises(DeviceError, match="local memory of spills: 25744 bytes per thread"):
        _executor([], runtime).reserve_local_memory(_kernels(monkeypatch, {"spills": 25_744}))
