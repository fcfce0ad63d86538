"""Shared fixtures: real molecules from molecules/ and GPU detection."""

from __future__ import annotations

import functools

import pytest

from qcbench.molecules import load


def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver or no device
        return False


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU with CuPy; none here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def gpu_present() -> bool:
    return gpu_available()


@functools.cache
def molecule(name: str, basis: str, cart: bool = False):
    return load(name, basis, cart=cart)


@pytest.fixture(scope="session")
def get_molecule():
    """``get_molecule(name, basis, cart=False)``: a cached built PySCF Mole."""
    return molecule
