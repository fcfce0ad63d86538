import mpmath
import numpy as np
import pytest

from fusionrcg.reference.boys import MAX_ORDER, boys
from fusionrcg.reference.exact import boys_exact

# Covers both branches, their seam at T = 30 and the asymptotic range.
T_GRID = np.concatenate(
    [[0.0, 1e-300, 1e-12, 1e-6], np.linspace(1e-3, 60.0, 240), np.geomspace(29.0, 1e5, 40)]
)


@pytest.mark.parametrize("m_max", [0, 8, 16])
def test_boys_relative_error_below_1e_14(m_max):
    values = boys(m_max, T_GRID)
    with mpmath.workdps(40):
        worst = 0.0
        for m in range(m_max + 1):
            for i, t in enumerate(T_GRID):
                exact = boys_exact(m, mpmath.mpf(float(t)))
                worst = max(worst, float(abs((values[m, i] - exact) / exact)))
    assert worst < 1e-14


def test_boys_shape_follows_input():
    assert boys(3, np.zeros((2, 5))).shape == (4, 2, 5)


@pytest.mark.parametrize("bad", [np.array([-1.0]), np.array([np.nan]), np.array([np.inf])])
def test_boys_rejects_bad_arguments(bad):
    with pytest.raises(ValueError, match="finite T >= 0"):
        boys(2, bad)


def test_boys_rejects_bad_order():
    with pytest.raises(ValueError, match="outside"):
        boys(MAX_ORDER + 1, np.array([1.0]))
