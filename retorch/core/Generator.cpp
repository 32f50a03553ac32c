// Generator state and the default generator.
#include "retorch/core/Generator.h"

#include <chrono>
#include <random>

namespace retorch {

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> g(impl_->mutex);
  impl_->seed = seed;
  impl_->offset = 0;
}

uint64_t Generator::seed() {
  std::random_device rd;
  uint64_t s = (uint64_t(rd()) << 32) ^ rd() ^
               uint64_t(std::chrono::high_resolution_clock::now().time_since_epoch().count());
  manual_seed(s);
  return s;
}

std::pair<uint64_t, uint64_t> Generator::reserve(uint64_t n) {
  std::lock_guard<std::mutex> g(impl_->mutex);
  uint64_t first = impl_->offset;
  impl_->offset += n;
  return {impl_->seed, first};
}

std::array<uint64_t, 2> Generator::get_state() const {
  std::lock_guard<std::mutex> g(impl_->mutex);
  return {impl_->seed, impl_->offset};
}

void Generator::set_state(std::array<uint64_t, 2> s) {
  std::lock_guard<std::mutex> g(impl_->mutex);
  impl_->seed = s[0];
  impl_->offset = s[1];
}

Generator& default_generator() {
  static Generator* g = new Generator();
  return *g;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace retorch
