// Digamma, trigamma, Hurwitz zeta and polygamma in double, shared by the cpu and CUDA kernels.
#pragma once
#include <cmath>
#include <cstdint>

#include "retorch/core/HostDevice.h"

namespace retorch::special {

// Note [Shared special functions]
// The series below run as written on the host (backend/cpu/SpecialOps.cpp, Note [Special
// functions in double]) and in CUDA kernels (backend/cuda/CudaPointwise.cu), so both devices
// give the same values up to their libraries' log, tan, sin and pow. The math calls name the
// global functions (<cmath>'s on the host, CUDA's on the device): retorch's own log(Tensor) and
// kin would hide them from an unqualified call.

constexpr double kPi = 3.14159265358979323846;

// Asymptotic series in 1/x^2 after pushing x >= 10 by the recurrence psi(x) = psi(x+1) - 1/x;
// negative x by reflection psi(1-x) - pi / tan(pi x) (with the fractional part, for accuracy).
RT_HOST_DEVICE inline double digamma(double x) {
  if (x == 0) return ::copysign(INFINITY, -x);
  double reflection = 0;
  if (x < 0) {
    if (x == ::trunc(x)) return NAN;
    double q;
    reflection = -kPi / ::tan(kPi * ::modf(x, &q));
    x = 1 - x;
  }
  if (x != x) return x;
  double result = 0;
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  if (x == INFINITY) return x;
  // -sum B_2k / (2k x^2k), k = 1..7
  const double z = 1 / (x * x);
  const double poly =
      z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 -
      z * (1.0 / 132 - z * (691.0 / 32760 - z * (1.0 / 12)))))));
  return result + ::log(x) - 0.5 / x - poly + reflection;
}

// psi'(x): reflection for x < 1/2, recurrence to x >= 10, then the asymptotic series.
RT_HOST_DEVICE inline double trigamma(double x) {
  double sign = 1, result = 0;
  if (x < 0.5) {
    sign = -1;
    const double s = ::sin(kPi * x);
    result -= kPi * kPi / (s * s);
    x = 1 - x;
  }
  while (x < 10) {
    result += 1 / (x * x);
    x += 1;
  }
  const double z = 1 / (x * x);
  // 1/x + 1/(2x^2) + sum B_2k / x^(2k+1)
  const double tail =
      1 / x + z / 2 + z / x * (1.0 / 6 - z * (1.0 / 30 - z * (1.0 / 42 - z * (1.0 / 30 -
      z * (5.0 / 66 - z * (691.0 / 2730 - z * (7.0 / 6)))))));
  return sign * (result + tail);
}

// Hurwitz zeta(s, q) for s > 1: direct sum of the first terms, then Euler-Maclaurin
// (the Cephes scheme PyTorch uses, so the domain conventions match).
RT_HOST_DEVICE inline double zeta(double s, double q) {
  constexpr double kEps = 1.11022302462515654042e-16;
  // (2k)! / B_2k, k = 1..12
  constexpr double kA[] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0,
                           -1.8924375803183791606e9, 7.47242496e10,
                           -2.950130727918164224e12, 1.1646782814350067249e14,
                           -4.5979787224074726105e15, 1.8152105401943546773e17,
                           -7.1661652561756670113e18};
  if (s == 1) return INFINITY;
  if (s < 1) return NAN;
  if (q <= 0) {
    if (q == ::floor(q)) return INFINITY;
    if (s != ::floor(s)) return NAN;
  }
  double sum = ::pow(q, -s), a = q, b = 0;
  int i = 0;
  while (i < 9 || a <= 9) {
    i += 1;
    a += 1;
    b = ::pow(a, -s);
    sum += b;
    if (::fabs(b / sum) < kEps) return sum;
  }
  const double w = a;
  sum += b * w / (s - 1);
  sum -= 0.5 * b;
  double fac = 1, k = 0;
  for (double d : kA) {
    fac *= s + k;
    b /= w;
    const double t = fac * b / d;
    sum += t;
    if (::fabs(t / sum) < kEps) break;
    k += 1;
    fac *= s + k;
    b /= w;
    k += 1;
  }
  return sum;
}

// psi^(n)(x) = (-1)^(n+1) n! zeta(n+1, x) past n = 1.
RT_HOST_DEVICE inline double polygamma(int64_t n, double x) {
  if (n == 0) return digamma(x);
  if (n == 1) return trigamma(x);
#if defined(__CUDA_ARCH__)
  const double log_fact = ::lgamma(double(n) + 1);
#else
  int sign;
  const double log_fact = ::lgamma_r(double(n) + 1, &sign);  // std::lgamma writes signgam
#endif
  return ((n % 2) ? 1.0 : -1.0) * ::exp(log_fact) * zeta(double(n + 1), x);
}

}  // namespace retorch::special
