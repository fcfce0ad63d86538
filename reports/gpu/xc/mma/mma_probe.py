"""FP64 tensor-core shapes on this GPU: fragment layouts checked against NumPy, and throughput
of a register-resident loop (independent accumulators) for m8n8k4, m16n8k4, m16n8k8, m16n8k16."""

import cupy as cp
import numpy as np

SRC = r"""
template <int K> struct Frag;  // m16n8kK f64: A has K/2 doubles per lane, B K/4
__device__ __forceinline__ void mma(double (&d)[4], const double (&a)[2], const double (&b)[1]) {
  asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 "
               "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
    : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
    : "d"(a[0]), "d"(a[1]), "d"(b[0]));
}
__device__ __forceinline__ void mma(double (&d)[4], const double (&a)[4], const double (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
    : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
    : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
}
__device__ __forceinline__ void mma(double (&d)[4], const double (&a)[8], const double (&b)[4]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};"
    : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
    : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
      "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
}
__device__ __forceinline__ void mma884(double (&d)[2], double a, double b) {
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
    : "+d"(d[0]), "+d"(d[1]) : "d"(a), "d"(b));
}
// A 16 x K row-major, B K x 8 (B[k][n] at B[k * 8 + n]), D 16 x 8
template <int K>
__global__ void check(const double* A, const double* B, double* D) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  double a[K / 2], b[K / 4], d[4] = {0, 0, 0, 0};
  for (int i = 0; i < K / 2; ++i) a[i] = A[(g + 8 * (i % 2)) * K + t + 4 * (i / 2)];
  for (int i = 0; i < K / 4; ++i) b[i] = B[(t + 4 * i) * 8 + g];
  mma(d, a, b);
  for (int i = 0; i < 4; ++i) D[(g + 8 * (i / 2)) * 8 + 2 * t + (i % 2)] = d[i];
}
// m16n8k8 from four m8n8k4 (the compute capability 8.x path of kernels.cu)
__global__ void check884(const double* A, const double* B, double* D) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  double a[4], b[2], c[4] = {0, 0, 0, 0};
  for (int i = 0; i < 4; ++i) a[i] = A[(g + 8 * (i % 2)) * 8 + t + 4 * (i / 2)];
  for (int i = 0; i < 2; ++i) b[i] = B[(t + 4 * i) * 8 + g];
  for (int i = 0; i < 4; ++i) {
    double d[2] = {c[2 * (i / 2)], c[2 * (i / 2) + 1]};
    mma884(d, a[(i / 2) + 2 * (i % 2)], b[i % 2]);
    c[2 * (i / 2)] = d[0]; c[2 * (i / 2) + 1] = d[1];
  }
  for (int i = 0; i < 4; ++i) D[(g + 8 * (i / 2)) * 8 + 2 * t + (i % 2)] = c[i];
}
template <int K>
__global__ void bench(double* out, int iters) {
  const int lane = threadIdx.x & 31;
  double a[K / 2], b[K / 4], d[8][4];
  for (int i = 0; i < K / 2; ++i) a[i] = 1e-3 * (lane + i);
  for (int i = 0; i < K / 4; ++i) b[i] = 1e-3 * (lane - i);
  for (int j = 0; j < 8; ++j) for (int i = 0; i < 4; ++i) d[j][i] = 0;
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int j = 0; j < 8; ++j) mma(d[j], a, b);
  double s = 0; for (int j = 0; j < 8; ++j) for (int i = 0; i < 4; ++i) s += d[j][i];
  if (s == 12345.0) out[0] = s;
}
__global__ void bench884(double* out, int iters) {
  const int lane = threadIdx.x & 31;
  double a = 1e-3 * lane, b = 2e-3 * lane, d[16][2];
  for (int j = 0; j < 16; ++j) d[j][0] = d[j][1] = 0;
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int j = 0; j < 16; ++j) mma884(d[j], a, b);
  double s = 0; for (int j = 0; j < 16; ++j) s += d[j][0] + d[j][1];
  if (s == 12345.0) out[0] = s;
}
"""
names = [
    "check884",
    "check<4>",
    "check<8>",
    "check<16>",
    "bench<4>",
    "bench<8>",
    "bench<16>",
    "bench884",
]
mod = cp.RawModule(code=SRC, options=("-std=c++17",), name_expressions=names)
rng = np.random.default_rng(0)
for K in (4, 8, 16):
    A, B = rng.standard_normal((16, K)), rng.standard_normal((K, 8))
    D = cp.zeros((16, 8))
    mod.get_function(f"check<{K}>")((1,), (32,), (cp.asarray(A), cp.asarray(B), D))
    print(f"m16n8k{K} layout max err", float(np.abs(D.get() - A @ B).max()))
A, B = rng.standard_normal((16, 8)), rng.standard_normal((8, 8))
D = cp.zeros((16, 8))
mod.get_function("check884")((1,), (32,), (cp.asarray(A), cp.asarray(B), D))
print("m16n8k8 from four m8n8k4 max err", float(np.abs(D.get() - A @ B).max()))
out = cp.zeros(1)
sms = cp.cuda.Device().attributes["MultiProcessorCount"]
for name, flop in (
    ("bench884", 16 * 2 * 8 * 8 * 4),
    ("bench<4>", 8 * 2 * 16 * 8 * 4),
    ("bench<8>", 8 * 2 * 16 * 8 * 8),
    ("bench<16>", 8 * 2 * 16 * 8 * 16),
):
    f = mod.get_function(name)
    for warps in (4, 8):
        iters, blocks = 4000, sms * 4
        f((blocks,), (32 * warps,), (out, np.int32(100)))
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        f((blocks,), (32 * warps,), (out, np.int32(iters)))
        e.record()
        e.synchronize()
        t = cp.cuda.get_elapsed_time(s, e) / 1e3
        print(
            name,
            "warps/block",
            warps,
            "TFLOP/s",
            round(blocks * warps * iters * flop / t / 1e12, 1),
        )
