"""The generated Boys function (compiled for the host) and the NumPy reference against mpmath
at 500 T drawn over the table range, the large-T range and up to 1e6 (orders 0-6, those of
(3,3|0,0)): worst relative error per order."""

import ctypes
import pathlib
import tempfile

import mpmath
import numpy as np

from fusionrcg.build.compiler import cxx_shared
from fusionrcg.lowering.boys import boys_source, boys_table
from fusionrcg.reference.boys import boys
from fusionrcg.reference.exact import boys_exact

WRAPPER = 'extern "C" void boys(int m, double t, const double* table, double* f)'
d = pathlib.Path(tempfile.mkdtemp())
src = d / "boys.cpp"
src.write_text(
    "#include <math.h>\n"
    + boys_source("static inline")
    + f"\n{WRAPPER} {{ frcg_boys(m, t, table, f); }}\n"
)
cxx_shared(src, d / "boys.so")
lib = ctypes.CDLL(str(d / "boys.so"))
ptr = ctypes.POINTER(ctypes.c_double)
lib.boys.argtypes = [ctypes.c_int, ctypes.c_double, ptr, ptr]
table = np.ascontiguousarray(boys_table())
f = np.zeros(17)
rng = np.random.default_rng(1)
ts = np.concatenate(
    [rng.uniform(0, 30, 300), rng.uniform(30, 200, 100), 10 ** rng.uniform(2.3, 6, 100)]
)
M = 6
worst_generated = np.zeros(M + 1)
worst_reference = np.zeros(M + 1)
with mpmath.workdps(40):
    for t in ts:
        lib.boys(M, t, table.ctypes.data_as(ptr), f.ctypes.data_as(ptr))
        r = boys(M, np.array([t]))[:, 0]
        for m in range(M + 1):
            ex = boys_exact(m, mpmath.mpf(float(t)))
            worst_generated[m] = max(worst_generated[m], float(abs((f[m] - ex) / ex)))
            worst_reference[m] = max(worst_reference[m], float(abs((r[m] - ex) / ex)))
print("generated", worst_generated)
print("reference", worst_reference)
