// special_airy_ai, special_log_ndtr and special_entr (SpecialAiryNdtr.cpp) against long double
// references computed here: Ai's Maclaurin series, log(erfc(-x / sqrt 2) / 2) and -x log x, over
// lengths at the chunk edges, strided inputs and float and double (also under the sanitizers).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "test_helpers.h"

namespace {

using namespace retorch;
using retorch::testing::values;

// Ai(x) = c1 f(x) - c2 g(x), the series summed in long double until the terms stop mattering
// (for |x| <= 6 the cancellation costs about 5 of long double's 19 digits).
double airy_reference(double xd) {
  const long double x = xd, z = x * x * x;
  long double f = 1, g = x, m = 1, n = x;
  for (int k = 1; k < 400; k += 3) {
    m *= z / ((k + 1) * (k + 2));
    n *= z / ((k + 2) * (k + 3));
    f += m;
    g += n;
    if (std::fabs(m) < 1e-30L * std::fabs(f) && std::fabs(n) < 1e-30L * std::fabs(g) + 1e-300L)
      break;
  }
  return double(0.355028053887817239260L * f - 0.258819403792806798405L * g);
}

// (log1p of the upper tail from -1 up, where 1 - tail/2 would round the tail away)
double log_ndtr_reference(double x) {
  const long double t = (long double)x / std::sqrt(2.0L);
  return double(x < -1 ? std::log(std::erfc(-t) / 2) : std::log1p(-std::erfc(t) / 2));
}

double entr_reference(double x) {
  return x > 0 ? double(-(long double)x * std::log((long double)x)) : x == 0 ? 0.0 : -INFINITY;
}

struct Case {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> want;
  double lo, hi, scale, rtol_float, rtol_double;  // |got - want| <= rtol (|want| + scale)
  double loose_below = -INFINITY;  // below it, |got - want| <= 5e-6 (see airy_ai's case)
};

TEST(SpecialAiryNdtr, MatchLongDoubleReferencesOverLengthsAndLayouts) {
  const std::vector<Case> cases = {
      {"airy_ai", [](const Tensor& t) { return special_airy_ai(t); }, airy_reference, -6, 6, 0.5,
       2e-6, 1e-12, -2.09},  // Cephes' oscillating form (torch's) holds to 3e-6 below -2.09
      {"log_ndtr", [](const Tensor& t) { return special_log_ndtr(t); }, log_ndtr_reference, -60, 8,
       0, 2e-6, 1e-13},
      {"entr", [](const Tensor& t) { return special_entr(t); }, entr_reference, -1, 30, 0, 2e-6,
       1e-14},
  };
  for (const Case& c : cases) {
    for (ScalarType dtype : {kFloat, kDouble}) {
      const double rtol = dtype == kFloat ? c.rtol_float : c.rtol_double;
      for (int64_t n : {1, 7, 8, 9, 255, 256, 257, 1001}) {
        const Tensor x = n == 1 ? full({1}, c.lo, TensorOptions(dtype))
                                : linspace(c.lo, c.hi, n, TensorOptions(dtype));
        const Tensor strided = stack({x, x}, 1).select(1, 1);
        const std::vector<double> xs = values(x), g = values(c.op(x)), g2 = values(c.op(strided));
        for (size_t i = 0; i < xs.size(); ++i) {
          const double w = c.want(xs[i]);
          const std::string what = std::string(c.name) + " " + std::string(dtype_name(dtype)) +
                                   " n=" + std::to_string(n) + " at x = " + std::to_string(xs[i]);
          if (std::isinf(w)) {
            EXPECT_EQ(g[i], w) << what;
            EXPECT_EQ(g2[i], w) << what << " strided";
            continue;
          }
          EXPECT_NEAR(g[i], w, xs[i] < c.loose_below ? 5e-6 : rtol * (std::fabs(w) + c.scale))
              << what;
          EXPECT_EQ(g[i], g2[i]) << what << " strided";
        }
      }
    }
  }
}

TEST(SpecialAiryNdtr, SpecialValuesAsPyTorch) {
  const double inf = INFINITY;
  const std::vector<double> ai = values(special_airy_ai(tensor({inf, -inf, NAN, 104.0, 0.0})));
  EXPECT_TRUE(std::isnan(ai[0]));
  EXPECT_TRUE(std::isnan(ai[1]));
  EXPECT_TRUE(std::isnan(ai[2]));
  EXPECT_EQ(ai[3], 0.0);
  EXPECT_NEAR(ai[4], 0.355028053887817239260, 1e-7);
  const std::vector<double> ln =
      values(special_log_ndtr(tensor({-inf, inf, NAN, -1e4}, TensorOptions(kDouble))));
  EXPECT_EQ(ln[0], -inf);
  EXPECT_EQ(ln[1], 0.0);
  EXPECT_TRUE(std::isnan(ln[2]));
  // Far in the tail: -x^2/2 - log(-x) - log(sqrt(2 pi)) to leading order.
  EXPECT_NEAR(ln[3], -5e7 - std::log(1e4) - 0.5 * std::log(2 * M_PI), 1e-2);
  const std::vector<double> en = values(special_entr(tensor({-0.5, 0.0, NAN, inf})));
  EXPECT_EQ(en[0], -inf);
  EXPECT_EQ(en[1], 0.0);
  EXPECT_TRUE(std::isnan(en[2]));
  EXPECT_EQ(en[3], -inf);
  // Integers compute in the default float dtype.
  EXPECT_EQ(special_entr(tensor({1, 2}, TensorOptions(kLong))).dtype(), kFloat);
}

}  // namespace
