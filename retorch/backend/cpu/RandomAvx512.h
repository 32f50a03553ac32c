// Philox draws sixteen counters at a time on AVX-512 (RandomAvx512.cpp); callers check
// cpu_isa() >= CpuIsa::kAvx512.
#pragma once
#include <cstdint>

namespace retorch::cpu {

// Note [Vector Philox]
// normal_ spent most of its time in Philox, one element's 10 rounds at a time (GCC kept the
// loop scalar). Sixteen counters' rounds run together in 32-bit lanes (two such sets
// interleaved): vpmuludq gives the even and odd lanes' 64-bit products, whose halves are the
// rounds' high and low words. The words are philox4x32's, and the uniforms are made from them
// with the scalar code's exact operations (53-bit integers to double, one multiply by 2^-53;
// 1 - u and 2 pi u), so normal_'s numbers do not change. randn of 1M floats, 2 threads
// (`bench/bench_op_sweep.py randn`, three runs each): 4.11-4.18 -> 2.96-3.07 ms, PyTorch
// 3.18-3.52; what is left is SLEEF's double log and cos (44%) and Philox (35%).

/// For j < n, with w = philox4x32(key, first + j): u1[j] = 1 - u01(w[0], w[1]) and
/// u2[j] = 2 pi u01(w[2], w[3]) (RandomOps.cpp's u01_from). Returns false (nothing written)
/// where the build or the CPU has no AVX-512F/DQ.
bool normal_uniforms_avx512(uint64_t key, uint64_t first, int64_t n, double* u1, double* u2);

}  // namespace retorch::cpu
