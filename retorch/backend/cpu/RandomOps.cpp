// Random kernels on Philox: each element draws from its own counter, so results do not
// depend on the number of threads.
#include <cmath>
#include <memory>
#include <type_traits>

#include "retorch/backend/cpu/CpuIsa.h"
#include "retorch/backend/cpu/Loops.h"
#include "retorch/backend/cpu/RandomAvx512.h"
#include "retorch/backend/cpu/VecMath.h"
#include "retorch/generated/Functions.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cpu {

namespace {

Generator& pick(const std::optional<Generator>& g) {
  return g ? const_cast<Generator&>(*g) : default_generator();
}

inline double u01_from(uint32_t a, uint32_t b) {
  uint64_t bits = (uint64_t(a) << 21) ^ uint64_t(b >> 11);  // 53 random bits
  return double(bits & ((uint64_t(1) << 53) - 1)) * (1.0 / 9007199254740992.0);
}

// Note [Scaled random bits]
// An integer in [0, range) from the 64 random bits hi:lo is the high half of their product with
// range (Lemire's method: bias at most range / 2^64, as a modulo's) instead of a 64-bit modulo,
// whose division per element kept the draw loops scalar (randint of 1M values 1.9x PyTorch's
// time). Below 2^32 (kNarrow) the product is two 32x32-bit ones, which vectorize with the Philox
// rounds; callers choose the form outside their loops.
template <bool kNarrow>
uint64_t scaled_bits(uint32_t hi, uint32_t lo, uint64_t range) {
  if constexpr (kNarrow) return (uint64_t(hi) * range + ((uint64_t(lo) * range) >> 32)) >> 32;
  else return uint64_t((unsigned __int128)((uint64_t(hi) << 32) | lo) * range >> 64);
}
constexpr uint64_t kNarrowRange = uint64_t(1) << 32;

// Runs fill(p, key, base, b, e) over ranges of [0, n) in parallel, element i of the contiguous
// buffer p from Philox block (key, base + i) of a reservation of n, and copies the buffer into
// self when self is not contiguous.
template <typename scalar_t, typename Fill>
void fill_philox(const Tensor& self, Generator& gen, const Fill& fill) {
  Tensor target =
      self.is_contiguous() ? self : make_empty(self.sizes(), self.dtype(), self.device());
  const int64_t n = target.numel();
  const auto [key, base] = gen.reserve(uint64_t(n));
  scalar_t* p = static_cast<scalar_t*>(target.impl()->data());
  parallel_for(0, n, 1 << 14, [&](int64_t b, int64_t e) { fill(p, key, base, b, e); });
  if (!self.is_contiguous()) self.copy_(target);
}

// Fills self with f(words) -> value, one Philox block per element.
template <typename scalar_t, typename F>
void fill_random(const Tensor& self, Generator& gen, const F& f) {
  fill_philox<scalar_t>(self, gen, [&](scalar_t* p, uint64_t key, uint64_t base, int64_t b,
                                       int64_t e) {
    for (int64_t i = b; i < e; ++i) p[i] = f(philox4x32(key, base + uint64_t(i)));
  });
}

// Note [Vector normal]
// normal_ is Box-Muller's cosine branch in double, mean + std * sqrt(-2 log(1 - u1)) *
// cos(2 pi u2), u1 and u2 from element i's Philox block as before; the log and cos run over
// chunks of 512 with SLEEF's vector forms (at most 1 ulp, as libm's) where libm's scalar calls
// took ~15 ns an element: randn of 1M floats, 2 threads, 17.5 -> 3.9 ms (PyTorch 3.2), of 16M
// 282 -> 62 ms (PyTorch 80). The numbers are the scalar formula's up to the last bit of the
// double log and cos (float32 results unchanged in a 3M-draw comparison), as the CUDA kernel's
// are (Note [CUDA random numbers]). On AVX-512 the Philox draws run sixteen at a time (Note
// [Vector Philox] in RandomAvx512.h, the same words): 1M floats 4.1 -> 3.0 ms.
template <typename scalar_t>
void fill_normal(const Tensor& self, Generator& gen, double mean, double std) {
  double probe = 1;
  const bool vec = vec_unary(VecFn::kLog, &probe, &probe, 0) &&
                   vec_unary(VecFn::kCos, &probe, &probe, 0);
  const bool vec_philox = cpu_isa() >= CpuIsa::kAvx512;  // Note [Vector Philox]
  fill_philox<scalar_t>(self, gen, [&](scalar_t* p, uint64_t key, uint64_t base, int64_t b,
                                       int64_t e) {
    constexpr int64_t kChunk = 512;
    alignas(64) double lg[kChunk], cs[kChunk];
    for (int64_t i0 = b; i0 < e; i0 += kChunk) {
      const int64_t m = std::min(kChunk, e - i0);
      if (!vec_philox || !normal_uniforms_avx512(key, base + uint64_t(i0), m, lg, cs)) {
        for (int64_t j = 0; j < m; ++j) {
          const auto w = philox4x32(key, base + uint64_t(i0 + j));
          lg[j] = 1.0 - u01_from(w[0], w[1]);
          cs[j] = 2.0 * M_PI * u01_from(w[2], w[3]);
        }
      }
      if (vec) {
        vec_unary(VecFn::kLog, lg, lg, m);
        vec_unary(VecFn::kCos, cs, cs, m);
      } else {
        for (int64_t j = 0; j < m; ++j) {
          lg[j] = std::log(lg[j]);
          cs[j] = std::cos(cs[j]);
        }
      }
      for (int64_t j = 0; j < m; ++j)
        p[i0 + j] = scalar_t(opmath_t<scalar_t>(mean + std * std::sqrt(-2.0 * lg[j]) * cs[j]));
    }
  });
}

}  // namespace

Tensor uniform_(const Tensor& self, double from, double to, std::optional<Generator> generator) {
  RT_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from,
           " > to=", to);
  if (self.device().is_meta()) return self;  // See Note [Meta through CPU kernels]
  RT_DISPATCH_FLOATING(self.dtype(), "uniform_", [&] {
    double range = to - from;
    fill_random<scalar_t>(self, pick(generator), [=](const std::array<uint32_t, 4>& w) {
      double u = u01_from(w[0], w[1]);
      using op_t = opmath_t<scalar_t>;
      op_t v = op_t(from + u * range);
      if (v >= op_t(to) && to > from) v = std::nextafter(op_t(to), op_t(from));
      return scalar_t(v);
    });
  });
  return self;
}

Tensor normal_(const Tensor& self, double mean, double std, std::optional<Generator> generator) {
  RT_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  if (self.device().is_meta()) return self;  // See Note [Meta through CPU kernels]
  RT_DISPATCH_FLOATING(self.dtype(), "normal_",
                       [&] { fill_normal<scalar_t>(self, pick(generator), mean, std); });
  return self;
}

Tensor random_from_(const Tensor& self, int64_t from, std::optional<int64_t> to,
                    std::optional<Generator> generator) {
  int64_t hi = to.value_or(int64_t(1) << std::min<int>(53, int(element_size(self.dtype()) * 8 - 1)));
  RT_CHECK(from < hi, "random_ expects 'from' to be less than 'to', but got from=", from,
           " >= to=", hi);
  if (self.device().is_meta()) return self;  // See Note [Meta through CPU kernels]
  uint64_t range = uint64_t(hi - from);
  RT_DISPATCH_ALL(self.dtype(), "random_", [&] {
    // See Note [Scaled random bits].
    auto draw = [&](auto narrow) {
      fill_random<scalar_t>(self, pick(generator), [=](const std::array<uint32_t, 4>& w) {
        const uint64_t r = scaled_bits<decltype(narrow)::value>(w[0], w[1], range);
        return scalar_t(opmath_t<scalar_t>(int64_t(r) + from));
      });
    };
    if (range <= kNarrowRange) draw(std::true_type());
    else draw(std::false_type());
  });
  return self;
}

Tensor bernoulli(const Tensor& self, std::optional<Generator> generator) {
  RT_CHECK(is_floating_type(self.dtype()), "bernoulli: expected a floating point tensor of "
           "probabilities, got ", self.dtype());
  if (self.device().is_meta()) return make_empty(self.sizes(), self.dtype(), self.device());
  Tensor p = self.contiguous();
  Tensor out = make_empty(self.sizes(), self.dtype(), self.device());
  RT_DISPATCH_FLOATING(self.dtype(), "bernoulli", [&] {
    const scalar_t* pp = static_cast<const scalar_t*>(p.impl()->data());
    for (int64_t i = 0; i < p.numel(); ++i) {
      double v = double(opmath_t<scalar_t>(pp[i]));
      RT_CHECK(v >= 0 && v <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", v);
    }
    const scalar_t* base = pp;
    int64_t idx = 0;
    (void)idx;
    Generator& gen = pick(generator);
    auto [key, off] = gen.reserve(uint64_t(out.numel()));
    scalar_t* o = out.data_ptr<scalar_t>();
    parallel_for(0, out.numel(), 1 << 14, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        auto w = philox4x32(key, off + uint64_t(i));
        o[i] = scalar_t(opmath_t<scalar_t>(u01_from(w[0], w[1]) < double(opmath_t<scalar_t>(base[i])) ? 1 : 0));
      }
    });
  });
  return out;
}

Tensor randperm(int64_t n, std::optional<Generator> generator, std::optional<ScalarType> dtype,
                std::optional<Device> device) {
  RT_CHECK(n >= 0, "randperm: n must be non-negative, got ", n);
  RT_CHECK(!device || device->is_cpu() || device->is_meta(),
           "randperm: the CPU backend cannot allocate on ", *device);
  Tensor out = make_empty({n}, dtype.value_or(kLong), device.value_or(Device(kCPU)));
  if (out.device().is_meta()) return out;  // See Note [Meta through CPU kernels]
  Generator& gen = pick(generator);
  auto [key, off] = gen.reserve(uint64_t(n));
  // Fisher-Yates: step i swaps i with j_i in [0, i], j_i drawn from Philox block off + i (Note
  // [Scaled random bits]). The draws are independent, so they run first, in a loop that
  // vectorizes and threads; the swaps then run in order, in the output itself when it is int64.
  // (A modulo and a Philox block inside the swap loop took randperm(65536) 0.76 ms, PyTorch 0.36;
  // a per-element choice of the product's width, zero-filled vectors and a copy out, 0.58.)
  std::unique_ptr<int64_t[]> pick_j(new int64_t[size_t(std::max<int64_t>(n, 1))]);
  int64_t* js = pick_j.get();
  auto draw = [&](auto narrow) {
    parallel_for(1, n, 1 << 14, [=](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const auto w = philox4x32(key, off + uint64_t(i));
        js[i] = int64_t(scaled_bits<decltype(narrow)::value>(w[0], w[1], uint64_t(i) + 1));
      }
    });
  };
  if (uint64_t(n) <= kNarrowRange) draw(std::true_type{});
  else draw(std::false_type{});
  Tensor perm = out.dtype() == kLong ? out : make_empty({n}, kLong, Device(kCPU));
  int64_t* pp = perm.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) pp[i] = i;
  for (int64_t i = n - 1; i > 0; --i) std::swap(pp[i], pp[js[i]]);
  if (!perm.is_same(out)) {
    RT_DISPATCH_NUMERIC(out.dtype(), "randperm", [&] {
      scalar_t* p = out.data_ptr<scalar_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = scalar_t(opmath_t<scalar_t>(pp[i]));
    });
  }
  return out;
}

}  // namespace retorch::cpu
