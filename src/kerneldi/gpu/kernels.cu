// KerneLDI block-pair kernels (paper Sec. III-C, Appendix A-D/E).
//
// Operands live in the BCS layouts built on the host: AO blocks Phi_{pg} (basis block p, grid
// block g) stored in BCS(C) order, with the BCS(R) mirror (row_ptr, col_idx, row_blk) pointing
// at the same data; the density matrix as dense d x d tiles with their max-norms.
//
//   kd_density   row_groups thread blocks per grid block g (each a share of its rows, rho
//                summed atomically when more than one): for every kept basis block p of g, the
//                executable pairs (p, q) of g's block list are compacted with a prefix sum
//                (Algorithm 1), R_pg = sum_q D_pq Phi_qg is formed from d x d tiles staged in
//                shared memory, and contracted with Phi_pg into rho, grad rho and tau.
//   kd_density_orb  the same densities from occupied orbitals (D = C C^T, occupations folded
//                into C): row_groups thread blocks per grid block g, for every block o of d
//                orbitals R_og = sum_q C^T_oq Phi_qg over the kept blocks q of g (screened by
//                max|C_oq| max|Phi_qg|), then rho = sum_o |R_og|^2 (and gradient, tau).
//   kd_potential one thread block per output tile (p, r), p <= r, and segment of the grid blocks:
//                the grid blocks shared by rows p and r that pass the pair bound are compacted, and
//                F_pr += sum_g L_pg R_rg^T is accumulated over them (Eq. 18) and added to F_pr;
//                the host adds the transpose (F_rp) once at the end.
//   kd_potential_group  the same products for a G x G group of output tiles per thread block
//                (G = 2, 4; FP64 tensor cores, D = 32): each needed tile staged once per step.
//   kd_aow       A_b = sum_c wv_c Phi_b,c for every kept block (the GGA right operand) and max|A_b|.
//   kd_ao_norms, kd_ao_gather  block summaries and kept blocks straight from the AO evaluator's
//                output, in one pass each (building the cache, or a batch when recomputing).
//
// XC: 0 = LDA, 1 = GGA, 2 = meta-GGA (tau). MMA: 0 = FP64 on CUDA cores, 1 = FP64 tensor cores
// (mma.sync m16n8k8), 2 = FP16 inputs with FP32 accumulation (HMMA 16x16x16). The block size
// D is 16, 32 or 64 with MMA 0, and 32 with the tensor-core modes. ASYNC (density kernels, FP64
// tensor cores at D = 32): operands copied asynchronously into two alternating buffers.

#ifndef KD_HOST_EMULATION
#include <cuda_fp16.h>
#include <mma.h>
// dynamic shared memory; a macro so that the tests can build this file for the host (emulate.py)
#define KD_DYNAMIC_SMEM(name) extern __shared__ __align__(128) unsigned char name[]
#endif

#define KD_NT 256

namespace kd {

constexpr int NT = KD_NT;
constexpr int NWARP = NT / 32;

__host__ __device__ constexpr int align128(int bytes) { return (bytes + 127) / 128 * 128; }

template <int XC>
struct Xc {
  static constexpr int NRHO = XC == 0 ? 1 : (XC == 1 ? 4 : 5);
  // right-hand components of R = D Phi_c: the meta-GGA tau needs D Phi_x, D Phi_y, D Phi_z
  static constexpr int NRIGHT = XC == 2 ? 4 : 1;
  // LDA and tau are symmetric in (p, q): half the pairs, off-diagonal ones twice
  static constexpr bool SYM = XC != 1;
};

template <int MMA>
struct Elem {
  typedef double type;
  static __device__ __forceinline__ double from(double x) { return x; }
};
template <>
struct Elem<2> {
  typedef __half type;
  static __device__ __forceinline__ __half from(double x) { return __double2half(x); }
};

__device__ __forceinline__ int lower_bound(const int* __restrict__ a, int lo, int hi, int key) {
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (a[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// Algorithm 1 (parallel addressing): the exclusive prefix sum of one flag per thread, from warp
// ballots and a scan over the per-warp counts. Returns this thread's compact position (-1 if
// its flag is clear) and the total; every thread of the block must call it.
__device__ __forceinline__ int compact_position(int flag, int* warp_counts, int* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned ballot = __ballot_sync(0xffffffffu, flag);
  if (lane == 0) warp_counts[warp] = __popc(ballot);
  __syncthreads();
  int base = 0, sum = 0;
#pragma unroll
  for (int w = 0; w < NWARP; ++w) {
    const int c = warp_counts[w];
    base += (w < warp) ? c : 0;
    sum += c;
  }
  *total = sum;
  return flag ? base + __popc(ballot & ((1u << lane) - 1u)) : -1;
}

// dst[r][c] = s * src[r][c] (src: contiguous D x D block in global memory)
template <int D, typename E, typename C>
__device__ __forceinline__ void stage(E* dst, int ldd, const double* __restrict__ src, double s) {
  for (int e = threadIdx.x; e < D * D; e += NT) dst[(e / D) * ldd + e % D] = C::from(s * src[e]);
}

// 16 bytes from global to shared memory without passing through registers (cp.async, compute
// capability 8.0 on; a plain copy elsewhere and in the host emulation), committed as a group;
// ``async_wait<N>`` waits until at most N of this thread's groups are in flight.
__device__ __forceinline__ void copy16_async(double* dst, const double* __restrict__ src) {
#if !defined(KD_HOST_EMULATION) && __CUDA_ARCH__ >= 800
  // the shared-window address in PTX itself: no header the run-time compiler might lack
  unsigned long long at;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(at) : "l"(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"((unsigned)at), "l"(src));
#else
  dst[0] = src[0];
  dst[1] = src[1];
#endif
}

__device__ __forceinline__ void async_commit() {
#if !defined(KD_HOST_EMULATION) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

template <int N>
__device__ __forceinline__ void async_wait() {
#if !defined(KD_HOST_EMULATION) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

// ---- D x D product tiles: C += A B (nn) or C += A B^T (nt); operands in shared memory -------

template <int D, int MMA>
struct Tile;

// FP64 on the CUDA cores: thread t owns column t % D and rows t / D + m * NT / D.
template <int D>
struct Tile<D, 0> {
  static_assert(D * D >= NT && NT % D == 0, "block size must be 16, 32 or 64");
  static constexpr int RS = NT / D, PT = D * D / NT;
  double c[PT];
  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int m = 0; m < PT; ++m) c[m] = 0.0;
  }
  __device__ __forceinline__ void nn(const double* A, int lda, const double* B, int ldb) {
    const int j = threadIdx.x % D, r0 = threadIdx.x / D;
#pragma unroll 8
    for (int k = 0; k < D; ++k) {
      const double b = B[k * ldb + j];
#pragma unroll
      for (int m = 0; m < PT; ++m) c[m] = fma(A[(r0 + m * RS) * lda + k], b, c[m]);
    }
  }
  __device__ __forceinline__ void nt(const double* A, int lda, const double* B, int ldb) {
    const int j = threadIdx.x % D, r0 = threadIdx.x / D;
#pragma unroll 8
    for (int k = 0; k < D; ++k) {
      const double b = B[j * ldb + k];
#pragma unroll
      for (int m = 0; m < PT; ++m) c[m] = fma(A[(r0 + m * RS) * lda + k], b, c[m]);
    }
  }
  __device__ __forceinline__ void store(double* C, int ldc, void*) const {
    const int j = threadIdx.x % D, r0 = threadIdx.x / D;
#pragma unroll
    for (int m = 0; m < PT; ++m) C[(r0 + m * RS) * ldc + j] = c[m];
  }
};

// ---- FP64 tensor cores: mma.sync m16n8k8 (sm_90), twice the rate of the m8n8k4 shape that
// the WMMA API issues for doubles.
// The fragments' lanes are PTX's: with g = lane / 4 and t = lane % 4, a 16 x 8 A holds
// a[i] = A(g + 8 (i % 2), t + 4 (i / 2)), an 8 x 8 B b[i] = B(t + 4 i, g) and the 16 x 8
// accumulator c[i] = C(g + 8 (i / 2), 2 t + i % 2). Row pitches of D + 4 doubles (or 20) put
// each half-warp's loads on distinct banks.

__device__ __forceinline__ void mma16x8x8(double (&c)[4], const double (&a)[4],
                                          const double (&b)[2]) {
#if defined(KD_HOST_EMULATION)
  kd_emu::mma16x8x8(c, a, b);
#elif __CUDA_ARCH__ >= 900
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
#else
  // compute capability 8.x: four m8n8k4, whose fragments are the quarters of these (rows g and
  // g + 8, inner indices t and t + 4)
#pragma unroll
  for (int i = 0; i < 4; ++i)
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
                 : "+d"(c[2 * (i / 2)]), "+d"(c[2 * (i / 2) + 1])
                 : "d"(a[(i / 2) + 2 * (i % 2)]), "d"(b[i % 2]));
#endif
}

// Where element (row, col) of a tile with row pitch ld lies. SW: pitch 32 with the columns'
// 4-blocks XOR-ed by the row (mod 4), which keeps 16-byte pieces whole and puts each half-warp's
// fragment loads on distinct banks without padding.
template <bool SW>
__device__ __forceinline__ int tile_at(int row, int col, int ld) {
  return row * ld + (SW ? col ^ ((row & 3) << 2) : col);
}

// a's 16 x 8 block at (row0, col0) of A (row-major, pitch lda)
template <bool SW = false>
__device__ __forceinline__ void load_a(double (&a)[4], const double* A, int lda, int row0,
                                       int col0) {
  const int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
#pragma unroll
  for (int i = 0; i < 4; ++i)
    a[i] = A[tile_at<SW>(row0 + g + 8 * (i % 2), col0 + t + 4 * (i / 2), lda)];
}

// b's 8 x 8 block at inner index k0, column n0: B(k, n) = B[k * ldb + n], or B[n * ldb + k]
// with BT (the rows of B^T)
template <bool BT, bool SW = false>
__device__ __forceinline__ void load_b(double (&b)[2], const double* B, int ldb, int k0, int n0) {
  const int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
#pragma unroll
  for (int i = 0; i < 2; ++i)
    b[i] = BT ? B[tile_at<SW>(n0 + g, k0 + t + 4 * i, ldb)]
              : B[tile_at<SW>(k0 + t + 4 * i, n0 + g, ldb)];
}

// the 16 x 8 accumulator c to C (pitch ldc)
__device__ __forceinline__ void store_c(double* C, int ldc, const double (&c)[4]) {
  const int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
#pragma unroll
  for (int i = 0; i < 4; ++i) C[(g + 8 * (i / 2)) * ldc + 2 * t + i % 2] = c[i];
}

// FP64 tensor cores: warp w owns the 16x16 quadrant w % 4 of the output over the half w / 4 of
// the inner dimension, as two 16 x 8 accumulators; the halves are summed at store through a
// 32 x 32 double scratch.
template <>
struct Tile<32, 1> {
  double c[2][4];
  static __device__ __forceinline__ int row0() { return 16 * (((threadIdx.x >> 5) & 3) >> 1); }
  static __device__ __forceinline__ int col0() { return 16 * ((threadIdx.x >> 5) & 1); }
  static __device__ __forceinline__ int k0() { return 16 * (threadIdx.x >> 7); }
  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) c[j][i] = 0.0;
  }
  template <bool BT>
  __device__ __forceinline__ void product(const double* A, int lda, const double* B, int ldb) {
    const int r0 = row0(), c0 = col0(), kb = k0();
#pragma unroll
    for (int k = kb; k < kb + 16; k += 8) {
      double a[4], b[2][2];
      load_a(a, A, lda, r0, k);
#pragma unroll
      for (int j = 0; j < 2; ++j) load_b<BT>(b[j], B, ldb, k, c0 + 8 * j);
#pragma unroll
      for (int j = 0; j < 2; ++j) mma16x8x8(c[j], a, b[j]);
    }
  }
  __device__ __forceinline__ void nn(const double* A, int lda, const double* B, int ldb) {
    product<false>(A, lda, B, ldb);
  }
  __device__ __forceinline__ void nt(const double* A, int lda, const double* B, int ldb) {
    product<true>(A, lda, B, ldb);
  }
  // every thread of the block must call it (it synchronizes)
  __device__ __forceinline__ void store(double* C, int ldc, void* scratch) const {
    double* S = static_cast<double*>(scratch);
    const bool upper = threadIdx.x >= 128;  // the second half of the inner dimension
    double* dst = upper ? S : C;
    const int ld = upper ? 32 : ldc, r0 = row0(), c0 = col0();
#pragma unroll
    for (int j = 0; j < 2; ++j) store_c(dst + r0 * ld + c0 + 8 * j, ld, c[j]);
    __syncthreads();
    for (int e = threadIdx.x; e < 1024; e += NT) C[(e / 32) * ldc + e % 32] += S[e];
    __syncthreads();  // the scratch is reused by the next store
  }
};

// FP16 inputs, FP32 accumulation (HMMA 16x16x16, the paper's mode): warp w owns the 16x16
// output tile w % 4 over the half w / 4 of the inner dimension; the halves are summed at store.
template <>
struct Tile<32, 2> {
  nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> c;
  __device__ __forceinline__ void zero() { nvcuda::wmma::fill_fragment(c, 0.0f); }
  __device__ __forceinline__ void nn(const __half* A, int lda, const __half* B, int ldb) {
    using namespace nvcuda::wmma;
    const int w = threadIdx.x >> 5, row = 16 * ((w & 3) >> 1), col = 16 * (w & 1), k = 16 * (w >> 2);
    fragment<matrix_a, 16, 16, 16, __half, row_major> a;
    fragment<matrix_b, 16, 16, 16, __half, row_major> b;
    load_matrix_sync(a, A + row * lda + k, lda);
    load_matrix_sync(b, B + k * ldb + col, ldb);
    mma_sync(c, a, b, c);
  }
  __device__ __forceinline__ void nt(const __half* A, int lda, const __half* B, int ldb) {
    using namespace nvcuda::wmma;
    const int w = threadIdx.x >> 5, row = 16 * ((w & 3) >> 1), col = 16 * (w & 1), k = 16 * (w >> 2);
    fragment<matrix_a, 16, 16, 16, __half, row_major> a;
    fragment<matrix_b, 16, 16, 16, __half, col_major> b;
    load_matrix_sync(a, A + row * lda + k, lda);
    load_matrix_sync(b, B + col * ldb + k, ldb);
    mma_sync(c, a, b, c);
  }
  // every thread of the block must call it (it synchronizes)
  __device__ __forceinline__ void store(double* C, int ldc, void* scratch_bytes) const {
    float* scratch = static_cast<float*>(scratch_bytes);
    const int w = threadIdx.x >> 5, row = 16 * ((w & 3) >> 1), col = 16 * (w & 1), half = w >> 2;
    nvcuda::wmma::store_matrix_sync(scratch + half * 1024 + row * 32 + col, c, 32,
                                    nvcuda::wmma::mem_row_major);
    __syncthreads();
    for (int e = threadIdx.x; e < 1024; e += NT)
      C[(e / 32) * ldc + e % 32] = (double)scratch[e] + (double)scratch[1024 + e];
    __syncthreads();  // the scratch is reused by the next store
  }
};

template <int D, int MMA>
struct Smem {
  typedef typename Elem<MMA>::type E;
  // row pitch of the nt operands: padded for the CUDA-core product (B is read down its
  // columns) and for the FP64 tensor cores, whose fragments (8 rows of 4 doubles per
  // half-warp) hit every shared-memory bank once at a pitch of D + 4 doubles (D = 32); the nn
  // operands (kd_density) are read along rows by the CUDA cores and need no padding
  static constexpr int LDS = MMA == 0 ? D + 1 : (MMA == 1 ? D + 4 : D);
  static constexpr int LDN = MMA == 1 ? D + 4 : D;
};

}  // namespace kd

using namespace kd;

// Bytes of one [left tile | NR right tiles] operand buffer of the density kernels.
template <int NR, int D, int MMA>
struct DensityBuffer {
  static constexpr int DL = D * Smem<D, MMA>::LDN, ESZ = (int)sizeof(typename Elem<MMA>::type);
  static constexpr int LEFT = align128(DL * ESZ);
  static constexpr int BYTES = LEFT + align128(NR * DL * ESZ);
};

// Products of one output row of tiles: t[c] += L_b Phi_{q_b g, c} over the blocks b in
// [lo, n) of grid block g's list whose flag is set, compacted with Algorithm 1. ``flag(b)`` is
// the screening test; ``left(b, &scale)`` the left tile in global memory and its factor.
// Synchronous staging converts the operands on their way into one shared-memory buffer; with
// ASYNC (FP64 operands) they go straight to two alternating buffers, the next product's copies
// in flight while the current one runs, and each thread scales the left elements it copied.
// Returns the number of products' left tiles executed (uniform across the block).
template <int NR, int D, int MMA, bool ASYNC, typename Flag, typename Left>
__device__ __forceinline__ int product_row(Tile<D, MMA>* t, int lo, int n, Flag flag, Left left,
                                           const double* __restrict__ phi, int start, int blk0,
                                           int ncs, typename Elem<MMA>::type* sA,
                                           typename Elem<MMA>::type* sB, int* list,
                                           int* warp_counts) {
  typedef typename Elem<MMA>::type E;
  typedef Elem<MMA> C;
  static_assert(!ASYNC || MMA != 2, "asynchronous staging copies FP64 operands");
  constexpr int DD = D * D, LDN = Smem<D, MMA>::LDN, DL = D * LDN, PIECES = DD / 2;
  // buffer ``buf`` (0 or 1) starts BUF elements after the previous one
  constexpr int BUF = DensityBuffer<NR, D, MMA>::BYTES / (int)sizeof(E);
  // the copies of product m into buffer ``buf``; returns its left factor
  auto issue = [&](int m, int buf) {
    const int bb = list[m];
    double scale;
    const double* L = left(bb, &scale);
    const double* right = phi + (size_t)(start + bb - blk0) * ncs * DD;
    for (int e = threadIdx.x; e < PIECES; e += NT) {
      const int at = (2 * e / D) * LDN + 2 * e % D;
      copy16_async(reinterpret_cast<double*>(sA + buf * BUF) + at, L + 2 * e);
#pragma unroll
      for (int c = 0; c < NR; ++c) {
        double* dst = reinterpret_cast<double*>(sB + buf * BUF) + c * DL + at;
        copy16_async(dst, right + c * DD + 2 * e);
      }
    }
    async_commit();
    return scale;
  };
  auto rescale = [&](int buf, double scale) {  // the left elements this thread copied
    if (scale == 1.0) return;
    for (int e = threadIdx.x; e < PIECES; e += NT) {
      double* a = reinterpret_cast<double*>(sA + buf * BUF) + (2 * e / D) * LDN + 2 * e % D;
      a[0] *= scale;
      a[1] *= scale;
    }
  };
  int pairs = 0;
  for (int base = lo; base < n; base += NT) {
    const int b = base + threadIdx.x;
    int total;
    const int pos = compact_position(b < n && flag(b), warp_counts, &total);
    if (pos >= 0) list[pos] = b;
    __syncthreads();
    if constexpr (ASYNC) {
      double scale = total > 0 ? issue(0, 0) : 1.0;
      for (int m = 0; m < total; ++m) {
        const int buf = m & 1;
        double next = 1.0;
        if (m + 1 < total) {
          next = issue(m + 1, buf ^ 1);  // that buffer was last read a barrier ago
          async_wait<1>();
        } else {
          async_wait<0>();
        }
        rescale(buf, scale);
        __syncthreads();
#pragma unroll
        for (int c = 0; c < NR; ++c) t[c].nn(sA + buf * BUF, LDN, sB + buf * BUF + c * DL, LDN);
        __syncthreads();
        scale = next;
      }
    } else {
      for (int m = 0; m < total; ++m) {
        const int bb = list[m];
        double scale;
        const double* L = left(bb, &scale);
        stage<D, E, C>(sA, LDN, L, scale);
        const double* right = phi + (size_t)(start + bb - blk0) * ncs * DD;
#pragma unroll
        for (int c = 0; c < NR; ++c) stage<D, E, C>(sB + c * DL, LDN, right + c * DD, 1.0);
        __syncthreads();
#pragma unroll
        for (int c = 0; c < NR; ++c) t[c].nn(sA, LDN, sB + c * DL, LDN);
        __syncthreads();
      }
    }
    pairs += total;
  }
  return pairs;
}

// one value of rho: stored, or added atomically when several thread blocks (row groups) share
// its grid block
__device__ __forceinline__ void put_rho(double* out, double v, bool shared_block) {
  if (shared_block) {
    atomicAdd(out, v);
  } else {
    *out = v;
  }
}

// rho[o][g d + i] = the sum of the partial sums acc[o] of the threads that own point i
template <int NRHO, int D>
__device__ __forceinline__ void write_rho(const double* acc, double* red, double* rho, int g,
                                          int npts_pad, bool shared_block) {
  constexpr int RS = NT / D;
#pragma unroll
  for (int o = 0; o < NRHO; ++o) red[o * NT + threadIdx.x] = acc[o];
  __syncthreads();
  if (threadIdx.x < D) {
#pragma unroll
    for (int o = 0; o < NRHO; ++o) {
      double s = 0.0;
      for (int k = 0; k < RS; ++k) s += red[o * NT + k * D + threadIdx.x];
      put_rho(rho + (size_t)o * npts_pad + (size_t)g * D + threadIdx.x, s, shared_block);
    }
  }
}

// The grid block and the row group of this thread block: the row_groups blocks of one grid
// block are consecutive, so they run at one time and read its AO tiles once from device
// memory, the others from L2 (one block per grid block re-read them per row from DRAM).
__device__ __forceinline__ int density_block(int g0, int row_groups, int* group) {
  *group = blockIdx.x % row_groups;
  return g0 + blockIdx.x / row_groups;
}

// Shared memory of the density kernels: one buffer (two with ASYNC) of [left tile (D or C^T) |
// NR right tiles], the R tiles and the final reduction from the first right tiles on, then the
// tensor-core scratch. The host computes the same size (gpu/kernels.py: density_smem).
template <int NRHO, int NR, int D, int MMA, bool ASYNC>
struct DensitySmem {
  typedef typename Elem<MMA>::type E;
  typedef DensityBuffer<NR, D, MMA> B;
  static constexpr int DL = B::DL, LEFT = B::LEFT;
  static constexpr int RB = NR * DL * 8 > NRHO * NT * 8 ? NR * DL * 8 : NRHO * NT * 8;
  static constexpr int BUFFERS = (ASYNC ? 2 : 1) * B::BYTES;
  static constexpr int END = BUFFERS > LEFT + align128(RB) ? BUFFERS : LEFT + align128(RB);
  E* sA;  // buffer 0; buffer 1 follows it (product_row)
  E* sB;
  double* sR;
  void* scratch;
  __device__ explicit DensitySmem(unsigned char* smem)
      : sA(reinterpret_cast<E*>(smem)),
        sB(reinterpret_cast<E*>(smem + LEFT)),
        sR(reinterpret_cast<double*>(smem + LEFT)),
        scratch(smem + END) {}
};

// The skeleton of both density kernels, row_groups thread blocks per grid block g: for each
// output row r = group, group + row_groups, ... below ``rows``, ``products(r, t, sm, list,
// warp_counts)`` accumulates NR tiles t and returns the products executed (uniform over the
// block); the tiles go to shared memory, where ``contract(r, e, sR, acc)`` adds element e of
// them to this thread's sums; then rho of g.
template <int NRHO, int NR, int D, int MMA, bool ASYNC, typename Products, typename Contract>
__device__ __forceinline__ void density_rows(int g, int rows, int group, int row_groups,
                                             Products products, Contract contract, double* rho,
                                             int npts_pad) {
  constexpr int DD = D * D, RS = NT / D, PT = DD / NT;
  KD_DYNAMIC_SMEM(smem);
  const DensitySmem<NRHO, NR, D, MMA, ASYNC> sm(smem);
  __shared__ int list[NT];
  __shared__ int warp_counts[NWARP];
  const int i = threadIdx.x % D, u0 = threadIdx.x / D;
  double acc[NRHO] = {};
  for (int r = group; r < rows; r += row_groups) {
    Tile<D, MMA> t[NR];
#pragma unroll
    for (int c = 0; c < NR; ++c) t[c].zero();
    if (products(r, t, sm, list, warp_counts) == 0) continue;  // uniform
#pragma unroll
    for (int c = 0; c < NR; ++c) t[c].store(sm.sR + c * DD, D, sm.scratch);
    __syncthreads();
#pragma unroll
    for (int m = 0; m < PT; ++m) contract(r, (u0 + m * RS) * D + i, sm.sR, acc);
    __syncthreads();
  }
  write_rho<NRHO, D>(acc, sm.sR, rho, g, npts_pad, row_groups > 1);
}

// FP64 tensor-core tiles: <= 128 registers, two thread blocks per SM (both staging modes)
template <int XC, int D, int MMA, int ASYNC>
__global__ void __launch_bounds__(NT, MMA == 1 ? 2 : 1)
    kd_density(const double* __restrict__ phi, const int ncs, const int* __restrict__ col_ptr,
               const int* __restrict__ row_idx, const double* __restrict__ phimax,
               const double* __restrict__ dtiles, const double* __restrict__ dmax, const int nbb,
               const int g0, const int row_groups, const int blk0, const double t_b,
               const double t_d, double* __restrict__ rho, const int npts_pad,
               unsigned long long* __restrict__ counter) {
  typedef Xc<XC> X;
  constexpr int DD = D * D;
  int group;
  const int g = density_block(g0, row_groups, &group);
  const int start = col_ptr[g], n = col_ptr[g + 1] - start;
  if (n == 0) return;
  unsigned long long executed = 0;
  // row a: R_pg = sum_q D_pq Phi_qg for the kept basis block p = row_idx[start + a]
  auto products = [&](int a, Tile<D, MMA>* t, const auto& sm, int* list, int* warp_counts) {
    const int p = row_idx[start + a];
    const double pmax = phimax[start + a];
    // Eq. 17 in both orientations; off-diagonal pairs of a symmetric sum count twice
    auto flag = [&](int b) {
      const double dm = dmax[p * nbb + row_idx[start + b]];
      return dm >= t_b && dm * fmax(pmax, phimax[start + b]) >= t_d;
    };
    auto dtile = [&](int b, double* scale) {
      *scale = (X::SYM && b != a) ? 2.0 : 1.0;
      executed += (X::SYM && b != a) ? 2 : 1;
      return dtiles + ((size_t)p * nbb + row_idx[start + b]) * DD;
    };
    return product_row<X::NRIGHT, D, MMA, ASYNC>(t, X::SYM ? a : 0, n, flag, dtile, phi, start,
                                                 blk0,
                                          ncs, sm.sA, sm.sB, list, warp_counts);
  };
  // R contracted with Phi_pg over the rows u
  auto contract = [&](int a, int e, const double* sR, double* acc) {
    const double* left = phi + (size_t)(start + a - blk0) * ncs * DD;
    const double r0 = sR[e], l0 = left[e];
    acc[0] = fma(l0, r0, acc[0]);
    if (XC == 1) {
#pragma unroll
      for (int k = 1; k < 4; ++k) acc[k] = fma(2.0 * left[k * DD + e], r0, acc[k]);
    }
    if (XC == 2) {
      double tau = 0.0;
#pragma unroll
      for (int k = 1; k < 4; ++k) {
        const double lk = left[k * DD + e], rk = sR[k * DD + e];
        acc[k] += lk * r0 + l0 * rk;
        tau = fma(lk, rk, tau);
      }
      acc[4] = fma(0.5, tau, acc[4]);
    }
  };
  density_rows<X::NRHO, X::NRIGHT, D, MMA, ASYNC>(g, n, group, row_groups, products, contract,
                                                  rho, npts_pad);
  if (threadIdx.x == 0) atomicAdd(counter, executed);
}

template <int XC, int D, int MMA, int ASYNC>
__global__ void __launch_bounds__(NT, MMA == 1 ? 2 : 1)  // as kd_density
    kd_density_orb(const double* __restrict__ phi, const int ncs, const int* __restrict__ col_ptr,
                   const int* __restrict__ row_idx, const double* __restrict__ phimax,
                   const double* __restrict__ ctiles, const double* __restrict__ cmax,
                   const int nbb, const int nob, const int g0, const int row_groups,
                   const int blk0, const double t_d, double* __restrict__ rho,
                   const int npts_pad, unsigned long long* __restrict__ counter) {
  typedef Xc<XC> X;
  constexpr int DD = D * D;
  // the gradient needs C^T grad Phi: no left AO factor to take it from
  constexpr int NORB = XC == 0 ? 1 : 4;
  int group;
  const int g = density_block(g0, row_groups, &group);
  const int start = col_ptr[g], n = col_ptr[g + 1] - start;
  if (n == 0) return;
  unsigned long long executed = 0;
  // row o: R_og = sum_q C^T_oq Phi_qg over the kept blocks q of g
  auto products = [&](int o, Tile<D, MMA>* t, const auto& sm, int* list, int* warp_counts) {
    auto flag = [&](int b) {
      return cmax[o * nbb + row_idx[start + b]] * phimax[start + b] >= t_d;
    };
    auto ctile = [&](int b, double* scale) {
      *scale = 1.0;
      ++executed;
      return ctiles + ((size_t)o * nbb + row_idx[start + b]) * DD;
    };
    return product_row<NORB, D, MMA, ASYNC>(t, 0, n, flag, ctile, phi, start, blk0, ncs, sm.sA,
                                            sm.sB,
                                     list, warp_counts);
  };
  // rows u of R are orbitals, columns grid points
  auto contract = [&](int, int e, const double* sR, double* acc) {
    const double r0 = sR[e];
    acc[0] = fma(r0, r0, acc[0]);
    if (XC != 0) {
      double tau = 0.0;
#pragma unroll
      for (int k = 1; k < 4; ++k) {
        const double rk = sR[k * DD + e];
        acc[k] = fma(2.0 * r0, rk, acc[k]);
        tau = fma(rk, rk, tau);
      }
      if (XC == 2) acc[4] = fma(0.5, tau, acc[4]);
    }
  };
  density_rows<X::NRHO, NORB, D, MMA, ASYNC>(g, nob, group, row_groups, products, contract, rho,
                                             npts_pad);
  if (threadIdx.x == 0) atomicAdd(counter, executed);
}

// One warp's 32 x 32 accumulator: 2 x 4 blocks of 16 x 8
typedef double WarpAcc[2][4][4];

__device__ __forceinline__ void zero_acc(WarpAcc& acc) {
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int c = 0; c < 4; ++c)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[r][c][i] = 0.0;
}

__device__ __forceinline__ void store_acc(double* C, int ldc, const WarpAcc& acc) {
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int c = 0; c < 4; ++c) store_c(C + 16 * r * ldc + 8 * c, ldc, acc[r][c]);
}

// One warp: the 32 x 32 product acc += A B over the inner indices [k0, k0 + 16) (A: 32 rows,
// row-major; B: row-major with 32 columns, or its transpose's 32 rows with BT), as 2 x 4 MMA
// blocks, so every operand fragment feeds two or four products. With W (BT), B's rows k are
// scaled by the weights W[k] on their way into the products, so the weighing needs no pass over
// shared memory. SW: swizzled tiles (tile_at).
template <bool BT, bool SW = false>
__device__ __forceinline__ void warp_product16(WarpAcc& acc, const double* A, int lda,
                                               const double* B, int ldb, int k0,
                                               const double* W = nullptr) {
  const int t = threadIdx.x & 3;
  // one step of 8 at a time: the accumulators take half of the 128 registers that two thread
  // blocks per SM leave
#pragma unroll 1
  for (int k = k0; k < k0 + 16; k += 8) {
    double a[2][4], b[4][2];
#pragma unroll
    for (int c = 0; c < 4; ++c) load_b<BT, SW>(b[c], B, ldb, k, 8 * c);
#pragma unroll
    for (int r = 0; r < 2; ++r) load_a<SW>(a[r], A, lda, 16 * r, k);
    if (BT && W != nullptr) {  // uniform over the warp
      const double w0 = W[k + t], w1 = W[k + t + 4];
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        b[c][0] *= w0;
        b[c][1] *= w1;
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) mma16x8x8(acc[r][c], a[r], b[c]);
  }
}

// kd_density_orb_warp (d = 32, FP64 tensor cores): the orbital-form densities with warp tiles.
// row_groups thread blocks per grid block g; in group s, warp w takes the orbital blocks
// o = s + row_groups w, then row_groups * 8 further, ...; for each
// component c it accumulates R_og,c = sum_q C^T_oq Phi_qg,c as 2 x 4 MMA blocks over halves
// of 16 basis functions staged in its own shared-memory slice, keeping R_og,0 in registers while
// the derivative components follow. The element products (R0 R0, R0 Rk, Rk Rk) are summed over
// the 32 orbitals through the slice, lane i owning grid point i; the warps' sums meet at the end.
// Shared memory: 8 slices of 32 x 20 + 16 x 36 doubles (gpu/kernels.py).
template <int XC>
__global__ void __launch_bounds__(NT, 1)  // two 32 x 32 accumulators per warp: up to 255 registers
    kd_density_orb_warp(const double* __restrict__ phi, const int ncs,
                        const int* __restrict__ col_ptr, const int* __restrict__ row_idx,
                        const double* __restrict__ phimax, const double* __restrict__ ctiles,
                        const double* __restrict__ cmax, const int nbb, const int nob,
                        const int g0, const int row_groups, const int blk0, const double t_d,
                        double* __restrict__ rho, const int npts_pad,
                        unsigned long long* __restrict__ counter) {
  typedef Xc<XC> X;
  constexpr int D = 32, DD = D * D, H = 16, LDA = H + 4, LDB = D + 4;
  constexpr int SLICE = D * LDA + H * LDB;  // also holds one 32 x 32 product tile
  KD_DYNAMIC_SMEM(smem);
  __shared__ double red[X::NRHO][NWARP][D];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  double* sA = reinterpret_cast<double*>(smem) + warp * SLICE;
  double* sB = sA + D * LDA;
  int group;
  const int g = density_block(g0, row_groups, &group);
  const int start = col_ptr[g], n = col_ptr[g + 1] - start;
  if (n == 0) return;
  double acc[X::NRHO] = {};  // of grid point ``lane``
  unsigned long long executed = 0;

  // r = R_og,c = sum over the kept blocks q of g that pass the screening of C^T_oq Phi_qg,c
  auto product = [&](WarpAcc& r, int o, int c) {
    zero_acc(r);
    for (int b = 0; b < n; ++b) {
      const int q = row_idx[start + b];
      if (cmax[o * nbb + q] * phimax[start + b] < t_d) continue;  // uniform over the warp
      executed += c == 0;
      const double* ct = ctiles + ((size_t)o * nbb + q) * DD;  // orbitals x basis functions
      const double* ph = phi + ((size_t)(start + b - blk0) * ncs + c) * DD;  // functions x points
      for (int h = 0; h < D; h += H) {
        for (int e = lane; e < D * H; e += 32)
          sA[(e / H) * LDA + e % H] = ct[(e / H) * D + h + e % H];
        for (int e = lane; e < H * D; e += 32)
          sB[(e / D) * LDB + e % D] = ph[(h + e / D) * D + e % D];
        __syncwarp();
        warp_product16<false>(r, sA, LDA, sB, LDB, 0);
        __syncwarp();  // the slice is restaged next
      }
    }
  };
  // sum over the orbitals (rows) of x * y at grid point ``lane`` (column), through the slice
  auto column_dot = [&](const WarpAcc& x, const WarpAcc& y) {
    WarpAcc t;
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c)
#pragma unroll
        for (int i = 0; i < 4; ++i) t[r][c][i] = x[r][c][i] * y[r][c][i];
    store_acc(sA, D, t);
    __syncwarp();
    double s = 0.0;
#pragma unroll 8
    for (int u = 0; u < D; ++u) s += sA[u * D + lane];
    __syncwarp();
    return s;
  };
  for (int o = group + row_groups * warp; o < nob; o += row_groups * NWARP) {
    WarpAcc r0;
    product(r0, o, 0);
    acc[0] += column_dot(r0, r0);
    if (XC != 0) {
      for (int k = 1; k < 4; ++k) {
        WarpAcc rk;
        product(rk, o, k);
        acc[k] += 2.0 * column_dot(r0, rk);
        if (XC == 2) acc[4] += 0.5 * column_dot(rk, rk);
      }
    }
  }
#pragma unroll
  for (int v = 0; v < X::NRHO; ++v) red[v][warp][lane] = acc[v];
  __syncthreads();
  if (threadIdx.x < D) {
#pragma unroll
    for (int v = 0; v < X::NRHO; ++v) {
      double s = 0.0;
#pragma unroll
      for (int w = 0; w < NWARP; ++w) s += red[v][w][threadIdx.x];
      put_rho(rho + (size_t)v * npts_pad + (size_t)g * D + threadIdx.x, s, row_groups > 1);
    }
  }
  if (lane == 0) atomicAdd(counter, executed);
}

// ---- the potential: F_pr += sum_g (terms of grid block g), one output tile (p, r) per block ----

#define KD_POTENTIAL_PARAMS                                                                     \
  const double *__restrict__ phi, const int ncs, const double *__restrict__ aow,                \
      const double *__restrict__ amax, const int *__restrict__ row_ptr,                         \
      const int *__restrict__ col_idx, const int *__restrict__ row_blk,                         \
      const double *__restrict__ phimax, const double *__restrict__ w0,                         \
      const double *__restrict__ wt, const double *__restrict__ wmax0,                          \
      const double *__restrict__ wmaxt, const int *__restrict__ tiles, const int nseg,          \
      const int seg_blocks, const int g0, const int g1, const int blk0, const double t_d,       \
      double *__restrict__ F, const int nao_pad, unsigned long long *__restrict__ counter

// Term j of an executed grid block g: F_pr += L diag(w) R^T (w = 1 where null). LDA:
// Phi_p (w Phi_r)^T; GGA: Phi_p A_r^T + A_p Phi_r^T with A = sum_c wv_c Phi_c (wv_0 halved on
// the host); meta-GGA adds sum_k Phi_p,k diag(w_tau) Phi_r,k^T (w_tau halved on the host).
template <int XC>
struct Terms {
  static constexpr int N = XC == 0 ? 1 : (XC == 1 ? 2 : 5);
  // whether term j carries grid weights (w below is then set)
  __device__ __forceinline__ static bool weighted(int j) { return XC == 0 || (XC == 2 && j >= 2); }
  const double* L;
  const double* R;
  const double* w;
  template <int D>
  __device__ __forceinline__ static Terms get(int j, int g, int bp, int br, const double* phi,
                                              int ncs, const double* aow, const double* w0,
                                              const double* wt) {
    constexpr int DD = D * D;
    const double* P = phi + (size_t)bp * ncs * DD;
    const double* R = phi + (size_t)br * ncs * DD;
    if (XC == 0) return {P, R, w0 + (size_t)g * D};
    if (j == 0) return {P, aow + (size_t)br * DD, nullptr};
    if (j == 1) return {aow + (size_t)bp * DD, R, nullptr};
    return {P + (j - 1) * DD, R + (j - 1) * DD, wt + (size_t)g * D};
  }
};

// Eq. 17 bound of the terms of block pair (bp, br) at grid block g (kept blocks; amax indexed
// from the batch's first block blk0)
template <int XC>
__device__ __forceinline__ double pair_bound(int bp, int br, int g, const double* phimax,
                                             const double* amax, const double* wmax0,
                                             const double* wmaxt, int blk0) {
  if (XC == 0) return phimax[bp] * phimax[br] * wmax0[g];
  double b = phimax[bp] * amax[br - blk0] + amax[bp - blk0] * phimax[br];
  if (XC == 2) b += phimax[bp] * phimax[br] * wmaxt[g];
  return b;
}

// The grid blocks of the block's segment shared by rows p and r (Eq. 15 intersection) that pass
// Eq. 17, compacted NT at a time into (list_a, list_b), their BCS(R) entries in rows p and r;
// ``run(total)`` executes a chunk's products. Returns the executed grid blocks (uniform).
template <int XC, typename Run>
__device__ __forceinline__ unsigned long long for_each_pair_chunk(
    int ps, int pe, int rs, int re, const int* __restrict__ col_idx,
    const int* __restrict__ row_blk, const double* __restrict__ phimax,
    const double* __restrict__ amax, const double* __restrict__ wmax0,
    const double* __restrict__ wmaxt, int blk0, double t_d, int* list_a, int* list_b,
    int* warp_counts, Run run) {
  // walk the shorter row, find its grid blocks in the longer one
  const bool walk_p = (pe - ps) <= (re - rs);
  const int ws = walk_p ? ps : rs, we = walk_p ? pe : re;
  const int ss = walk_p ? rs : ps, se = walk_p ? re : pe;
  unsigned long long executed = 0;
  for (int base = ws; base < we; base += NT) {
    const int e = base + threadIdx.x;
    int flag = 0, k = 0;
    if (e < we) {
      const int g = col_idx[e];
      k = lower_bound(col_idx, ss, se, g);
      if (k < se && col_idx[k] == g) {
        const int bp = row_blk[walk_p ? e : k], br = row_blk[walk_p ? k : e];
        flag = pair_bound<XC>(bp, br, g, phimax, amax, wmax0, wmaxt, blk0) >= t_d;
      }
    }
    int total;
    const int pos = compact_position(flag, warp_counts, &total);
    if (pos >= 0) {
      list_a[pos] = walk_p ? e : k;
      list_b[pos] = walk_p ? k : e;
    }
    __syncthreads();
    run(total);
    __syncthreads();  // the lists are rewritten by the next chunk
    executed += total;
  }
  return executed;
}

// F_pr += C for an output tile C in shared memory (row pitch D), coalesced; atomically when
// several thread blocks (nseg > 1) add to it. Only F_pr: the host completes F from its
// transpose (engine.py, _PotentialPass.full_matrix), which spares strided mirrored writes.
template <int D>
__device__ __forceinline__ void add_tile(const double* sC, int p, int r, int nseg, double* F,
                                         int nao_pad) {
  for (int e = threadIdx.x; e < D * D; e += NT) {
    double* fpr = F + (size_t)(p * D + e / D) * nao_pad + r * D + e % D;
    if (nseg == 1) {  // one thread block per tile: no other writer
      *fpr += sC[e];
    } else {
      atomicAdd(fpr, sC[e]);
    }
  }
}

// tile (p, r)'s output and executed pair count (both orientations)
template <int D>
__device__ __forceinline__ void add_pair_tile(const double* sC, int p, int r, int nseg, double* F,
                                              int nao_pad, unsigned long long executed,
                                              unsigned long long* counter) {
  add_tile<D>(sC, p, r, nseg, F, nao_pad);
  if (threadIdx.x == 0) atomicAdd(counter, p == r ? executed : 2 * executed);
}

// Segment-major block order: the thread blocks that run at one time work on the same few
// segments of grid blocks, so the AO tiles they share are read from L2, not from device memory.
__device__ __forceinline__ void unit_and_segment(int nseg, int* unit, int* seg) {
  const int units = gridDim.x / nseg;
  *unit = blockIdx.x % units;
  *seg = blockIdx.x / units;
}

// The block's (tile, segment): a segment is seg_blocks grid blocks of the batch, so that tiles
// whose rows share many grid blocks are spread over several thread blocks. False when the rows
// share no grid block there.
struct TileRows {
  int p, r, ps, pe, rs, re;
  __device__ __forceinline__ bool init(const int* tiles, int nseg, int seg_blocks, int g0, int g1,
                                       const int* row_ptr, const int* col_idx) {
    int tile, seg;
    unit_and_segment(nseg, &tile, &seg);
    p = tiles[2 * tile];
    r = tiles[2 * tile + 1];
    const int gs = g0 + seg * seg_blocks, ge = min(gs + seg_blocks, g1);
    ps = lower_bound(col_idx, row_ptr[p], row_ptr[p + 1], gs);
    pe = lower_bound(col_idx, ps, row_ptr[p + 1], ge);
    rs = lower_bound(col_idx, row_ptr[r], row_ptr[r + 1], gs);
    re = lower_bound(col_idx, rs, row_ptr[r + 1], ge);
    return ps < pe && rs < re;
  }
};

// kd_potential: the whole block multiplies one d x d tile step at a time (Tile), from two
// buffers of [left | right] in shared memory (the first reused for the output tile) and the
// tensor-core scratch; the host computes the same size (gpu/kernels.py). Each thread loads the
// next step's elements into registers while the current step's product runs, so global latency
// overlaps the products (one barrier per step).
template <int XC, int D, int MMA>
__global__ void __launch_bounds__(NT, MMA == 1 || (MMA == 0 && D <= 32) ? 2 : 1)  // 2 blocks/SM
    kd_potential(KD_POTENTIAL_PARAMS) {
  typedef Smem<D, MMA> S;
  typedef typename S::E E;
  typedef Elem<MMA> C;
  typedef Terms<XC> T;
  constexpr int DD = D * D, LDS = S::LDS, PT = DD / NT;
  constexpr int TILE = align128(D * LDS * (int)sizeof(E));
  KD_DYNAMIC_SMEM(smem);
  E* sL[2] = {reinterpret_cast<E*>(smem), reinterpret_cast<E*>(smem + 2 * TILE)};
  E* sR[2] = {reinterpret_cast<E*>(smem + TILE), reinterpret_cast<E*>(smem + 3 * TILE)};
  double* sC = reinterpret_cast<double*>(smem);
  void* scratch = smem + (4 * TILE > DD * 8 ? 4 * TILE : align128(DD * 8));
  __shared__ int list_a[NT];
  __shared__ int list_b[NT];
  __shared__ int warp_counts[NWARP];
  TileRows t;
  if (!t.init(tiles, nseg, seg_blocks, g0, g1, row_ptr, col_idx)) return;

  // this thread's elements of a staged tile: rows e / D, one column (so one grid weight)
  const int col = threadIdx.x % D;
  double lreg[PT], rreg[PT];
  auto fetch = [&](int step) {
    const int m = step / T::N;
    const T op = T::template get<D>(step % T::N, col_idx[list_a[m]], row_blk[list_a[m]] - blk0,
                                    row_blk[list_b[m]] - blk0, phi, ncs, aow, w0, wt);
    const double w = op.w ? op.w[col] : 1.0;
#pragma unroll
    for (int k = 0; k < PT; ++k) {
      const int e = threadIdx.x + k * NT;
      lreg[k] = op.L[e];
      rreg[k] = w * op.R[e];
    }
  };
  auto put = [&](int buf) {
#pragma unroll
    for (int k = 0; k < PT; ++k) {
      const int e = threadIdx.x + k * NT;
      sL[buf][(e / D) * LDS + col] = C::from(lreg[k]);
      sR[buf][(e / D) * LDS + col] = C::from(rreg[k]);
    }
  };

  Tile<D, MMA> acc;
  acc.zero();
  auto run = [&](int total) {
    const int nsteps = total * T::N;
    if (nsteps > 0) {
      fetch(0);
      put(0);
    }
    __syncthreads();
    for (int step = 0; step < nsteps; ++step) {
      const int buf = step & 1;
      if (step + 1 < nsteps) fetch(step + 1);  // in flight during the product
      acc.nt(sL[buf], LDS, sR[buf], LDS);
      if (step + 1 < nsteps) put(buf ^ 1);  // the other buffer was last read a barrier ago
      __syncthreads();
    }
  };
  const unsigned long long executed =
      for_each_pair_chunk<XC>(t.ps, t.pe, t.rs, t.re, col_idx, row_blk, phimax, amax, wmax0,
                              wmaxt, blk0, t_d, list_a, list_b, warp_counts, run);
  if (__syncthreads_or(executed > 0) == 0) return;
  acc.store(sC, D, scratch);
  __syncthreads();
  add_pair_tile<D>(sC, t.p, t.r, nseg, F, nao_pad, executed, counter);
}

// kd_potential_warp (d = 32, FP64 tensor cores): the executed steps are split into halves of 16
// grid points and dealt to the warps round robin; each warp stages its half tiles (32 x 16, left
// and right, rows padded to 20 doubles) in its own shared-memory slice and accumulates the whole
// 32 x 32 output as 2 x 4 MMA blocks, so every fragment feeds two or four products and the warps
// run without block barriers between steps. The eight partial tiles are summed at the end.
// Shared memory: 8 x (left, right) slices, reused for the partial tiles (gpu/kernels.py).
template <int XC>
__global__ void __launch_bounds__(NT, 2) kd_potential_warp(KD_POTENTIAL_PARAMS) {
  typedef Terms<XC> T;
  constexpr int D = 32, H = 16, LDH = H + 4, HALF = D * LDH;
  KD_DYNAMIC_SMEM(smem);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  double* sL = reinterpret_cast<double*>(smem) + warp * 2 * HALF;
  double* sR = sL + HALF;
  __shared__ int list_a[NT];
  __shared__ int list_b[NT];
  __shared__ int warp_counts[NWARP];
  TileRows t;
  if (!t.init(tiles, nseg, seg_blocks, g0, g1, row_ptr, col_idx)) return;

  WarpAcc acc;
  zero_acc(acc);
  auto run = [&](int total) {
    for (int s = warp; s < total * T::N * 2; s += NWARP) {
      const int m = s / (2 * T::N), h = s % 2;
      const T op = T::template get<D>((s / 2) % T::N, col_idx[list_a[m]],
                                      row_blk[list_a[m]] - blk0, row_blk[list_b[m]] - blk0, phi,
                                      ncs, aow, w0, wt);
      // lanes 0-15 and 16-31 read two rows of 16 points per pass
      const int c = lane % H, pt = h * H + c;
      const double w = op.w ? op.w[pt] : 1.0;
#pragma unroll 4
      for (int row = lane / H; row < D; row += 2) {
        sL[row * LDH + c] = op.L[row * D + pt];
        sR[row * LDH + c] = w * op.R[row * D + pt];
      }
      __syncwarp();
      warp_product16<true>(acc, sL, LDH, sR, LDH, 0);
      __syncwarp();  // the slice is restaged by this warp's next step
    }
  };
  const unsigned long long executed =
      for_each_pair_chunk<XC>(t.ps, t.pe, t.rs, t.re, col_idx, row_blk, phimax, amax, wmax0,
                              wmaxt, blk0, t_d, list_a, list_b, warp_counts, run);
  if (__syncthreads_or(executed > 0) == 0) return;
  // partial tiles to the slices (8 x 32 x 32 doubles fit in the 8 x 2 x 32 x 20), then summed
  store_acc(reinterpret_cast<double*>(smem) + warp * D * D, D, acc);
  __syncthreads();
  double* sC = reinterpret_cast<double*>(smem);
  double sum[D * D / NT];
#pragma unroll
  for (int q = 0; q < D * D / NT; ++q) {
    const int e = threadIdx.x + q * NT;
    sum[q] = 0.0;
#pragma unroll
    for (int w = 0; w < NWARP; ++w) sum[q] += sC[w * D * D + e];
  }
  __syncthreads();
#pragma unroll
  for (int q = 0; q < D * D / NT; ++q) sC[threadIdx.x + q * NT] = sum[q];
  __syncthreads();
  add_pair_tile<D>(sC, t.p, t.r, nseg, F, nao_pad, executed, counter);
}

// kd_potential_group (d = 32, FP64 tensor cores): one thread block per G x G group of output
// tiles (G = 2 or 4), rows p_u = G P + u by columns r_v = G R + v, P <= R, and segment of the
// grid blocks. The grid blocks where one of the group's block pairs passes Eq. 17 are compacted
// with the mask of the pairs that pass; a step stages the left and right d x d tiles those
// pairs need (up to G of each: up to G^2 products from 2G tiles, where kd_potential stages two
// tiles per product) and runs exactly those products, so the executed pairs are kd_potential's.
// Steps are copied asynchronously into a ring of NSTAGE stages, NSTAGE - 1 steps ahead. The
// G^2 output tiles times two halves of the grid points are dealt to the warps (G = 2: one
// tile-half each; G = 4: tiles w and w + 8 over both halves), each as 2 x 4 MMA blocks,
// skipped where its pair does not pass; the partial tiles meet at the end.
// ``blkpos[p * ngb + g]`` is the kept block of (p, g) in BCS(C) order or -1; the scan covers
// only the grid blocks between the first and the last that both the group's rows and its
// columns keep (BCS(R) rows are sorted). Shared memory: NSTAGE = 3 stages x (2G swizzled tiles
// of 32 x 32 doubles and the step's 32 grid weights, which the products apply to the right
// tiles' fragments) (kernels.py).
#define KD_POTENTIAL_GROUP_PARAMS                                                               \
  const double *__restrict__ phi, const int ncs, const double *__restrict__ aow,                \
      const double *__restrict__ amax, const int *__restrict__ blkpos, const int ngb,          \
      const int nbb, const int *__restrict__ row_ptr, const int *__restrict__ col_idx,          \
      const double *__restrict__ phimax, const double *__restrict__ w0,          \
      const double *__restrict__ wt, const double *__restrict__ wmax0,                          \
      const double *__restrict__ wmaxt, const int *__restrict__ groups, const int nseg,        \
      const int seg_blocks, const int g0, const int g1, const int blk0, const double t_d,       \
      double *__restrict__ F, const int nao_pad, unsigned long long *__restrict__ counter

template <int XC, int G>
__global__ void __launch_bounds__(NT, G == 2 ? 2 : 1)  // G = 4: two 32 x 32 outputs per warp
    kd_potential_group(KD_POTENTIAL_GROUP_PARAMS) {
  typedef Terms<XC> T;
  static_assert(G == 2 || G == 4, "groups of 2 x 2 or 4 x 4 tiles");
  // a stage: 2G swizzled tiles, then the step's grid weights (warp_product16's W); three
  // stages, so that a stage is refilled two steps after it was read and one barrier per step
  // suffices, and two thread blocks per SM still fit for G = 2
  constexpr int D = 32, DD = D * D, TILE = DD, STAGE = 2 * G * TILE + D;
  constexpr int WEIGHTS = 2 * G * TILE, WPIECES = D / 2;
  constexpr int NSTAGE = 3;
  constexpr int PIECES = DD / 2;  // 16-byte copies per tile
  constexpr int NTILE = G * G, UNITS = 2 * NTILE / NWARP, NACC = NTILE > NWARP ? 2 : 1;
  constexpr int SPLIT = 2 * NACC / UNITS;  // warps whose partial sums make one output tile
  KD_DYNAMIC_SMEM(smem);
  double* sbuf = reinterpret_cast<double*>(smem);
  __shared__ int list_g[NT];
  __shared__ int list_b[2 * G][NT];  // kept blocks of (p_0 .. p_G-1, r_0 .. r_G-1)
  __shared__ int list_mask[NT];      // bit G u + v: pair (p_u, r_v) passes
  __shared__ int warp_counts[NWARP];
  __shared__ unsigned long long pairs;
  int group, seg;
  unit_and_segment(nseg, &group, &seg);
  const int P = groups[2 * group], R = groups[2 * group + 1];
  const int warp = threadIdx.x >> 5;
  auto row = [&](int k) { return k < G ? G * P + k : G * R + k - G; };  // of tile k of a stage
  // [gs, ge): the segment within the grid blocks kept on both sides of the group
  int first[2] = {g1, g1}, last[2] = {-1, -1};
  for (int k = 0; k < 2 * G; ++k) {
    const int p = row(k), side = k / G;
    if (p < nbb && row_ptr[p] < row_ptr[p + 1]) {
      first[side] = min(first[side], col_idx[row_ptr[p]]);
      last[side] = max(last[side], col_idx[row_ptr[p + 1] - 1]);
    }
  }
  const int gs = max(g0 + seg * seg_blocks, max(first[0], first[1]));
  const int ge = min(min(g0 + seg * seg_blocks + seg_blocks, g1), min(last[0], last[1]) + 1);

  WarpAcc acc[NACC];
#pragma unroll
  for (int n = 0; n < NACC; ++n) zero_acc(acc[n]);

  // the tiles a mask of passing pairs needs: bit k for tile k (left p_k, right r_(k - G))
  auto needed = [](int mask) {
    int need = 0;
#pragma unroll
    for (int u = 0; u < G; ++u)
#pragma unroll
      for (int v = 0; v < G; ++v)
        if (mask >> (G * u + v) & 1) need |= (1 << u) | (1 << (G + v));
    return need;
  };
  // the copies of step s (grid block list[s / N], term s % N) into stage ``st``: the tiles its
  // passing pairs need and, for a weighted term, the weights
  auto issue = [&](int s, int st) {
    const int m = s / T::N, term = s % T::N, g = list_g[m], need = needed(list_mask[m]);
    double* dst = sbuf + st * STAGE;
#pragma unroll
    for (int k = 0; k < 2 * G; ++k) {
      if (!(need >> k & 1)) continue;
      const int b = list_b[k][m] - blk0;
      const T op = T::template get<D>(term, g, b, b, phi, ncs, aow, w0, wt);
      const double* src = k < G ? op.L : op.R;
      for (int e = threadIdx.x; e < PIECES; e += NT)
        copy16_async(dst + k * TILE + tile_at<true>(2 * e / D, 2 * e % D, D), src + 2 * e);
    }
    if (T::weighted(term) && threadIdx.x < WPIECES) {
      const double* w = T::template get<D>(term, g, 0, 0, phi, ncs, aow, w0, wt).w;
      copy16_async(dst + WEIGHTS + 2 * threadIdx.x, w + 2 * threadIdx.x);
    }
    async_commit();
  };
  if (threadIdx.x == 0) pairs = 0;
  __syncthreads();  // before the first count
  bool ran = false;  // any grid block executed
  for (int base = gs; base < ge; base += NT) {
    const int g = base + threadIdx.x;
    int b[2 * G], mask = 0;
#pragma unroll
    for (int k = 0; k < 2 * G; ++k)
      b[k] = g < ge && row(k) < nbb ? blkpos[(size_t)row(k) * ngb + g] : -1;
#pragma unroll
    for (int u = 0; u < G; ++u)
#pragma unroll
      for (int v = 0; v < G; ++v)
        if (g < ge && b[u] >= 0 && b[G + v] >= 0)  // a block not kept: no pair
          mask |= (pair_bound<XC>(b[u], b[G + v], g, phimax, amax, wmax0, wmaxt, blk0) >= t_d)
                  << (G * u + v);
    // both orientations of an off-diagonal pair; a diagonal group runs (p_v, p_u) itself
    if (mask) atomicAdd(&pairs, (unsigned long long)__popc(mask) * (P != R ? 2 : 1));
    int total;
    const int pos = compact_position(mask != 0, warp_counts, &total);
    if (pos >= 0) {
      list_g[pos] = g;
      list_mask[pos] = mask;
#pragma unroll
      for (int k = 0; k < 2 * G; ++k) list_b[k][pos] = b[k];
    }
    __syncthreads();
    const int nsteps = total * T::N;
    // NSTAGE - 1 steps in flight ahead of the one computed; an empty group past the last step
    // keeps the count of groups uniform, so one wait covers every step
    for (int s = 0; s < NSTAGE - 1; ++s) s < nsteps ? issue(s, s) : async_commit();
    for (int s = 0; s < nsteps; ++s) {
      const int st = s % NSTAGE, ahead = s + NSTAGE - 1;
      async_wait<NSTAGE - 2>();  // step s landed
      // step s visible to all, and step s - 1 computed: its stage is refilled now
      __syncthreads();
      ahead < nsteps ? issue(ahead, ahead % NSTAGE) : async_commit();
      const double* tiles = sbuf + st * STAGE;
      const int mask = list_mask[s / T::N];
      const bool weighted = T::weighted(s % T::N);
#pragma unroll
      for (int n = 0; n < UNITS; ++n) {
        const int q = warp + NWARP * n, t = q % NTILE, half = q / NTILE;
        if (mask >> t & 1)  // uniform over the warp
          warp_product16<true, true>(acc[n % NACC], tiles + (t / G) * TILE, D,
                                     tiles + (G + t % G) * TILE, D, half * 16,
                                     weighted ? tiles + WEIGHTS : nullptr);
      }
    }
    __syncthreads();  // the last steps computed before the lists and stages are rewritten
    ran |= total > 0;
  }
  if (__syncthreads_or(ran) == 0) return;
  // the partial tiles through the stages: tile t's partial sums at t, t + NTILE, ...
#pragma unroll
  for (int n = 0; n < NACC; ++n) {
    const int q = warp + NWARP * n;
    store_acc(sbuf + (q % NTILE + NTILE * (SPLIT == 2 ? q / NTILE : 0)) * DD, D, acc[n]);
  }
  __syncthreads();
  if (SPLIT == 2) {  // the halves of each tile summed into the first
    for (int e = threadIdx.x; e < NTILE * DD; e += NT) sbuf[e] += sbuf[NTILE * DD + e];
    __syncthreads();
  }
  for (int t = 0; t < NTILE; ++t) {
    const int p = row(t / G), r = row(G + t % G);
    if (p < nbb && r < nbb) add_tile<D>(sbuf + t * DD, p, r, nseg, F, nao_pad);
  }
  if (threadIdx.x == 0) atomicAdd(counter, pairs);
}

// A_b = sum_{c<4} wv_c Phi_b,c on every kept block of the batch, and max |A_b|.
template <int D>
__global__ void __launch_bounds__(NT)
    kd_aow(const double* __restrict__ phi, const int ncs, const double* __restrict__ wv,
           const int npts_pad, const int* __restrict__ blk_col, const int blk0,
           double* __restrict__ aow, double* __restrict__ amax) {
  constexpr int DD = D * D;
  __shared__ double red[NT];
  const int b = blockIdx.x;
  const int g = blk_col[blk0 + b];
  const double* src = phi + (size_t)b * ncs * DD;
  double m = 0.0;
  for (int e = threadIdx.x; e < DD; e += NT) {
    const size_t pt = (size_t)g * D + e % D;
    double s = 0.0;
#pragma unroll
    for (int c = 0; c < 4; ++c) s = fma(wv[c * (size_t)npts_pad + pt], src[c * DD + e], s);
    aow[(size_t)b * DD + e] = s;
    m = fmax(m, fabs(s));
  }
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = NT / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmax(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) amax[b] = red[0];
}

// Block summaries (Eq. 11) of a batch of AO values straight from the evaluator's output
// ao[c][row][point] (comp x nao x npts): norm[gl * nbb + p] = max |Phi| over the d x d block of
// basis block p (rows[p d + u] is the evaluator row of layout position p d + u, -1 past nao)
// and grid block gl of the batch, over every component.
template <int D>
__global__ void __launch_bounds__(NT)
    kd_ao_norms(const double* __restrict__ ao, const int ncomp, const int nao, const int npts,
                const int* __restrict__ rows, const int nbb, double* __restrict__ norm) {
  constexpr int DD = D * D;
  __shared__ double red[NT];
  const int gl = blockIdx.x / nbb, p = blockIdx.x % nbb;
  double m = 0.0;
  for (int e = threadIdx.x; e < ncomp * DD; e += NT) {
    const int c = e / DD, u = (e % DD) / D, pt = gl * D + e % D;
    const int row = rows[p * D + u];
    if (row >= 0 && pt < npts) m = fmax(m, fabs(ao[((size_t)c * nao + row) * npts + pt]));
  }
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = NT / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmax(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) norm[blockIdx.x] = red[0];
}

// The kept blocks b0 .. b0 + gridDim.x - 1 of a batch whose first grid block is g0, copied from
// the evaluator's output into the BCS data layout data[b][c][u][i] (zeros past nao / npts).
template <int D>
__global__ void __launch_bounds__(NT)
    kd_ao_gather(const double* __restrict__ ao, const int ncomp, const int nao, const int npts,
                 const int* __restrict__ rows, const int* __restrict__ row_idx,
                 const int* __restrict__ blk_col, const int b0, const int g0,
                 double* __restrict__ data) {
  constexpr int DD = D * D;
  const int b = blockIdx.x;
  const int p = row_idx[b0 + b], gl = blk_col[b0 + b] - g0;
  double* dst = data + (size_t)b * ncomp * DD;
  for (int e = threadIdx.x; e < ncomp * DD; e += NT) {
    const int c = e / DD, u = (e % DD) / D, pt = gl * D + e % D;
    const int row = rows[p * D + u];
    dst[e] = (row >= 0 && pt < npts) ? ao[((size_t)c * nao + row) * npts + pt] : 0.0;
  }
}
