// bench_overhead (Google Benchmark): where the time of a small op goes on the way from a C++ call
// to the CPU kernel — the kernel alone, output allocation, dispatch, and autograd bookkeeping.
#include <benchmark/benchmark.h>

#include "retorch/dispatch/Dispatcher.h"
#include "retorch/generated/Kernels.h"
#include "retorch/retorch.h"
#include "retorch/runtime/LaunchManager.h"

namespace rt = retorch;

namespace {

// The CPU kernel called directly into a preallocated output: TensorIterator setup + loop.
void BM_AddKernelOnly(benchmark::State& state) {
  rt::Tensor a = rt::ones({state.range(0)}), b = rt::ones({state.range(0)});
  rt::Tensor out = rt::empty({state.range(0)});
  for (auto _ : state) rt::cpu::add_out(a, b, 1, out);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// A fresh output from the caching allocator (TensorImpl + Storage + cached block).
void BM_EmptyAlloc(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(rt::empty({state.range(0)}));
}

// The public out= API: dispatcher lookup + kernel, no allocation.
void BM_AddOutDispatched(benchmark::State& state) {
  rt::Tensor a = rt::ones({state.range(0)}), b = rt::ones({state.range(0)});
  rt::Tensor out = rt::empty({state.range(0)});
  for (auto _ : state) rt::add_out(out, a, b);
}

// The full functional call with no input requiring grad: dispatch + allocation + kernel.
void BM_AddFunctional(benchmark::State& state) {
  rt::Tensor a = rt::ones({state.range(0)}), b = rt::ones({state.range(0)});
  for (auto _ : state) benchmark::DoNotOptimize(rt::add(a, b));
}

// The same with an input requiring grad: the autograd key records an AddBackward0 node.
void BM_AddFunctionalRequiresGrad(benchmark::State& state) {
  rt::Tensor a = rt::ones({state.range(0)}, rt::requires_grad()), b = rt::ones({state.range(0)});
  for (auto _ : state) benchmark::DoNotOptimize(rt::add(a, b));
}

// Under NoGradGuard with an input requiring grad: the fast path that skips graph recording.
void BM_AddFunctionalNoGrad(benchmark::State& state) {
  rt::Tensor a = rt::ones({state.range(0)}, rt::requires_grad()), b = rt::ones({state.range(0)});
  rt::NoGradGuard guard;
  for (auto _ : state) benchmark::DoNotOptimize(rt::add(a, b));
}

// What an unobserved launch pays for the launch manager (Note [Launch hook]): one relaxed atomic
// load and a branch per backend kernel call (aim: <= 50 ns).
void BM_LaunchCheckUnobserved(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(rt::detail::g_launch_hook.load(std::memory_order_relaxed));
}

// The full functional add while a counting observer watches every launch (boxed, recorded).
void BM_AddFunctionalObserved(benchmark::State& state) {
  rt::Tensor a = rt::ones({state.range(0)}), b = rt::ones({state.range(0)});
  auto counter = std::make_shared<rt::runtime::CountingObserver>();
  rt::runtime::LaunchManager::get().add_observer(counter);
  for (auto _ : state) benchmark::DoNotOptimize(rt::add(a, b));
  rt::runtime::LaunchManager::get().remove_observer(counter);
}

// A captured sequence of three small launches replayed (no dispatch) against the same calls.
void BM_ReplayThreeOps(benchmark::State& state) {
  rt::Tensor a = rt::ones({16}), b = rt::ones({16}), y;
  rt::runtime::LaunchGraph g =
      rt::runtime::LaunchManager::get().capture([&] { y = ((a + b) * a).relu(); });
  for (auto _ : state) g.replay();
}
void BM_EagerThreeOps(benchmark::State& state) {
  rt::Tensor a = rt::ones({16}), b = rt::ones({16});
  for (auto _ : state) benchmark::DoNotOptimize(((a + b) * a).relu());
}

// A 5-d view: shape metadata stays in the TensorImpl's inline storage (no heap allocation).
void BM_View5d(benchmark::State& state) {
  rt::Tensor a = rt::ones({2, 3, 4, 5, 6});
  for (auto _ : state) benchmark::DoNotOptimize(a.view({6, 4, 5, 3, 2}));
}

void BM_TanhContiguous(benchmark::State& state) {
  rt::Tensor a = rt::randn({state.range(0)});
  for (auto _ : state) benchmark::DoNotOptimize(a.tanh());
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

}  // namespace

BENCHMARK(BM_AddKernelOnly)->Arg(1)->Arg(1 << 16);
BENCHMARK(BM_EmptyAlloc)->Arg(1)->Arg(1 << 16);
BENCHMARK(BM_AddOutDispatched)->Arg(1);
BENCHMARK(BM_AddFunctional)->Arg(1)->Arg(1 << 16);
BENCHMARK(BM_AddFunctionalRequiresGrad)->Arg(1);
BENCHMARK(BM_AddFunctionalNoGrad)->Arg(1);
BENCHMARK(BM_View5d);
BENCHMARK(BM_LaunchCheckUnobserved);
BENCHMARK(BM_AddFunctionalObserved)->Arg(1);
BENCHMARK(BM_ReplayThreeOps);
BENCHMARK(BM_EagerThreeOps);
BENCHMARK(BM_TanhContiguous)->Arg(1 << 10)->Arg(1 << 20);

BENCHMARK_MAIN();
