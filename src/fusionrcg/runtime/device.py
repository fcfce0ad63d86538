"""Whether a CUDA device is usable here, with CuPy imported only on the first question."""

from __future__ import annotations

from ..errors import DeviceError


def cupy_or_none():
    """CuPy when it sees a CUDA device, else None (no CuPy, no device, no driver)."""
    try:
        import cupy
    except ImportError:
        return None
    try:
        return cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None
    except cupy.cuda.runtime.CUDARuntimeError:
        return None


def require_cupy():
    """CuPy with a visible CUDA device, or a ``DeviceError`` saying which is missing."""
    try:
        import cupy
    except ImportError as exc:
        raise DeviceError(f"the GPU backend needs CuPy ({exc})") from None
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise DeviceError("the GPU backend needs a CUDA GPU; none is visible")
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        raise DeviceError(f"the GPU backend needs a CUDA GPU: {exc}") from None
    return cupy
