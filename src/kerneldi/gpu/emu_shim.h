// Host emulation of the CUDA features that kernels.cu uses, so that the tests can run the
// kernels' own source on a CPU: one std::thread per CUDA thread, blocks one after another, a
// std::barrier for __syncthreads and the warp votes, WMMA fragments held whole by every lane, the
// FP64 mma.sync fragments exchanged through per-warp matrices.
#pragma once
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstddef>
#include <deque>
#include <thread>
#include <type_traits>
#include <vector>

#define KD_HOST_EMULATION 1
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__
#define __launch_bounds__(...)
#define __shared__ static
#define KD_DYNAMIC_SMEM(name) unsigned char* name = kd_emu::dynamic_smem

struct kd_dim3 {
  unsigned x = 0, y = 0, z = 0;
};

namespace kd_emu {
inline thread_local kd_dim3 thread_idx, block_idx;
inline kd_dim3 grid_dim;
inline std::barrier<>* bar = nullptr;
inline std::barrier<>* warp_bars[8];  // one per warp of 32 threads
alignas(256) inline unsigned char dynamic_smem[256 * 1024];
inline std::atomic<unsigned> votes[32];
inline std::atomic<int> any_flag;
inline void sync() { bar->arrive_and_wait(); }
}  // namespace kd_emu

#define threadIdx kd_emu::thread_idx
#define blockIdx kd_emu::block_idx
#define gridDim kd_emu::grid_dim

inline void __syncthreads() { kd_emu::sync(); }
inline void __syncwarp(unsigned = 0xffffffffu) {
  kd_emu::warp_bars[threadIdx.x >> 5]->arrive_and_wait();
}

inline int __syncthreads_or(int pred) {
  kd_emu::sync();
  if (threadIdx.x == 0) kd_emu::any_flag = 0;
  kd_emu::sync();
  if (pred) kd_emu::any_flag = 1;
  kd_emu::sync();
  const int r = kd_emu::any_flag;
  kd_emu::sync();
  return r;
}

// every thread of the block calls it in kernels.cu, so a block-wide barrier is a valid stand-in
inline unsigned __ballot_sync(unsigned, int pred) {
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  kd_emu::sync();
  if (lane == 0) kd_emu::votes[w] = 0;
  kd_emu::sync();
  if (pred) kd_emu::votes[w].fetch_or(1u << lane);
  kd_emu::sync();
  const unsigned r = kd_emu::votes[w];
  kd_emu::sync();
  return r;
}

inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}

inline double atomicAdd(double* p, double v) { return std::atomic_ref<double>(*p).fetch_add(v); }

#ifdef __FLT16_MANT_DIG__
typedef _Float16 __half;
inline __half __double2half(double x) { return (__half)x; }
#else
// compilers without _Float16: IEEE half rounding (11 significant bits, subnormals, overflow)
struct __half {
  float v;
  operator float() const { return v; }
};
inline __half __double2half(double x) {
  if (!(std::fabs(x) < 65520.0)) return {std::isnan(x) ? (float)x : std::copysign(INFINITY, (float)x)};
  int e;
  std::frexp(x, &e);
  const double quantum = std::ldexp(1.0, (e < -13 ? -13 : e) - 11);
  return {(float)(std::nearbyint(x / quantum) * quantum)};
}
#endif

namespace kd_emu {
// mma.sync m16n8k8 (f64) of one warp: the lanes put their fragment elements (PTX's layout, see
// kernels.cu) into the warp's matrices, then each computes its own accumulator elements
inline void mma16x8x8(double (&c)[4], const double (&a)[4], const double (&b)[2]) {
  struct Operands {
    double A[16][8], B[8][8];
  };
  static Operands ops[8];
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  Operands& m = ops[threadIdx.x >> 5];
  for (int i = 0; i < 4; ++i) m.A[g + 8 * (i % 2)][t + 4 * (i / 2)] = a[i];
  for (int i = 0; i < 2; ++i) m.B[t + 4 * i][g] = b[i];
  __syncwarp();
  for (int i = 0; i < 4; ++i) {
    const int row = g + 8 * (i / 2), col = 2 * t + i % 2;
    for (int k = 0; k < 8; ++k) c[i] += m.A[row][k] * m.B[k][col];
  }
  __syncwarp();  // the matrices are rewritten by the next product
}
}  // namespace kd_emu

namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  static constexpr int R = std::is_same_v<Use, matrix_b> ? K : M;
  static constexpr int C = std::is_same_v<Use, matrix_a> ? K : N;
  static constexpr int num_elements = R * C;  // every lane holds the whole fragment
  T x[R * C];
};

template <typename Use, int M, int N, int K, typename T, typename Layout>
inline void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const T* p, unsigned ldm) {
  typedef fragment<Use, M, N, K, T, Layout> F;
  for (int r = 0; r < F::R; ++r)
    for (int c = 0; c < F::C; ++c)
      f.x[r * F::C + c] = std::is_same_v<Layout, row_major> ? p[r * ldm + c] : p[c * ldm + r];
}

template <int M, int N, int K, typename T>
inline void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T>& f, unsigned ldm,
                              layout_t) {
  if ((threadIdx.x & 31) != 0) return;  // one lane writes what every lane holds
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) p[r * ldm + c] = f.x[r * N + c];
}

template <int M, int N, int K, typename T>
inline void fill_fragment(fragment<accumulator, M, N, K, T>& f, T v) {
  for (auto& x : f.x) x = v;
}

template <int M, int N, int K, typename T, typename Tin, typename La, typename Lb>
inline void mma_sync(fragment<accumulator, M, N, K, T>& d,
                     const fragment<matrix_a, M, N, K, Tin, La>& a,
                     const fragment<matrix_b, M, N, K, Tin, Lb>& b,
                     const fragment<accumulator, M, N, K, T>& c) {
  T out[M * N];
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      T s = c.x[m * N + n];
      for (int k = 0; k < K; ++k) s += (T)a.x[m * K + k] * (T)b.x[k * N + n];
      out[m * N + n] = s;
    }
  for (int e = 0; e < M * N; ++e) d.x[e] = out[e];
}
}  // namespace wmma
}  // namespace nvcuda

// grid blocks one after another, each by KD_NT threads
template <typename... P, typename... A>
void kd_emu_launch(void (*kernel)(P...), int grid, A... args) {
  std::barrier<> b(256);
  kd_emu::bar = &b;
  kd_emu::grid_dim.x = grid;
  std::deque<std::barrier<>> warps;  // a deque: barriers cannot move
  for (int w = 0; w < 8; ++w) kd_emu::warp_bars[w] = &warps.emplace_back(32);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 256; ++t)
    threads.emplace_back([&, t] {
      kd_emu::thread_idx.x = t;
      for (int blk = 0; blk < grid; ++blk) {
        kd_emu::block_idx.x = blk;
        kernel(args...);
        kd_emu::sync();
      }
    });
  for (auto& t : threads) t.join();
}
