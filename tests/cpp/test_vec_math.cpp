// Accuracy of retorch's own float32 vector math on every instruction set the CPU has: the
// rational tanh and GELU's rational erf (Note [Rational tanh]) over sweeps of floats up to 16,
// and the AVX-512 Philox draws of normal_.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "retorch/backend/cpu/CpuIsa.h"
#include "retorch/backend/cpu/RandomAvx512.h"
#include "retorch/core/Generator.h"
#include "test_helpers.h"

namespace {

using namespace retorch;

int32_t bits_of(float f) {
  int32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Every step-th float in [0, 16], with both signs.
std::vector<float> floats_to_16(uint32_t step) {
  std::vector<float> v;
  for (uint32_t b = 0; b <= 0x41800000u; b += step) {
    float f;
    std::memcpy(&f, &b, 4);
    v.push_back(f);
    v.push_back(-f);
  }
  return v;
}

Tensor tensor_of(const std::vector<float>& v) {
  Tensor x = empty({int64_t(v.size())});
  std::memcpy(x.data_ptr<float>(), v.data(), v.size() * sizeof(float));
  return x;
}

// Calls f(isa) with the kernels capped at each instruction set this CPU has, then restores.
template <typename F>
void for_each_isa(const F& f) {
  const cpu::CpuIsa saved = cpu::cpu_isa();
  for (cpu::CpuIsa isa : {cpu::CpuIsa::kScalar, cpu::CpuIsa::kAvx2, cpu::CpuIsa::kAvx512}) {
    if (isa > cpu::cpu_isa_supported()) continue;
    cpu::set_cpu_isa(cpu::cpu_isa_name(isa));
    f(isa);
  }
  cpu::set_cpu_isa(cpu::cpu_isa_name(saved));
}

TEST(VecMath, TanhWithinFiveUlpOfCorrectlyRoundedOnEachIsa) {
  // Every 131st float in [-16, 16], and every float in [8, 9.03] up to and around where tanh
  // starts rounding to 1 (where the rational, unclamped, evaluates to up to 1 + 2 ulp).
  std::vector<float> v = floats_to_16(131);
  for (float f = 8.f; f <= 9.03f; f = std::nextafter(f, 10.f)) v.push_back(f);
  const Tensor x = tensor_of(v);
  for_each_isa([&](cpu::CpuIsa isa) {
    Tensor y = x.tanh();
    const float* got = y.data_ptr<float>();
    int64_t worst = 0, exact = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      const float want = float(std::tanh(double(v[i])));
      const int64_t d = std::abs(int64_t(bits_of(got[i])) - int64_t(bits_of(want)));
      ASSERT_LE(d, 5) << "tanh(" << v[i] << ") = " << got[i] << ", correctly rounded " << want
                      << " on " << cpu::cpu_isa_name(isa);
      ASSERT_LE(std::fabs(got[i]), 1.f) << "tanh(" << v[i] << ") on " << cpu::cpu_isa_name(isa);
      if (std::fabs(want) == 1.f) {
        ASSERT_EQ(got[i], want) << "tanh(" << v[i] << ") saturates";
      }
      worst = std::max(worst, d);
      exact += d == 0;
    }
    // Mostly exact, not just within bounds (the polynomial's error is far below rounding).
    EXPECT_GT(double(exact) / double(v.size()), 0.85) << cpu::cpu_isa_name(isa);
  });
  // IEEE specials on each path.
  Tensor s = empty({4});
  float* sp = s.data_ptr<float>();
  sp[0] = INFINITY, sp[1] = -INFINITY, sp[2] = NAN, sp[3] = -0.f;
  for_each_isa([&](cpu::CpuIsa isa) {
    Tensor t = s.tanh();
    const float* tp = t.data_ptr<float>();
    EXPECT_EQ(tp[0], 1.f) << cpu::cpu_isa_name(isa);
    EXPECT_EQ(tp[1], -1.f) << cpu::cpu_isa_name(isa);
    EXPECT_TRUE(std::isnan(tp[2])) << cpu::cpu_isa_name(isa);
    EXPECT_EQ(bits_of(tp[3]), bits_of(-0.f)) << cpu::cpu_isa_name(isa);
  });
}

TEST(VecMath, GeluErfWithinFewUlpOfOneHalfXTimesOnePlusErf) {
  // GELU's erf (Note [Rational tanh]): x/2 * (1 + erf(x/sqrt(2))) against the same in double,
  // every 61st float in [-16, 16], within 4 units of (|x| + |gelu(x)|) * 2^-24: 7 ulp of erf
  // become |x|/2 * 7 ulp after the 1 +.
  const std::vector<float> v = floats_to_16(61);
  const Tensor x = tensor_of(v);
  for_each_isa([&](cpu::CpuIsa isa) {
    Tensor y = gelu(x);
    const float* got = y.data_ptr<float>();
    for (size_t i = 0; i < v.size(); ++i) {
      const double xd = v[i], want = 0.5 * xd * (1 + std::erf(xd * M_SQRT1_2));
      // (3.1 units on AVX2/AVX-512, 0.94 with the scalar path's libm erf)
      const double units = (std::fabs(want) + std::fabs(xd)) * 0x1p-24;
      ASSERT_LE(std::fabs(got[i] - want), 4 * units + 1e-45)
          << "gelu(" << v[i] << ") = " << got[i] << ", exact " << want << " on "
          << cpu::cpu_isa_name(isa);
    }
  });
}

// Note [Vector Philox]: the AVX-512 draws are philox4x32's words turned into normal_'s two
// uniforms exactly, including counters whose low word carries into the high one and lengths
// that end inside a set of sixteen.
TEST(VecPhilox, Avx512DrawsAreTheScalarOnes) {
  std::vector<double> u1(300), u2(300);
  const uint64_t key = 0x123456789abcdefULL;
  if (!cpu::normal_uniforms_avx512(key, 0, 1, u1.data(), u2.data()))
    GTEST_SKIP() << "no AVX-512F/DQ on this CPU";
  auto u01 = [](uint32_t a, uint32_t b) {
    const uint64_t bits = (uint64_t(a) << 21) ^ uint64_t(b >> 11);
    return double(bits) * (1.0 / 9007199254740992.0);
  };
  for (uint64_t first : {uint64_t(0), (uint64_t(1) << 32) - 150, (uint64_t(7) << 40) + 5}) {
    for (int64_t n : {1, 15, 16, 17, 31, 33, 300}) {
      std::fill(u1.begin(), u1.end(), -1.0);
      ASSERT_TRUE(cpu::normal_uniforms_avx512(key, first, n, u1.data(), u2.data()));
      for (int64_t j = 0; j < 300; ++j) {
        if (j >= n) {
          EXPECT_EQ(u1[size_t(j)], -1.0) << "wrote past n = " << n;
          continue;
        }
        const auto w = philox4x32(key, first + uint64_t(j));
        EXPECT_EQ(u1[size_t(j)], 1.0 - u01(w[0], w[1])) << first << " + " << j;
        EXPECT_EQ(u2[size_t(j)], 2.0 * M_PI * u01(w[2], w[3])) << first << " + " << j;
      }
    }
  }
}

}  // namespace
