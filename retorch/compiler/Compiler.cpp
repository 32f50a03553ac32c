// The compiled function: guards, the compile pipeline (trace -> passes -> lower -> generate ->
// build/load), kernel calls with their eager fallback, and eager runs when compiling fails.
#include "retorch/compiler/Compiler.h"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>

#include "retorch/autograd/GradMode.h"
#include "retorch/ops/Autocast.h"
#include "retorch/compiler/Backward.h"
#include "retorch/compiler/CodeCache.h"
#include "retorch/compiler/Nvrtc.h"
#include "retorch/device/CudaBridge.h"
#include "retorch/device/DeviceApi.h"
#include "retorch/device/ElementAddress.h"
#include "retorch/generated/Functions.h"
#include "retorch/jit/passes/Passes.h"
#include "retorch/nn/Module.h"

namespace retorch::compiler {

// Note [Kernel fallback]
// A kernel is specialized to the exact dtypes, sizes and strides its inputs had when it was
// traced. Graph inputs are guarded before the call, but a kernel also reads values computed by
// externs, and runs in graphs whose inputs may require grad. Each call therefore checks its
// inputs (a few comparisons per tensor): on a mismatch, or when grad mode is on, an input
// requires grad and the kernel has no compiled backward (Note [Compiled backward]), the
// kernel's own nodes run through the interpreter instead, so results and gradients are eager's.

namespace {

struct Guard {
  ScalarType dtype;
  Device device;
  std::vector<int64_t> sizes, strides;
  bool requires_grad;
  bool matches(const Tensor& t) const {
    return t.dtype() == dtype && t.device() == device && t.sizes().equals(sizes) &&
           t.strides().equals(strides) && t.requires_grad() == requires_grad;
  }
};

// Checked on every call: compares in place, allocating nothing.
bool guards_match(const std::vector<Guard>& guards, const std::vector<Tensor>& inputs) {
  if (guards.size() != inputs.size()) return false;
  for (size_t i = 0; i < guards.size(); ++i)
    if (!guards[i].matches(inputs[i])) return false;
  return true;
}

std::vector<Guard> guards_of(const std::vector<Tensor>& inputs) {
  std::vector<Guard> g;
  for (const Tensor& t : inputs)
    g.push_back({t.dtype(), t.device(), t.sizes().vec(), t.strides().vec(), t.requires_grad()});
  return g;
}

bool debug_enabled() {
  const char* e = std::getenv("RETORCH_COMPILE_DEBUG");
  return e && *e && std::string(e) != "0";
}

// The runner of one kernel call node (Note [Kernel fallback]): the kernel and its backward run
// on the host, or, for CUDA calls, on the inputs' device.
jit::NodeFn kernel_runner(const Kernel& k, KernelCall fn, KernelCall backward_fn,
                          std::shared_ptr<const Library> lib) {
  auto fallback = std::make_shared<std::once_flag>();
  auto interp = std::make_shared<std::unique_ptr<jit::Interpreter>>();
  const bool cuda_kernel = fn.cuda != nullptr;
  return [&k, fn, backward_fn, lib, fallback, interp, cuda_kernel](Stack& stack) {
    const size_t ni = k.inputs.size(), base = stack.size() - ni;
    bool ok = !(cuda_kernel && ni == 0), needs_grad = false;  // outputs follow an input's device
    const bool grad = GradMode::is_enabled();
    std::vector<void*> args(ni + k.outputs.size());
    Device device = kCPU;
    for (size_t i = 0; i < ni && ok; ++i) {
      const Tensor& t = stack[base + i].to_tensor();
      const KernelArg& a = k.inputs[i];
      device = t.device();
      ok = t.dtype() == a.dtype && (cuda_kernel ? device.is_cuda() : device.is_cpu()) &&
           t.sizes().equals(a.sizes) && t.strides().equals(a.strides);
      needs_grad |= grad && t.requires_grad();
      if (ok) args[i] = cuda_kernel ? element_address(t) : t.impl()->data();
    }
    ok &= !needs_grad || bool(backward_fn);
    if (!ok) {
      std::call_once(*fallback, [&] { *interp = std::make_unique<jit::Interpreter>(*k.fallback); });
      std::vector<IValue> ins(stack.begin() + std::ptrdiff_t(base), stack.end());
      stack.resize(base);
      for (IValue& v : (*interp)->run(ins)) stack.push_back(std::move(v));
      return;
    }
    std::vector<Tensor> outs;
    for (size_t o = 0; o < k.outputs.size(); ++o) {
      const KernelArg& a = k.outputs[o];
      outs.push_back(empty_strided(a.sizes, a.strides, TensorOptions(a.dtype).device(device)));
      args[ni + o] = element_address(outs.back());
    }
    fn(args);
    if (needs_grad) {
      std::vector<Tensor> ins;
      for (size_t i = 0; i < ni; ++i) ins.push_back(stack[base + i].to_tensor());
      attach_backward(k.backward, backward_fn, lib, ins, outs);
    }
    stack.resize(base);
    for (Tensor& t : outs) stack.emplace_back(std::move(t));
  };
}

}  // namespace

struct CompiledFunction::State {
  Tracer tracer;
  jit::TracedFunction eager;
  CompileOptions options;
  struct Entry {
    std::vector<Guard> guards;
    uint32_t autocast = 0;  // autocast::state_key() when traced: its casts are in the graph
    CompiledGraphInfo info;
    jit::AttributeTable attrs;
    std::shared_ptr<Library> lib;
    std::string ptx;  // the kernels' PTX when they run on a CUDA device
    std::unique_ptr<jit::Interpreter> interp;
    bool has_self = false;
  };
  std::mutex mu;
  std::vector<std::unique_ptr<Entry>> entries;
  const Entry* last = nullptr;
  size_t eager_calls = 0;
  bool failed_before = false;

  std::unique_ptr<Entry> build(const std::vector<Tensor>& inputs) {
    auto e = std::make_unique<Entry>();
    e->guards = guards_of(inputs);
    e->autocast = autocast::state_key();
    auto [graph, attrs] = tracer(inputs);
    e->attrs = std::move(attrs);
    const bool debug = debug_enabled();
    std::string before = debug ? graph->str() : "";
    if (options.run_passes) {
      jit::eliminate_dead_code(*graph);
      jit::eliminate_common_subexpression(*graph);
      jit::constant_propagation(*graph);
      jit::peephole(*graph);
      jit::eliminate_dead_code(*graph);
    }
    e->info.traced = graph;
    e->info.lowered = lower(*graph, options.lowering);
    // Inputs on a CUDA device get CUDA kernels (Note [Generated CUDA kernels]); the host runs
    // kCpu, or kCudaEmulated to test the CUDA emitter (Note [CUDA kernels]).
    CodegenOptions codegen = options.codegen;
    bool on_device = false;
    for (const Tensor& t : inputs) on_device |= t.device().is_cuda();
    on_device = on_device && device_available(kCUDA);
    if (on_device) codegen.target = Target::kCuda;
    RT_CHECK(codegen.target != Target::kCuda || on_device,
             "compile: target cuda needs inputs on a CUDA device (",
             device_available(kCUDA) ? "none is" : "CUDA is not available", ")");
    const std::vector<Kernel>& kernels = e->info.lowered.kernels;
    e->info.source = codegen.target == Target::kCpu ? generate_cpp(kernels, codegen)
                                                    : generate_cuda(kernels, codegen);
    if (!kernels.empty() && on_device) {
      e->ptx = compile_ptx(e->info.source, detail::cuda_backend_arch(), &e->info.cache_hit);
    } else if (!kernels.empty()) {
      BuildInfo bi;
      e->lib = build_or_load(e->info.source, &bi);
      e->info.object = bi.object;
      e->info.cache_hit = bi.cache_hit;
      if (debug) {
        std::string stem = bi.object.substr(0, bi.object.size() - 3);
        std::ofstream(stem + ".graph.txt") << "# before passes\n" << before
                                           << "\n# after passes\n" << graph->str();
        std::ofstream(stem + ".loopir.txt") << dump(e->info.lowered);
      }
    }
    const jit::Graph& lg = *e->info.lowered.graph;
    e->has_self = !lg.inputs().empty() && lg.inputs()[0]->type()->kind() == jit::TypeKind::kClass;
    const LoweredGraph& low = e->info.lowered;
    std::shared_ptr<const Library> lib = e->lib;
    const std::string& ptx = e->ptx;
    e->interp = std::make_unique<jit::Interpreter>(
        lg, e->attrs, [&low, lib, &ptx](const jit::Node& n) -> jit::NodeFn {
          if (n.kind() != kCppKernel) return {};
          const Kernel& k = low.kernels.at(size_t(n.attr("index").to_int()));
          // A host symbol of the loaded library, or a CUDA kernel of the PTX module.
          auto call = [&](const Kernel& kk) {
            KernelCall c;
            if (ptx.empty()) {
              c.host = reinterpret_cast<KernelFn>(lib->symbol(kk.name));
            } else {
              const CudaLaunch l = cuda_launch(kk);
              c.cuda = detail::cuda_backend_kernel(ptx, kk.name);
              c.work = l.work;
              c.block = l.block;
            }
            return c;
          };
          return kernel_runner(k, call(k), k.backward ? call(*k.backward) : KernelCall{}, lib);
        });
    return e;
  }
};

CompiledFunction::CompiledFunction(Tracer tracer, jit::TracedFunction eager,
                                   CompileOptions options)
    : state_(std::make_shared<State>()) {
  state_->tracer = std::move(tracer);
  state_->eager = std::move(eager);
  state_->options = options;
}

std::vector<Tensor> CompiledFunction::operator()(const std::vector<Tensor>& inputs) const {
  State& s = *state_;
  const State::Entry* entry = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    const uint32_t autocast_key = autocast::state_key();
    for (const auto& e : s.entries)
      if (e->autocast == autocast_key && guards_match(e->guards, inputs)) {
        entry = e.get();
        break;
      }
    if (!entry && s.entries.size() < s.options.max_recompiles) {
      try {
        s.entries.push_back(s.build(inputs));
        entry = s.entries.back().get();
      } catch (const Error& err) {
        // Compile never fails a program that runs eagerly: say why once, then run eagerly.
        if (!s.failed_before) std::cerr << "retorch.compile: running eagerly: " << err.what() << "\n";
        s.failed_before = true;
      }
    }
    if (!entry) ++s.eager_calls;
    s.last = entry ? entry : s.last;
  }
  if (!entry) return s.eager(inputs);
  std::vector<IValue> ins;
  if (entry->has_self) ins.emplace_back();
  for (const Tensor& t : inputs) ins.emplace_back(t);
  // The graph holds the casts autocast made while tracing: its ops are not cast again.
  ExcludeDispatchKeyGuard no_autocast{DispatchKeySet(DispatchKey::Autocast)};
  std::vector<IValue> outs = entry->interp->run(ins);
  std::vector<Tensor> result;
  for (IValue& v : outs) {
    if (v.is_tensor_list())
      for (const Tensor& t : v.to_tensor_list()) result.push_back(t);
    else
      result.push_back(v.to_tensor());
  }
  return result;
}

size_t CompiledFunction::num_compiled() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->entries.size();
}

const CompiledGraphInfo& CompiledFunction::last() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  RT_CHECK(state_->last != nullptr, "compile: the function has not been compiled yet");
  return state_->last->info;
}

size_t CompiledFunction::eager_calls() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->eager_calls;
}

CompiledFunction compile(jit::TracedFunction fn, CompileOptions options) {
  auto tracer = [fn](const std::vector<Tensor>& inputs) {
    return std::make_pair(jit::trace_graph(fn, inputs), jit::AttributeTable{});
  };
  return CompiledFunction(tracer, fn, options);
}

CompiledFunction compile(nn::Module& module, CompileOptions options) {
  nn::Module* m = &module;
  auto tracer = [m](const std::vector<Tensor>& inputs) {
    jit::ScriptModule sm = jit::trace(*m, inputs);
    jit::AttributeTable attrs;
    for (const auto& [name, t] : sm.named_parameters()) attrs.emplace_back(name, IValue(t));
    for (const auto& [name, t] : sm.named_buffers()) attrs.emplace_back(name, IValue(t));
    return std::make_pair(sm.graph_ptr(), attrs);
  };
  auto eager = [m](const std::vector<Tensor>& inputs) {
    return std::vector<Tensor>{m->forward(inputs.at(0))};
  };
  return CompiledFunction(tracer, eager, options);
}

}  // namespace retorch::compiler
