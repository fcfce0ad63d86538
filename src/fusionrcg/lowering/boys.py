"""The Boys function as generated code: a Taylor table plus the large-T recursion.

For T < ``T_SWITCH`` the highest needed order comes from a Taylor expansion about the nearest
grid point T_k = k h (h = ``GRID_STEP``, so |T - T_k| <= h/2):
F_m(T) = sum_{j<=TAYLOR_TERMS} F_{m+j}(T_k) (T_k - T)^j / j!, and lower orders from the stable
downward recursion. Above it, F_0 = sqrt(pi/T) erf(sqrt(T)) / 2 and the upward recursion, as in
the NumPy reference (``fusionrcg.reference.boys``), which also fills the table; there erf comes
from the asymptotic series of erfc and the exp(-T) both branches need, not from an erf call: a
warp whose quartets straddle T_SWITCH runs both branches, so this one is kept short.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..reference.boys import SERIES_LIMIT, boys

T_SWITCH = SERIES_LIMIT
GRID_STEP = 0.1
TAYLOR_TERMS = 8  # truncation (h/2)^9 / 9! ~ 5e-18 relative
BOYS_MAX_ORDER = 17  # the first derivative of (gg|gg)
TABLE_ORDERS = BOYS_MAX_ORDER + TAYLOR_TERMS + 1
# an even row length keeps every row 16-byte aligned: the GPU reads two orders per load
TABLE_STRIDE = TABLE_ORDERS + TABLE_ORDERS % 2
TABLE_POINTS = int(round(T_SWITCH / GRID_STEP)) + 1


@lru_cache(maxsize=1)
def boys_table() -> np.ndarray:
    """F_m(k h) for k < TABLE_POINTS, m < TABLE_ORDERS, laid out [k][m] (C order, rows of
    TABLE_STRIDE, zero padded)."""
    grid = np.arange(TABLE_POINTS) * GRID_STEP
    table = np.zeros((TABLE_POINTS, TABLE_STRIDE))
    table[:, :TABLE_ORDERS] = boys(TABLE_ORDERS - 1, grid).T
    table.setflags(write=False)
    return table


def _taylor_loads() -> str:
    """c[j] = row[j], j <= TAYLOR_TERMS. On the GPU the threads of a warp read rows far apart,
    so each load instruction costs a cache access per thread: pairs of orders are read as one
    16-byte load, from an even offset (row + 1 when mmax is odd, as rows are aligned)."""
    n = TAYLOR_TERMS + 1
    pairs = lambda first: "".join(  # noqa: E731
        f" {{ const double2 v = *(const double2*)(row + {j}); c[{j}] = v.x; c[{j + 1}] = v.y; }}"
        for j in range(first, n - 1, 2)
    )
    return f"""#ifdef __CUDA_ARCH__
        if (mmax & 1) {{ c[0] = row[0];{pairs(1)} }}
        else {{{pairs(0)} c[{n - 1}] = row[{n - 1}]; }}
#else
        for (int j = 0; j < {n}; ++j) c[j] = row[j];
#endif"""


def boys_source(device_prefix: str) -> str:
    """C/CUDA source of ``frcg_boys(mmax, t, table, f)`` filling f[0..mmax]."""
    inv_fact = ", ".join(
        f"{1.0 / np.prod(np.arange(1, j + 1)):.17g}" for j in range(TAYLOR_TERMS + 1)
    )
    # products with 1/(2m+1): a double division is a long instruction sequence on the GPU
    inv_odd = ", ".join(f"{1.0 / (2 * m + 1):.17g}" for m in range(BOYS_MAX_ORDER))
    return f"""
{device_prefix} void frcg_boys(const int mmax, const double t, const double* __restrict__ table,
                         double* __restrict__ f)
{{
    const double inv_fact[{TAYLOR_TERMS + 1}] = {{{inv_fact}}};
    const double inv_odd[{BOYS_MAX_ORDER}] = {{{inv_odd}}};
    const double e = exp(-t);
    if (t < {T_SWITCH!r}) {{
        const int k = (int)(t * {1.0 / GRID_STEP!r} + 0.5);
        const double d = k * {GRID_STEP!r} - t;
        const double* row = table + k * {TABLE_STRIDE} + mmax;
        double c[{TAYLOR_TERMS + 1}];
{_taylor_loads()}
        double s = c[{TAYLOR_TERMS}] * inv_fact[{TAYLOR_TERMS}];
        for (int j = {TAYLOR_TERMS - 1}; j >= 0; --j) s = s * d + c[j] * inv_fact[j];
        f[mmax] = s;
        for (int m = mmax - 1; m >= 0; --m) f[m] = (2.0 * t * f[m + 1] + e) * inv_odd[m];
    }} else {{
#ifdef __CUDA_ARCH__
        const double r = rsqrt(t);
#else
        const double r = 1.0 / sqrt(t);
#endif
        double half_inv_t = 0.5 * r * r;
        half_inv_t *= 2.0 - 2.0 * t * half_inv_t;  // one Newton step to 1/(2t)
        // erf(sqrt t) = 1 - erfc(sqrt t), erfc(x) = e^-x^2 / (x sqrt pi) (1 - u + 3u^2 - ...),
        // u = 1/(2 x^2): beyond T_SWITCH the terms kept leave under 1e-18 of F_0
        const double erfc_t = e * r * {float(1.0 / np.sqrt(np.pi))!r}
                              * (1.0 - half_inv_t * (1.0 - 3.0 * half_inv_t));
        f[0] = {float(0.5 * np.sqrt(np.pi))!r} * r * (1.0 - erfc_t);
        for (int m = 0; m < mmax; ++m) f[m + 1] = ((2 * m + 1) * f[m] - e) * half_inv_t;
    }}
}}
"""
