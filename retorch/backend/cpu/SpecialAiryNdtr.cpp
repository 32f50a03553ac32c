// torch.special's airy_ai, log_ndtr and entr: PyTorch's formulas (Cephes' Airy function, SciPy's
// split of log_ndtr) in double over chunks of elements, their exponentials, logarithms, error
// functions and sines through the vector functions, the Airy series 8 lanes at a time.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "retorch/backend/cpu/ChunkedUnary.h"
#include "retorch/backend/cpu/Loops.h"
#include "retorch/backend/cpu/VecMath.h"
#include "retorch/generated/Kernels.h"

namespace retorch::cpu {

namespace {

constexpr int64_t kLanes = 8;    // doubles in one vector of the Airy series
constexpr int64_t kChunk = 256;  // elements per pass over the work buffers (a multiple of kLanes)
constexpr int64_t kGrain = 2048;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// out[j] = fn(in[j]) for m elements through fn's vector form, else scalar(in[j]).
template <typename F>
void vec_or(VecFn fn, const double* in, double* out, int64_t m, const F& scalar) {
  if (!vec_unary(fn, in, out, m))
    for (int64_t j = 0; j < m; ++j) out[j] = scalar(in[j]);
}

// Work buffers, one set per task (T is double: chunked_unary computes in double here).
template <typename T>
struct Work {
  alignas(64) T a[kChunk], b[kChunk], c[kChunk], d[kChunk], e[kChunk];
};

// Horner's rule, highest power first (Cephes polevl).
template <size_t N>
double polevl(double x, const double (&c)[N]) {
  double r = c[0];
  for (size_t i = 1; i < N; ++i) r = r * x + c[i];
  return r;
}

// ---------------------------------------------------------------- entr
// -x log x for x > 0, 0 at 0, -inf below, NaN for NaN (torch's calc_entr).
void entr(const double* x, double* r, int64_t m, Work<double>& w) {
  double* lg = w.a;
  for (int64_t j = 0; j < m; ++j) lg[j] = x[j] > 0 ? x[j] : 1.0;
  vec_or(VecFn::kLog, lg, lg, m, [](double v) { return std::log(v); });
  for (int64_t j = 0; j < m; ++j) {
    const double v = x[j];
    r[j] = v > 0 ? -v * lg[j] : v == 0 ? 0.0 : v < 0 ? -kInf : v;
  }
}

// ---------------------------------------------------------------- log_ndtr
// SciPy's split, as torch's: log1p(-erfc(t) / 2) with t = x / sqrt(2) from -1 up, and below it
// log(erfcx(-t) / 2) - t^2, the form that keeps the far left tail from underflowing. erfcx(u) is
// exp(u^2) erfc(u) there, so its log is log(erfc(u) / 2) while erfc(u) stays normal (u < 26),
// and beyond, the asymptotic series of erfcx in 1 / (2u^2) (its eighth term is below 1e-18).
constexpr double kErfcxAsymptotic[8] = {-135135.0, 10395.0, -945.0, 105.0, -15.0, 3.0, -1.0, 1.0};
constexpr double kInvSqrtPi = 0.564189583547756286948079451560772586;

void log_ndtr(const double* x, double* r, int64_t m, Work<double>& w) {
  double *ec = w.a, *lg = w.b;
  for (int64_t j = 0; j < m; ++j) {
    const double t = x[j] * M_SQRT1_2;
    ec[j] = x[j] < -1 ? -t : t;  // erfc(-t) on the left, erfc(t) on the right
  }
  vec_or(VecFn::kErfc, ec, ec, m, [](double v) { return std::erfc(v); });
  for (int64_t j = 0; j < m; ++j) {
    const double u = -x[j] * M_SQRT1_2;
    const double asymptotic = polevl(1 / (2 * u * u), kErfcxAsymptotic) * kInvSqrtPi / u;
    lg[j] = x[j] < -1 ? (u < 26 ? ec[j] / 2 : asymptotic / 2) : 1.0;
    ec[j] = x[j] < -1 ? 0.0 : -ec[j] / 2;
  }
  vec_or(VecFn::kLog, lg, lg, m, [](double v) { return std::log(v); });
  vec_or(VecFn::kLog1p, ec, ec, m, [](double v) { return std::log1p(v); });
  for (int64_t j = 0; j < m; ++j) {
    const double u = -x[j] * M_SQRT1_2;
    r[j] = x[j] < -1 ? (u < 26 ? lg[j] : lg[j] - u * u) : ec[j];
  }
}

// ---------------------------------------------------------------- airy_ai
// Cephes' airy.c Ai, as torch's airy_ai_forward: below -2.09 the oscillating asymptotic form
// (auxiliary fits in 1 / zeta^2), from 2.09 the decaying one (in 1 / zeta), between them the
// Maclaurin series; 0 past 103.892, NaN at the infinities.
constexpr double kAiryAN[8] = {3.46538101525629032477e-01, 1.20075952739645805542e+01,
                               7.62796053615234516538e+01, 1.68089224934630576269e+02,
                               1.59756391350164413639e+02, 7.05360906840444183113e+01,
                               1.40264691163389668864e+01, 9.99999999999999995305e-01};
constexpr double kAiryAD[8] = {5.67594532638770212846e-01, 1.47562562584847203173e+01,
                               8.45138970141474626562e+01, 1.77318088145400459522e+02,
                               1.64234692871529701831e+02, 7.14778400825575695274e+01,
                               1.40959135607834029598e+01, 1.00000000000000000470e+00};
constexpr double kAiryAFN[9] = {
    -1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
    -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
    -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08};
constexpr double kAiryAFD[9] = {
    1.33560420706553243746e+01, 3.26825032795224613948e+01, 2.67367040941499554804e+01,
    9.18707402907259625840e+00, 1.47529146771666414581e+00, 1.15687173795188044134e-01,
    4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07};
constexpr double kAiryAGN[11] = {
    1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e+00,
    9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
    5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
    8.11789239554389293311e-08, 3.41551784765923618484e-10};
constexpr double kAiryAGD[10] = {9.30892908077441974853e+00, 1.98352928718312140417e+01,
                                 1.55646628932864612953e+01, 5.47686069422975497931e+00,
                                 9.54293611618961883998e-01, 8.64580826352392193095e-02,
                                 4.12656523824222607191e-03, 1.01259085116509135510e-04,
                                 1.17166733214413521882e-06, 4.91834570062930015649e-09};
constexpr double kAiryC1 = 0.355028053887817239260, kAiryC2 = 0.258819403792806798405;

// Ai = c1 f - c2 g from the Maclaurin series f and g, kLanes elements together, each summed until
// its term m falls below eps of f (or is NaN); m lanes of x, a multiple of kLanes.
void airy_series(const double* x, double* out, int64_t m) {
  typedef double V __attribute__((vector_size(kLanes * sizeof(double))));
  typedef int64_t M __attribute__((vector_size(kLanes * sizeof(int64_t))));
  constexpr double eps = 2.220446049250313e-16;
  for (int64_t j0 = 0; j0 < m; j0 += kLanes) {
    V xv;
    std::memcpy(&xv, x + j0, sizeof(V));
    const V z = xv * xv * xv;
    V f = V{} + 1.0, g = xv, mt = V{} + 1.0, nt = xv;
    M active = M{} - 1;  // (all lanes)
    double k = 1.0;
    for (bool any = true; any;) {
      mt = mt * z;
      k += 1.0;
      mt = mt / k;
      nt = nt * z;
      k += 1.0;
      nt = nt / k;
      mt = mt / k;
      f = active ? f + mt : f;
      k += 1.0;
      nt = nt / k;
      g = active ? g + nt : g;
      const V ratio = mt / f;
      active = active & ((ratio < 0 ? -ratio : ratio) > eps);
      any = false;
      for (int64_t l = 0; l < kLanes; ++l) any |= active[l] != 0;
    }
    const V r = kAiryC1 * f - kAiryC2 * g;
    std::memcpy(out + j0, &r, sizeof(V));
  }
}

void airy_ai(const double* x, double* r, int64_t m, Work<double>& w) {
  double *ph = w.a, *sn = w.b, *cs = w.c, *ex = w.d, *mid = w.e;
  int left = 0, right = 0;
  for (int64_t j = 0; j < m; ++j) {
    const double v = x[j];
    left += v < -2.09 ? 1 : 0;
    right += v >= 2.09 ? 1 : 0;
    const double xl = v < -2.09 ? v : -3.0, xr = v >= 2.09 ? v : 3.0;
    ph[j] = -2.0 * xl * std::sqrt(-xl) / 3.0 + 0.25 * M_PI;  // the oscillating form's phase
    ex[j] = 2.0 * xr * std::sqrt(xr) / 3.0;                  // zeta of the decaying form
    mid[j] = v < -2.09 || v >= 2.09 ? 0.0 : v;               // (NaN stays)
  }
  if (left) {
    vec_or(VecFn::kSin, ph, sn, m, [](double v) { return std::sin(v); });
    vec_or(VecFn::kCos, ph, cs, m, [](double v) { return std::cos(v); });
  }
  if (right) vec_or(VecFn::kExp, ex, ex, m, [](double v) { return std::exp(v); });
  airy_series(mid, mid, m);
  for (int64_t j = 0; j < m; ++j) {
    const double v = x[j];
    double a = mid[j];
    if (v < -2.09) {
      const double t = -2.0 * v * std::sqrt(-v) / 3.0, z = 1.0 / t, zz = z * z;
      a = kInvSqrtPi / std::sqrt(std::sqrt(-v)) *
          (sn[j] * (1.0 + zz * polevl(zz, kAiryAFN) / polevl(zz, kAiryAFD)) -
           cs[j] * (z * polevl(zz, kAiryAGN) / polevl(zz, kAiryAGD)));
    } else if (v >= 2.09) {
      const double zeta = 2.0 * v * std::sqrt(v) / 3.0, iz = 1.0 / zeta;
      a = kInvSqrtPi * (polevl(iz, kAiryAN) / polevl(iz, kAiryAD)) /
          (2.0 * std::sqrt(std::sqrt(v)) * ex[j]);
    }
    r[j] = std::isinf(v) ? kNaN : v > 103.892 ? 0.0 : a;
  }
}

}  // namespace

void special_entr_out(const Tensor& self, Tensor& out) {
  chunked_unary<true, kChunk, kLanes, Work>("special_entr", self, out, kGrain, entr);
}

void special_log_ndtr_out(const Tensor& self, Tensor& out) {
  chunked_unary<true, kChunk, kLanes, Work>("special_log_ndtr", self, out, kGrain, log_ndtr);
}

void special_airy_ai_out(const Tensor& self, Tensor& out) {
  chunked_unary<true, kChunk, kLanes, Work>("special_airy_ai", self, out, kGrain, airy_ai);
}

}  // namespace retorch::cpu
