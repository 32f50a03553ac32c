// Python bindings of retorch::compile (_C._compiler): a CompiledFunction built from a Python
// tracer (retorch.jit.trace) and the eager function, with its options and introspection; and
// compiler::benchmark.
#include "bindings.h"
#include "retorch/compiler/Benchmark.h"
#include "retorch/compiler/Compiler.h"
#include "retorch/compiler/Nvrtc.h"

namespace retorch::python {

void bind_compiler(py::module_& m) {
  using namespace retorch::compiler;
  py::module_ c = m.def_submodule("_compiler", "the compiler behind retorch.compile");
  py::class_<CompiledFunction>(c, "CompiledFunction")
      // tracer(inputs) -> (jit Graph, [(name, tensor)]); eager(inputs) -> [tensor]
      .def(py::init([](py::function tracer, py::function eager, size_t max_recompiles,
                       size_t max_fusion_size, bool horizontal, int threads,
                       const std::string& target) {
             CompileOptions o;
             o.max_recompiles = max_recompiles;
             o.lowering.max_fusion_size = max_fusion_size;
             o.lowering.horizontal = horizontal;
             o.codegen.threads = threads;
             if (target == "cuda_emulated") o.codegen.target = Target::kCudaEmulated;
             else RT_CHECK(target == "cpu", "retorch.compile: target must be 'cpu' or "
                           "'cuda_emulated', not '", target, "'");
             CompiledFunction::Tracer t = [tracer](const std::vector<Tensor>& in) {
               py::gil_scoped_acquire gil;
               auto r = tracer(py::cast(in))
                            .cast<std::pair<std::shared_ptr<jit::Graph>,
                                            std::vector<std::pair<std::string, Tensor>>>>();
               jit::AttributeTable attrs;
               for (auto& [name, tensor] : r.second) attrs.emplace_back(name, IValue(tensor));
               return std::make_pair(r.first, attrs);
             };
             jit::TracedFunction e = [eager](const std::vector<Tensor>& in) {
               py::gil_scoped_acquire gil;
               return eager(py::cast(in)).cast<std::vector<Tensor>>();
             };
             return CompiledFunction(t, e, o);
           }),
           py::arg("tracer"), py::arg("eager"), py::arg("max_recompiles") = 8,
           py::arg("max_fusion_size") = 64, py::arg("horizontal") = true, py::arg("threads") = 0,
           py::arg("target") = "cpu")
      .def("__call__", [](const CompiledFunction& f,
                          const std::vector<Tensor>& inputs) { return f(inputs); })
      .def_property_readonly("num_compiled", &CompiledFunction::num_compiled)
      .def_property_readonly("eager_calls", &CompiledFunction::eager_calls)
      .def_property_readonly("source", [](const CompiledFunction& f) { return f.last().source; })
      .def_property_readonly("loop_ir",
                             [](const CompiledFunction& f) { return dump(f.last().lowered); })
      .def_property_readonly("kernel_names",
                             [](const CompiledFunction& f) {
                               std::vector<std::string> names;
                               for (const Kernel& k : f.last().lowered.kernels)
                                 names.push_back(k.name);
                               return names;
                             })
      .def_property_readonly("cache_hit",
                             [](const CompiledFunction& f) { return f.last().cache_hit; })
      // The CUDA source of the last specialization's kernels (Target kCuda), for NVRTC.
      .def_property_readonly("cuda_source", [](const CompiledFunction& f) {
        CodegenOptions o;
        o.target = Target::kCuda;
        return generate_cuda(f.last().lowered.kernels, o);
      });
  c.def("nvrtc_available", [] { return nvrtc_available(); });
  c.def("nvrtc_version", &nvrtc_version);
  c.def(
      "compile_ptx",
      [](const std::string& source, const std::string& arch) {
        bool hit = false;
        std::string ptx = compile_ptx(source, arch, &hit);
        return py::make_tuple(ptx, hit);
      },
      py::arg("source"), py::arg("arch") = "compute_80");
  // benchmark(fn, warmup_ms, rep_ms, flush_cache) -> dict of seconds and counts
  c.def(
      "benchmark",
      [](py::function fn, double warmup_ms, double rep_ms, bool flush_cache) {
        BenchmarkOptions o;
        o.warmup_ms = warmup_ms;
        o.rep_ms = rep_ms;
        o.flush_cache = flush_cache;
        BenchmarkResult r = benchmark([&fn] { fn(); }, o);
        py::dict d;
        d["median"] = r.median;
        d["p20"] = r.p20;
        d["p80"] = r.p80;
        d["min"] = r.min;
        d["mean"] = r.mean;
        d["warmup"] = r.warmup;
        d["reps"] = r.reps;
        return d;
      },
      py::arg("fn"), py::arg("warmup_ms") = 25.0, py::arg("rep_ms") = 100.0,
      py::arg("flush_cache") = true);
}

}  // namespace retorch::python
