// Small deterministic random helpers for samplers and transforms, built on the Philox Generator.
#pragma once
#include <cstdint>

#include "retorch/core/Generator.h"

namespace retorch::data {

// Note [Data randomness]
// Every random choice of the data pipeline comes from a Generator seeded by mixing fixed inputs:
// the sampler's permutation from (seed, epoch), a sample's transforms from (seed, epoch, index).
// Nothing depends on which worker thread loads a batch or when, so a run is reproducible for any
// num_workers.

/// Mixes words into one 64-bit seed (splitmix64 finalizer per word).
inline uint64_t mix_seed(uint64_t a, uint64_t b, uint64_t c = 0, uint64_t d = 0) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (uint64_t w : {a, b, c, d}) {
    uint64_t z = h ^ (w + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2));
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    h = z ^ (z >> 31);
  }
  return h;
}

/// One uniform 64-bit word from gen (advances it by one Philox counter).
inline uint64_t random_u64(Generator& gen) {
  auto [key, counter] = gen.reserve(1);
  auto r = philox4x32(key, counter);
  return (uint64_t(r[0]) << 32) | r[1];
}

/// A uniform double in [0, 1).
inline double random_uniform(Generator& gen) { return double(random_u64(gen) >> 11) * 0x1.0p-53; }

/// A uniform integer in [0, bound) (bound > 0); the multiply-shift bias is below 2^-64 * bound.
inline int64_t random_below(Generator& gen, int64_t bound) {
  return int64_t((static_cast<unsigned __int128>(random_u64(gen)) * uint64_t(bound)) >> 64);
}

}  // namespace retorch::data
