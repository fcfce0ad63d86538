"""Fixtures of the XC engine tests (the cases themselves live in xc_cases.py)."""

from __future__ import annotations

import pytest
from xc_cases import reference, system


@pytest.fixture(scope="session")
def get_system():
    return system


@pytest.fixture(scope="session")
def get_reference():
    return reference
