// Generator: a seeded Philox4x32-10 counter-based random source, reproducible across threads.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>

namespace retorch {

/// Philox4x32 with 10 rounds: maps (key, counter) to four random 32-bit words. constexpr, so
/// the CUDA kernels call this same function (nvcc's --expt-relaxed-constexpr) and draw the cpu
/// kernels' numbers.
constexpr std::array<uint32_t, 4> philox4x32(uint64_t key, uint64_t counter, uint64_t subseq = 0) {
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32);
  uint32_t c2 = uint32_t(subseq), c3 = uint32_t(subseq >> 32);
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = uint64_t(0xD2511F53u) * c0;
    uint64_t p1 = uint64_t(0xCD9E8D57u) * c2;
    uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c0 = n0;
    c1 = uint32_t(p1);
    c2 = n2;
    c3 = uint32_t(p0);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {c0, c1, c2, c3};
}

struct GeneratorImpl {
  std::mutex mutex;
  uint64_t seed = 67280421310721ull;
  uint64_t offset = 0;  // Philox counter: advanced by every op that draws numbers
};

/// A handle to a random generator; copies share state, like torch.Generator.
class Generator {
 public:
  Generator() : impl_(std::make_shared<GeneratorImpl>()) {}
  explicit Generator(uint64_t seed) : Generator() { manual_seed(seed); }

  void manual_seed(uint64_t seed);
  uint64_t initial_seed() const { return impl_->seed; }
  /// Seeds from a non-deterministic source and returns the seed.
  uint64_t seed();
  /// Reserves n counter values; returns (key, first counter).
  std::pair<uint64_t, uint64_t> reserve(uint64_t n);
  /// State as (seed, offset), for save/restore.
  std::array<uint64_t, 2> get_state() const;
  void set_state(std::array<uint64_t, 2> s);
  bool operator==(const Generator& o) const { return impl_ == o.impl_; }

 private:
  std::shared_ptr<GeneratorImpl> impl_;
};

/// The process-wide default CPU generator.
Generator& default_generator();
/// Seeds the default generator (torch.manual_seed).
void manual_seed(uint64_t seed);

}  // namespace retorch
