"""A CUDA kernel built for the host: one std::thread per CUDA thread, a barrier per warp for the
votes and shuffles, one per block for ``__syncthreads``, blocks one after another (so one
``frcg_bank`` array serves as every block's dynamic shared memory). Small problems only;
enough to run a device kernel's own source on a CPU."""

from __future__ import annotations

import ctypes
import hashlib
import re
import subprocess
import tempfile
from pathlib import Path

import numpy as np

SHIM = r"""
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstddef>
#include <deque>
#include <thread>
#include <vector>
#define __global__
#define __restrict__
#define __device__
#define __shared__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
struct emu_dim3 { unsigned x = 0; };
struct alignas(16) double2 { double x, y; };
inline thread_local emu_dim3 threadIdx, blockIdx;
inline emu_dim3 blockDim{256};
inline std::barrier<>* emu_warp[8];
inline std::barrier<>* emu_block;
inline void __syncthreads() { emu_block->arrive_and_wait(); }
double frcg_bank[1 << 16];
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline double __nvvm_mul_rn_d(double a, double b) { return a * b; }
inline double __nvvm_fma_rn_d(double a, double b, double c) { return std::fma(a, b, c); }
inline double __nvvm_add_rn_d(double a, double b) { return a + b; }
inline unsigned emu_vote[8];
inline unsigned long long emu_value[8];
inline void emu_wait() { emu_warp[threadIdx.x >> 5]->arrive_and_wait(); }
inline unsigned __ballot_sync(unsigned, bool p) {
  const unsigned w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  emu_wait();
  if (lane == 0) emu_vote[w] = 0;
  emu_wait();
  if (p) __atomic_fetch_or(&emu_vote[w], 1u << lane, __ATOMIC_SEQ_CST);
  emu_wait();
  const unsigned r = emu_vote[w];
  emu_wait();
  return r;
}
inline unsigned long long __shfl_sync(unsigned, unsigned long long v, int src) {
  const unsigned w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  emu_wait();
  if ((int)lane == src) emu_value[w] = v;
  emu_wait();
  const unsigned long long r = emu_value[w];
  emu_wait();
  return r;
}
inline int __shfl_sync(unsigned m, int v, int src) {
  return (int)__shfl_sync(m, (unsigned long long)(unsigned)v, src);
}
inline double emu_lane_value[8][32];
inline double __shfl_xor_sync(unsigned, double v, int lane_mask) {
  const unsigned w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  emu_wait();
  emu_lane_value[w][lane] = v;
  emu_wait();
  const double r = emu_lane_value[w][lane ^ lane_mask];
  emu_wait();
  return r;
}
// every lane of an emulated warp runs to the end of the kernel or returns at a warp-uniform
// point: callers launch whole warps of work
inline unsigned __activemask() { return 0xffffffffu; }
inline bool __all_sync(unsigned m, bool p) { return __ballot_sync(m, p) == m; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
inline double atomicAdd(double* p, double v) {
  unsigned long long* const bits = reinterpret_cast<unsigned long long*>(p);
  unsigned long long seen = __atomic_load_n(bits, __ATOMIC_SEQ_CST), next;
  double before;
  do {
    __builtin_memcpy(&before, &seen, sizeof before);
    const double sum = before + v;
    __builtin_memcpy(&next, &sum, sizeof sum);
  } while (!__atomic_compare_exchange_n(bits, &seen, next, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST));
  return before;
}
using std::max;
using std::min;
template <typename... P, typename... A>
void emu_launch(void (*kernel)(P...), int grid, int block, A... args) {
  blockDim.x = block;
  for (int b = 0; b < grid; ++b) {
    std::deque<std::barrier<>> bars;
    for (int w = 0; w < block / 32; ++w) emu_warp[w] = &bars.emplace_back(32);
    emu_block = &bars.emplace_back(block);
    std::vector<std::thread> threads;
    for (int t = 0; t < block; ++t)
      threads.emplace_back([&, t, b] {
        threadIdx.x = t;
        blockIdx.x = b;
        kernel(args...);
      });
    for (auto& t : threads) t.join();
  }
}
"""


def _params(source: str, name: str) -> list[str]:
    m = re.search(rf"\b{name}\(([^)]*)\)\s*{{", source)
    return [" ".join(p.split()) for p in m.group(1).split(",")]


def emulated_kernel(source: str, name: str):
    """``source``'s kernel ``name`` as a callable ``kernel(grid, block, args)`` over NumPy
    arrays and NumPy scalars (``np.uint64(0)`` a null pointer); blocks of whole warps, 256
    threads at most."""
    params = _params(source, name)
    names = [p.split()[-1] for p in params]
    decl = ", ".join(params)
    code = (
        SHIM
        + source.replace('extern "C" __global__', "static")
        + f'\nextern "C" void emu_{name}(int grid, int block, {decl}) {{\n'
        f"  emu_launch(&{name}, grid, block, {', '.join(names)});\n}}\n"
    )
    tag = hashlib.sha1(code.encode()).hexdigest()[:16]
    lib_path = Path(tempfile.gettempdir()) / f"cuda_emulation_{tag}.so"
    if not lib_path.exists():
        src = lib_path.with_suffix(".cpp")
        src.write_text(code)
        subprocess.run(
            ["g++", "-std=c++20", "-O1", "-pthread", "-shared", "-fPIC", "-o", str(lib_path),
             str(src)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
    fn = getattr(ctypes.CDLL(str(lib_path)), f"emu_{name}")
    types = {"int": ctypes.c_int, "double": ctypes.c_double, "long": ctypes.c_longlong}
    fn.argtypes = [ctypes.c_int, ctypes.c_int] + [
        ctypes.c_void_p if "*" in p else types[p.split()[-2]] for p in params
    ]
    fn.restype = None

    def kernel(grid, block, args) -> None:
        threads = int(block[0])
        if len(block) != 1 or not 32 <= threads <= 256 or threads % 32:
            raise ValueError("the emulation runs blocks of 32 to 256 threads, whole warps")
        values = []
        for a in args:
            if isinstance(a, np.ndarray):
                if not a.flags.c_contiguous:
                    raise ValueError("kernel arguments must be C-contiguous")
                values.append(a.ctypes.data)
            elif isinstance(a, np.uint64):  # a pointer passed by value: null
                values.append(None if int(a) == 0 else int(a))
            else:
                values.append(a.item() if isinstance(a, np.generic) else a)
        fn(int(grid[0]), threads, *values)

    return kernel
