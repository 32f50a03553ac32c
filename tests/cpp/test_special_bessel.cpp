// The Bessel functions and orthogonal polynomials of SpecialBessel.cpp, SpecialCephes.cpp and
// SpecialPolynomials.cpp against the C++17 special functions of the standard library, over
// lengths that end inside and at the edges of their vector lanes and chunks, strided inputs,
// and float and double (also under the sanitizers).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "test_helpers.h"

namespace {

using namespace retorch;
using retorch::testing::values;

// n points spread over [lo, hi].
Tensor spread(int64_t n, double lo, double hi, ScalarType dtype) {
  return n == 1 ? full({1}, lo, TensorOptions(dtype)) : linspace(lo, hi, n, TensorOptions(dtype));
}

void expect_close(const Tensor& got, const Tensor& x, const std::function<double(double)>& want,
                  double rtol, const std::string& what) {
  const std::vector<double> g = values(got), xs = values(x);
  ASSERT_EQ(g.size(), xs.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    const double w = want(xs[i]);
    EXPECT_NEAR(g[i], w, rtol * std::fabs(w) + 1e-300) << what << " at x = " << xs[i];
  }
}

struct Case {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> want;
  double lo, hi;
};

std::vector<Case> bessel_cases(double top) {
  const auto i0 = [](double v) { return std::cyl_bessel_i(0.0, std::fabs(v)); };
  const auto i1 = [](double v) { return std::copysign(std::cyl_bessel_i(1.0, std::fabs(v)), v); };
  return {
      {"i0", [](const Tensor& t) { return t.i0(); }, i0, -top, top},
      {"special_i1", [](const Tensor& t) { return special_i1(t); }, i1, -top, top},
      {"special_i0e", [](const Tensor& t) { return special_i0e(t); },
       [=](double v) { return i0(v) * std::exp(-std::fabs(v)); }, -top, top},
      {"special_i1e", [](const Tensor& t) { return special_i1e(t); },
       [=](double v) { return i1(v) * std::exp(-std::fabs(v)); }, -top, top},
      {"special_modified_bessel_i0", [](const Tensor& t) { return special_modified_bessel_i0(t); },
       i0, -top, top},
      {"special_modified_bessel_i1", [](const Tensor& t) { return special_modified_bessel_i1(t); },
       i1, -top, top},
      {"special_modified_bessel_k0", [](const Tensor& t) { return special_modified_bessel_k0(t); },
       [](double v) { return std::cyl_bessel_k(0.0, v); }, 0.01, 60},
      {"special_modified_bessel_k1", [](const Tensor& t) { return special_modified_bessel_k1(t); },
       [](double v) { return std::cyl_bessel_k(1.0, v); }, 0.01, 60},
      {"special_scaled_modified_bessel_k0",
       [](const Tensor& t) { return special_scaled_modified_bessel_k0(t); },
       [](double v) { return std::cyl_bessel_k(0.0, v) * std::exp(v); }, 0.01, top},
      {"special_scaled_modified_bessel_k1",
       [](const Tensor& t) { return special_scaled_modified_bessel_k1(t); },
       [](double v) { return std::cyl_bessel_k(1.0, v) * std::exp(v); }, 0.01, top},
  };
}

TEST(SpecialBessel, MatchTheStandardLibraryOverLengthsLayoutsAndDtypes) {
  for (ScalarType dtype : {kFloat, kDouble}) {
    // float: I up to 80 (e^x stays finite), 2e-6 relative; double: up to 700, 1e-13.
    const bool single = dtype == kFloat;
    const double rtol = single ? 2e-6 : 1e-13;
    for (const Case& c : bessel_cases(single ? 80 : 700)) {
      for (int64_t n : {1, 15, 16, 17, 63, 64, 65, 255, 256, 257, 3001}) {
        const Tensor x = spread(n, c.lo, c.hi, dtype);
        const std::string what =
            std::string(c.name) + " " + std::string(dtype_name(dtype)) + " n=" + std::to_string(n);
        expect_close(c.op(x), x, c.want, rtol, what);
        const Tensor strided = spread(2 * n, c.lo, c.hi, dtype).slice(0, 0, 2 * n, 2);
        expect_close(c.op(strided), strided, c.want, rtol, what + " strided");
      }
      const Tensor m = spread(600, c.lo, c.hi, dtype).reshape({20, 30}).t();
      expect_close(c.op(m), m, c.want, rtol, std::string(c.name) + " transposed");
    }
  }
}

TEST(SpecialBessel, BoundaryValuesAsPyTorch) {
  const double inf = INFINITY;
  const Tensor x = tensor({0.0, -0.0, -1.0, inf, NAN});
  const std::vector<double> k0 = values(special_modified_bessel_k0(x));
  EXPECT_EQ(k0[0], inf);
  EXPECT_EQ(k0[1], inf);
  EXPECT_TRUE(std::isnan(k0[2]));
  EXPECT_EQ(k0[3], 0.0);
  EXPECT_TRUE(std::isnan(k0[4]));
  const std::vector<double> i0e = values(special_i0e(x));
  EXPECT_NEAR(i0e[0], 1.0, 1e-7);  // (PyTorch's float sum gives 0.99999994 too)
  EXPECT_EQ(i0e[3], 0.0);
  EXPECT_TRUE(std::isnan(i0e[4]));
  // Integers compute in the default float dtype.
  EXPECT_EQ(special_i0e(tensor({1, 2}, TensorOptions(kLong))).dtype(), kFloat);
}

// J0, J1, Y0, Y1 (SpecialCephes.cpp): contiguous spans take the vector path (16 lanes, both
// forms where a block straddles 5), strided inputs the scalar kernels; both against the standard
// library, within an absolute error scaled by the value's size (the functions pass through 0),
// and the two paths against each other with NaN and infinities inside the blocks.
TEST(SpecialBessel, JAndYMatchTheStandardLibraryOnBothPaths) {
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> ops = {
      {"j0", [](const Tensor& t) { return special_bessel_j0(t); }},
      {"j1", [](const Tensor& t) { return special_bessel_j1(t); }},
      {"y0", [](const Tensor& t) { return special_bessel_y0(t); }},
      {"y1", [](const Tensor& t) { return special_bessel_y1(t); }}};
  const std::vector<std::function<double(double)>> want = {
      [](double v) { return std::cyl_bessel_j(0.0, std::fabs(v)); },
      [](double v) { return v < 0 ? -std::cyl_bessel_j(1.0, -v) : std::cyl_bessel_j(1.0, v); },
      [](double v) { return std::cyl_neumann(0.0, v); },
      [](double v) { return std::cyl_neumann(1.0, v); }};
  for (ScalarType dtype : {kFloat, kDouble}) {
    // Cephes' fits (PyTorch's) hold to about 1e-6 just past 5 in double; the two paths agree
    // closer.
    const double tol = dtype == kFloat ? 2e-6 : 1e-6, paths = dtype == kFloat ? 1e-6 : 1e-14;
    for (size_t f = 0; f < ops.size(); ++f) {
      const bool y = f >= 2;
      for (int64_t n : {1, 15, 16, 17, 511, 512, 513, 2001}) {
        const Tensor x = spread(n, y ? 0.01 : -40.0, 40.0, dtype);
        const Tensor strided = stack({x, x}, 1).select(1, 1);  // (the same values, stride 2)
        const std::vector<double> xs = values(x);
        const std::vector<double> g = values(ops[f].second(x)), g2 = values(ops[f].second(strided));
        for (size_t i = 0; i < g.size(); ++i) {
          const double w = want[f](xs[i]);
          const std::string what = std::string(ops[f].first) + " " +
                                   std::string(dtype_name(dtype)) + " n=" + std::to_string(n) +
                                   " at x = " + std::to_string(xs[i]);
          EXPECT_NEAR(g[i], w, tol * std::max(1.0, std::fabs(w))) << what;
          EXPECT_NEAR(g2[i], w, tol * std::max(1.0, std::fabs(w))) << what << " strided";
          EXPECT_NEAR(g[i], g2[i], paths * std::max(1.0, std::fabs(w))) << what << " paths";
        }
      }
      // Special values inside a block, on the vector path and (strided) the scalar one.
      const double inf = INFINITY;
      const Tensor sp = tensor({1.0, -0.0, 0.0, 4.99, 5.0, 5.01, inf, -inf, NAN, -3.0, 1e-6, 7.5,
                                30.0, 2.0, 1e30, -1e-30, 0.5},
                               TensorOptions(dtype));
      const Tensor sp2 = stack({sp, sp}, 1).select(1, 1);
      const std::vector<double> a = values(ops[f].second(sp)), b = values(ops[f].second(sp2));
      for (size_t i = 0; i < a.size(); ++i) {
        if (std::isnan(b[i]) || std::isinf(b[i])) {
          EXPECT_TRUE(std::isnan(a[i]) ? std::isnan(b[i]) : a[i] == b[i])
              << ops[f].first << " " << dtype_name(dtype) << " at " << i;
        } else {
          EXPECT_NEAR(a[i], b[i], paths * std::max(1.0, std::fabs(b[i])))
              << ops[f].first << " " << dtype_name(dtype) << " at " << i;
          EXPECT_EQ(std::signbit(a[i]), std::signbit(b[i])) << ops[f].first << " at " << i;
        }
      }
    }
  }
}

TEST(SpecialPolynomials, MatchTheStandardLibrary) {
  for (ScalarType dtype : {kFloat, kDouble}) {
    const double rtol = dtype == kFloat ? 1e-4 : 1e-11;
    const Tensor x = spread(257, -1, 1, dtype);
    for (int64_t deg : {0, 1, 2, 5, 7, 9, 12, 30}) {
      const Tensor n = full({}, double(deg), TensorOptions(dtype));
      const unsigned u = unsigned(deg);
      const std::string d = " n=" + std::to_string(deg) + " " + std::string(dtype_name(dtype));
      // Absolute error against the polynomial's largest magnitude on the grid (the values pass
      // through zero).
      auto near = [&](const Tensor& got, std::function<double(double)> want,
                      const std::string& what) {
        const std::vector<double> g = values(got), xs = values(x);
        double scale = 1;
        for (double v : xs) scale = std::max(scale, std::fabs(want(v)));
        for (size_t i = 0; i < g.size(); ++i)
          EXPECT_NEAR(g[i], want(xs[i]), rtol * scale) << what << d << " at x = " << xs[i];
      };
      near(
          special_legendre_polynomial_p(x, n), [&](double v) { return std::legendre(u, v); },
          "legendre_p");
      near(
          special_chebyshev_polynomial_t(x, n),
          [&](double v) { return std::cos(double(deg) * std::acos(v)); }, "chebyshev_t");
      near(
          special_chebyshev_polynomial_u(x, n),
          [&](double v) {
            const double t = std::acos(v);
            return std::fabs(std::sin(t)) < 1e-12 ? (v > 0 || deg % 2 == 0 ? deg + 1.0 : -deg - 1.0)
                                                  : std::sin((deg + 1) * t) / std::sin(t);
          },
          "chebyshev_u");
      near(
          special_shifted_chebyshev_polynomial_t((x + 1) / 2, n),
          [&](double v) { return std::cos(double(deg) * std::acos(v)); }, "shifted_t");
      near(
          special_hermite_polynomial_h(x, n), [&](double v) { return std::hermite(u, v); },
          "hermite_h");
      near(
          special_hermite_polynomial_he(x * M_SQRT2, n),
          [&](double v) { return std::hermite(u, v) / std::pow(2.0, deg / 2.0); }, "hermite_he");
      near(
          special_laguerre_polynomial_l(x + 1, n),  // (std::laguerre takes x >= 0)
          [&](double v) { return std::laguerre(u, v + 1); }, "laguerre_l");
    }
  }
}

TEST(SpecialPolynomials, DegreesBroadcastAndNegativeOrNaNGiveZero) {
  const Tensor x = tensor({0.5, -0.25, 2.0});
  const Tensor n = tensor({{-1.0}, {NAN}, {3.0}});
  const Tensor r = special_legendre_polynomial_p(x, n);
  ASSERT_EQ(r.sizes(), IntArrayRef({3, 3}));
  const std::vector<double> v = values(r);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(v[size_t(i)], 0.0) << i;
  EXPECT_NEAR(v[6], std::legendre(3, 0.5), 1e-6);
  EXPECT_NEAR(v[8], 0.5 * (5 * 8 - 3 * 2), 1e-5);  // P3(2) = (5x^3 - 3x) / 2
}

}  // namespace
