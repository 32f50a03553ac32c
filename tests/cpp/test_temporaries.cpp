// Note [Reusing temporaries]: C++ operators and unary methods write into a dying temporary only
// when nobody can tell: same values as the functional ops, and fresh outputs whenever a view,
// autograd, foreign memory, promotion, broadcasting, layout, tracing or profiling is involved.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "retorch/jit/Tracer.h"
#include "retorch/profiler/Profiler.h"
#include "retorch/ops/TensorOperators.h"
#include "test_helpers.h"

using namespace retorch;
using retorch::testing::values;

namespace {

Tensor sample() {
  manual_seed(7);
  return rand({64, 33}) * 1.8 + 0.1;  // in (0.1, 1.9): every method below is defined there
}

const void* storage_of(const Tensor& t) {
  return t.impl()->storage()->data();
}

bool same_bits(const Tensor& a, const Tensor& b) {
  Tensor x = a.contiguous(), y = b.contiguous();
  return x.sizes() == y.sizes() && x.dtype() == y.dtype() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), size_t(x.numel() * x.element_size())) == 0;
}

}  // namespace

TEST(Temporaries, ChainsWriteIntoTheirTemporaryAndGiveTheFunctionalBits) {
  Tensor a = sample();
  Tensor t = a * 2;
  const void* p = storage_of(t);
  Tensor r = (std::move(t) + 1).tanh();
  EXPECT_EQ(storage_of(r), p);
  Tensor t2 = a * 2;
  const Tensor& named = t2;
  EXPECT_TRUE(same_bits(r, (named + 1).tanh()));
  // Every operator form and the right-hand forms of + and *.
  Tensor b = sample() - 0.5;
  EXPECT_TRUE(same_bits((a * 3) - b, a * 3 - static_cast<const Tensor&>(b)));
  EXPECT_TRUE(same_bits((a * 3) / 7, (a * 3).div(7)));
  EXPECT_TRUE(same_bits(b + (a * 3), add(b, mul(a, 3))));
  EXPECT_TRUE(same_bits(b * (a * 3), mul(b, mul(a, 3))));
  EXPECT_TRUE(same_bits(2 * (a + 1), mul(add(a, 1), 2)));
  EXPECT_TRUE(same_bits((a + 1) * (b + 2), mul(add(a, 1), add(b, 2))));
  EXPECT_TRUE(same_bits((a + 1) + b.select(0, 3), add(add(a, 1), b.select(0, 3))));
}

TEST(Temporaries, EveryReusingMethodMatchesItsFunctionalForm) {
  Tensor a = sample();
  const Tensor& c = a;
  struct Case {
    const char* name;
    Tensor (*rvalue)(Tensor&&);
    Tensor (*lvalue)(const Tensor&);
  };
#define RT_CASE(M) \
  {#M, [](Tensor&& t) { return std::move(t).M(); }, [](const Tensor& t) { return t.M(); }}
  const Case cases[] = {RT_CASE(abs),  RT_CASE(neg),   RT_CASE(sign),  RT_CASE(exp),
                        RT_CASE(exp2), RT_CASE(expm1), RT_CASE(log),   RT_CASE(log2),
                        RT_CASE(log10), RT_CASE(log1p), RT_CASE(sqrt), RT_CASE(rsqrt),
                        RT_CASE(reciprocal), RT_CASE(sin), RT_CASE(cos), RT_CASE(tan),
                        RT_CASE(sinh), RT_CASE(cosh), RT_CASE(tanh), RT_CASE(sigmoid),
                        RT_CASE(erf),  RT_CASE(erfc),  RT_CASE(relu),  RT_CASE(floor),
                        RT_CASE(ceil), RT_CASE(round), RT_CASE(trunc)};
#undef RT_CASE
  for (const Case& k : cases) {
    Tensor t = c * 0.5;  // in (0.05, 0.95): asin/acos too
    const void* p = storage_of(t);
    Tensor r = k.rvalue(std::move(t));
    EXPECT_EQ(storage_of(r), p) << k.name;
    EXPECT_TRUE(same_bits(r, k.lvalue(c * 0.5))) << k.name;
  }
  Tensor h = c * 0.5;
  EXPECT_TRUE(same_bits(std::move(h).asin(), (c * 0.5).asin()));
  EXPECT_TRUE(same_bits((c * 0.5).acos(), c.mul(0.5).acos()));
  EXPECT_TRUE(same_bits((c * 0.5).atan(), c.mul(0.5).atan()));
  EXPECT_TRUE(same_bits((c * 3).clamp(0.5, 2.0), c.mul(3).clamp(0.5, 2.0)));
}

TEST(Temporaries, AnythingSomeoneCouldObserveGetsAFreshOutput) {
  Tensor a = sample();
  // A view of the temporary still reads the old values.
  Tensor t = a * 2;
  Tensor v = t.view({-1});
  std::vector<double> before = values(v);
  Tensor r = std::move(t) + 1;
  EXPECT_NE(storage_of(r), storage_of(v));
  EXPECT_EQ(values(v), before);
  // Autograd: the result has add's history, the temporary is untouched.
  Tensor w = a.detach().requires_grad_(true);
  Tensor g = (w * 2 + 1).tanh();
  ASSERT_TRUE(g.grad_fn() != nullptr);
  EXPECT_EQ(g.grad_fn()->name(), "TanhBackward0");
  g.sum().backward();
  EXPECT_TRUE(retorch::testing::all_close(w.grad(), 2 * (1 - g.detach() * g.detach()), 1e-5,
                                          1e-6));
  // Memory the caller owns (from_blob) is never written.
  std::vector<float> buf{0.5f, 1.5f, 2.5f};
  Tensor fb = from_blob(buf.data(), {3}, kFloat).tanh();
  EXPECT_EQ(buf, (std::vector<float>{0.5f, 1.5f, 2.5f}));
  EXPECT_TRUE(same_bits(fb, tensor({0.5f, 1.5f, 2.5f}).tanh()));
  // Promotion, broadcasting into a larger shape, and layout keep the functional results.
  Tensor ints = arange(6);
  EXPECT_TRUE(same_bits((ints * 1) / 4, arange(6).div(4)));
  EXPECT_EQ(((ints * 1) / 4).dtype(), kFloat);
  Tensor small = a.select(0, 0) * 1;
  Tensor big = std::move(small) + a;
  EXPECT_EQ(big.sizes(), a.sizes());
  Tensor tr = (a * 1).t();
  const void* tp = storage_of(tr);
  Tensor e = std::move(tr).exp();
  EXPECT_NE(storage_of(e), tp);
  EXPECT_TRUE(same_bits(e, a.t().exp()));
  Tensor dbl = (a * 1) + a.to(kDouble);
  EXPECT_EQ(dbl.dtype(), kDouble);
}

TEST(Temporaries, TracesAndProfilesRecordTheFunctionalOps) {
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{(in[0] * 2 + 1).tanh()}; };
  jit::ScriptFunction f = jit::trace(fn, {sample()});
  std::string text = f.graph().str();
  EXPECT_NE(text.find("aten::tanh("), std::string::npos) << text;
  EXPECT_EQ(text.find("aten::tanh_"), std::string::npos) << text;
  EXPECT_EQ(text.find("aten::add_"), std::string::npos) << text;
  Tensor x = sample() + 3;
  EXPECT_TRUE(same_bits(f({IValue(x)})[0].to_tensor(), (x * 2 + 1).tanh()));
  // The profiler's thread-local key turns reuse off: its table shows the functional ops.
  Tensor a = sample();
  profiler::Profile p{profiler::ProfilerOptions()};
  Tensor r = (a * 2 + 1).tanh();
  p.stop();
  std::vector<std::string> names;
  for (const profiler::EventStats& st : p.key_averages()) names.push_back(st.name);
  EXPECT_NE(std::find(names.begin(), names.end(), "aten::tanh"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "aten::tanh_"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "aten::add_"), names.end());
}
