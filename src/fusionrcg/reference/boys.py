"""The Boys function F_m(T) = int_0^1 t^(2m) exp(-T t^2) dt, vectorized over T.

Below ``SERIES_LIMIT`` the highest order comes from the all-positive series
F_m(T) = exp(-T) sum_k (2T)^k / ((2m+1)(2m+3)...(2m+2k+1)) and the lower orders from the
downward recursion F_m = (2T F_{m+1} + exp(-T)) / (2m+1), which only adds positive terms.
Above it F_0 = sqrt(pi/T) erf(sqrt(T)) / 2 and the upward recursion
F_{m+1} = ((2m+1) F_m - exp(-T)) / (2T) is stable, because exp(-T) is tiny next to
(2m+1) F_m there for every m <= 16. Relative error stays below 1e-14 (see the tests).
"""

from __future__ import annotations

import numpy as np
from scipy.special import erf

from ..errors import InputError

SERIES_LIMIT = 30.0
MAX_ORDER = 32
_SERIES_TOL = 1e-17


def boys(m_max: int, t: np.ndarray) -> np.ndarray:
    """F_0..F_{m_max} at every T; the result has shape ``(m_max + 1, *t.shape)``."""
    if not 0 <= m_max <= MAX_ORDER:
        raise InputError(f"Boys order {m_max} outside 0..{MAX_ORDER}")
    t = np.asarray(t, dtype=float)
    if np.any(t < 0) or not np.all(np.isfinite(t)):
        raise InputError("the Boys function needs finite T >= 0")
    flat = t.reshape(-1)
    out = np.empty((m_max + 1, flat.size))
    small = flat < SERIES_LIMIT
    if small.any():
        out[:, small] = _small(m_max, flat[small])
    if (~small).any():
        out[:, ~small] = _large(m_max, flat[~small])
    return out.reshape((m_max + 1, *t.shape))


def _small(m_max: int, t: np.ndarray) -> np.ndarray:
    two_t = 2.0 * t
    term = np.full_like(t, 1.0 / (2 * m_max + 1))
    total = term.copy()
    k = 0
    while True:
        k += 1
        term = term * two_t / (2 * m_max + 2 * k + 1)
        total += term
        if np.all(term <= _SERIES_TOL * total):
            break
    exp_t = np.exp(-t)
    out = np.empty((m_max + 1, t.size))
    out[m_max] = exp_t * total
    for m in range(m_max - 1, -1, -1):
        out[m] = (two_t * out[m + 1] + exp_t) / (2 * m + 1)
    return out


def _large(m_max: int, t: np.ndarray) -> np.ndarray:
    exp_t = np.exp(-t)
    half_inv_t = 0.5 / t
    out = np.empty((m_max + 1, t.size))
    out[0] = 0.5 * np.sqrt(np.pi / t) * erf(np.sqrt(t))
    for m in range(m_max):
        out[m + 1] = ((2 * m + 1) * out[m] - exp_t) * half_inv_t
    return out
