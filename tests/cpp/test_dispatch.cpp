// Dispatcher tests: key sets, boxed calls by name, boxed fallbacks on a testing key.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "retorch/dispatch/Dispatcher.h"
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::testing;

// DispatchKeySet is plain constexpr bit math: check it at compile time.
static_assert(DispatchKeySet({DispatchKey::CPU, DispatchKey::Autograd}).highest() ==
              DispatchKey::Autograd);
static_assert(DispatchKeySet().highest() == DispatchKey::Undefined);
static_assert(DispatchKeySet({DispatchKey::CPU, DispatchKey::Autograd, DispatchKey::Profiler})
                  .below(DispatchKey::Autograd) == DispatchKeySet(DispatchKey::CPU));
static_assert(DispatchKeySet({DispatchKey::CPU, DispatchKey::TestingA})
                  .below(DispatchKey::TestingA)
                  .highest() == DispatchKey::CPU);
static_assert(sizeof(DispatchKeySet) == 8);
static_assert(DispatchKeySet(DispatchKey::Undefined).empty());
static_assert(DispatchKeySet(DispatchKey::CPU).add(DispatchKey::CUDA).remove(DispatchKey::CPU) ==
              DispatchKeySet(DispatchKey::CUDA));
// Priority order from DESIGN.md: Profiler > Tracer > Autograd > DeviceFallback > CUDA > CPU.
static_assert(DispatchKey::Profiler > DispatchKey::Tracer);
// Autocast casts above the tracer and autograd, so both record its casts (Note [Autocast]).
static_assert(DispatchKey::Profiler > DispatchKey::Autocast);
static_assert(DispatchKey::Autocast > DispatchKey::Tracer);
static_assert(DispatchKey::Tracer > DispatchKey::Autograd);
static_assert(DispatchKey::Autograd > DispatchKey::DeviceFallback);
static_assert(DispatchKey::DeviceFallback > DispatchKey::CUDA);
static_assert(DispatchKey::CUDA > DispatchKey::CPU);

TEST(DispatchKeySetTest, Basics) {
  DispatchKeySet ks({DispatchKey::CPU, DispatchKey::Autograd});
  EXPECT_TRUE(ks.has(DispatchKey::CPU));
  EXPECT_FALSE(ks.has(DispatchKey::CUDA));
  EXPECT_EQ(ks.highest(), DispatchKey::Autograd);
  EXPECT_EQ(ks.below(DispatchKey::Autograd).highest(), DispatchKey::CPU);
  EXPECT_TRUE(ks.below(DispatchKey::CPU).empty());
  EXPECT_EQ(dispatch_key_name(DispatchKey::Autograd), "Autograd");
  EXPECT_EQ(dispatch_key_name(DispatchKey::TestingA), "TestingA");
}

TEST(DispatchKeySetTest, TensorKeys) {
  Tensor a = zeros({2});
  EXPECT_TRUE(a.key_set().has(DispatchKey::CPU));
  EXPECT_FALSE(a.key_set().has(DispatchKey::CUDA));
  Tensor g = zeros({2}, TensorOptions().requires_grad(true));
  EXPECT_TRUE(g.key_set().has(DispatchKey::Autograd));
}

TEST(DispatchKeySetTest, IncludeExcludeGuardsNestAndRestore) {
  auto& tls = tls_local_dispatch_key_set();
  DispatchKeySet before = tls.included;
  {
    IncludeDispatchKeyGuard g1(DispatchKeySet(DispatchKey::TestingA));
    EXPECT_TRUE(tls.included.has(DispatchKey::TestingA));
    {
      IncludeDispatchKeyGuard g2(DispatchKeySet(DispatchKey::TestingA));  // already there
    }
    EXPECT_TRUE(tls.included.has(DispatchKey::TestingA));  // inner guard must not remove it
  }
  EXPECT_EQ(tls.included, before);
  {
    ExcludeDispatchKeyGuard g(DispatchKeySet(DispatchKey::Autograd));
    EXPECT_TRUE(tls.excluded.has(DispatchKey::Autograd));
    // With Autograd excluded, an op on a requires_grad tensor records no graph.
    Tensor x = ones({2}, TensorOptions().requires_grad(true));
    Tensor y = x * 2;
    EXPECT_EQ(y.grad_fn(), nullptr);
  }
  EXPECT_FALSE(tls.excluded.has(DispatchKey::Autograd));
}

TEST(DispatcherTest, FindByName) {
  Dispatcher& d = Dispatcher::singleton();
  OperatorHandle* add = d.find("add.Tensor");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->schema().name, "add");
  EXPECT_EQ(add->schema().overload, "Tensor");
  EXPECT_EQ(add->qualified_name(), "aten::add.Tensor");
  EXPECT_EQ(d.find("aten::add.Tensor"), add);
  EXPECT_NE(d.find("mm"), nullptr);
  EXPECT_EQ(d.find("nonexistent"), nullptr);
  EXPECT_EQ(d.find("add.NoSuchOverload"), nullptr);
  EXPECT_TRUE(add->has_kernel(DispatchKey::CPU));
  EXPECT_GT(d.ops().size(), 100u);
}

TEST(DispatcherTest, BoxedCallByName) {
  OperatorHandle* add = Dispatcher::singleton().find("add.Tensor");
  ASSERT_NE(add, nullptr);
  Tensor a = tensor({1.0, 2.0, 3.0});
  Tensor b = tensor({10.0, 20.0, 30.0});
  Stack stack{a, b, 1};
  add->call_boxed(&stack);
  ASSERT_EQ(stack.size(), 1u);
  ASSERT_TRUE(stack[0].is_tensor());
  EXPECT_EQ(values(stack[0].to_tensor()), (std::vector<double>{11, 22, 33}));

  Stack stack2{a, b, 2};  // alpha = 2
  add->call_boxed(&stack2);
  EXPECT_EQ(values(stack2[0].to_tensor()), (std::vector<double>{21, 42, 63}));

  OperatorHandle* sum_dim = Dispatcher::singleton().find("sum.dim_IntList");
  ASSERT_NE(sum_dim, nullptr);
  Stack s3{tensor({{1.0, 2.0}, {3.0, 4.0}}), std::vector<int64_t>{1}, false, std::nullopt};
  sum_dim->call_boxed(&s3);
  ASSERT_EQ(s3.size(), 1u);
  EXPECT_EQ(values(s3[0].to_tensor()), (std::vector<double>{3, 7}));
}

TEST(DispatcherTest, BoxedCallWithTooFewArgumentsErrors) {
  OperatorHandle* add = Dispatcher::singleton().find("add.Tensor");
  ASSERT_NE(add, nullptr);
  Stack stack{tensor({1.0})};
  EXPECT_THROW(add->call_boxed(&stack), Error);
}

// A boxed fallback on TestingA that records every op it sees and then continues below.
class FallbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seen_ = std::make_shared<std::multiset<std::string>>();
    auto seen = seen_;
    Dispatcher::singleton().register_fallback(
        DispatchKey::TestingA, [seen](const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
          seen->insert(std::string(op.schema().name));
          op.redispatch_boxed(ks.below(DispatchKey::TestingA), stack);
        });
  }
  void TearDown() override { Dispatcher::singleton().remove_fallback(DispatchKey::TestingA); }
  std::shared_ptr<std::multiset<std::string>> seen_;
};

TEST_F(FallbackTest, CountsOpsInsideGuardOnly) {
  Tensor a = tensor({{1.0, 2.0}, {3.0, 4.0}});
  Tensor b = tensor({{5.0, 6.0}, {7.0, 8.0}});
  Tensor outside = a + b;  // before the guard: not counted
  EXPECT_TRUE(seen_->empty());
  Tensor s, m, r, p;
  {
    IncludeDispatchKeyGuard guard(DispatchKeySet(DispatchKey::TestingA));
    s = a + b;
    m = a * b;
    r = m.sum();
    p = a.matmul(b);
  }
  size_t inside = seen_->size();
  Tensor after = a * b;  // after the guard: not counted
  EXPECT_EQ(seen_->size(), inside);

  // Results are unchanged by the pass-through fallback.
  EXPECT_EQ(values(s), (std::vector<double>{6, 8, 10, 12}));
  EXPECT_EQ(values(m), (std::vector<double>{5, 12, 21, 32}));
  EXPECT_EQ(r.item<double>(), 70.0);
  EXPECT_EQ(values(p), (std::vector<double>{19, 22, 43, 50}));

  for (const char* name : {"add", "mul", "sum", "matmul"})
    EXPECT_GE(seen_->count(name), 1u) << name << " did not pass through the fallback";
  EXPECT_EQ(seen_->count("add"), 1u);
  EXPECT_EQ(seen_->count("mul"), 1u);
}

TEST_F(FallbackTest, SeesAutogradOps) {
  Tensor x = tensor({1.0, 2.0}, TensorOptions().requires_grad(true));
  {
    IncludeDispatchKeyGuard guard(DispatchKeySet(DispatchKey::TestingA));
    Tensor y = (x * x).sum();
    EXPECT_NE(y.grad_fn(), nullptr);  // autograd still runs below the testing key
    y.backward();
  }
  EXPECT_GE(seen_->count("mul"), 1u);
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2, 4}));
}

TEST_F(FallbackTest, RemovedFallbackIsNotCalled) {
  Dispatcher::singleton().remove_fallback(DispatchKey::TestingA);
  EXPECT_FALSE(Dispatcher::singleton().fallback(DispatchKey::TestingA).valid());
  Tensor a = ones({2});
  {
    IncludeDispatchKeyGuard guard(DispatchKeySet(DispatchKey::TestingA));
    Tensor b = a + a;  // no kernel and no fallback for TestingA: falls to CPU
    EXPECT_EQ(values(b), (std::vector<double>{2, 2}));
  }
  EXPECT_TRUE(seen_->empty());
}

TEST(DispatcherTest, FallbackOnTestingBCanShortCircuit) {
  // A fallback may answer without calling below: every op returns a tensor of 42s.
  Dispatcher::singleton().register_fallback(
      DispatchKey::TestingB, [](const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
        op.redispatch_boxed(ks.below(DispatchKey::TestingB), stack);
        Tensor r = stack->back().to_tensor();
        ExcludeDispatchKeyGuard no_reentry(DispatchKeySet(DispatchKey::TestingB));
        stack->back() = IValue(full_like(r, 42));
      });
  Tensor a = ones({3});
  Tensor r;
  {
    IncludeDispatchKeyGuard guard(DispatchKeySet(DispatchKey::TestingB));
    r = a + a;
  }
  Dispatcher::singleton().remove_fallback(DispatchKey::TestingB);
  EXPECT_EQ(values(r), (std::vector<double>{42, 42, 42}));
  EXPECT_EQ(values(a + a), (std::vector<double>{2, 2, 2}));
}
