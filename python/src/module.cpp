// The retorch._C extension module: dtypes, devices, generators, autograd, and every op.
#include "python/src/bindings.h"
#include "retorch/backend/cpu/CpuIsa.h"
#include "retorch/backend/cpu/Parallel.h"
#include "retorch/core/Allocator.h"
#include "retorch/core/MatmulPrecision.h"
#include "retorch/core/PrintOptions.h"
#include "retorch/device/DeviceApi.h"
#include "retorch/dispatch/Dispatcher.h"
#include "retorch/generated/python_ops.h"

namespace retorch::python {

void bind_tensor(py::module_& m, py::class_<Tensor>& cls);
void bind_tensorboard(py::module_& m);
void bind_io(py::module_& m);
void bind_data(py::module_& m);
void bind_optim(py::module_& m);
void bind_nn(py::module_& m);
void bind_dlpack(py::module_& m, py::class_<Tensor>& cls);
void bind_autograd_function(py::module_& m);
void bind_memory_format(py::module_& m, py::class_<Tensor>& cls);
void bind_jit(py::module_& m);
void bind_compiler(py::module_& m);
void bind_profiler(py::module_& m);
void bind_gguf(py::module_& m);
void bind_tokenizer(py::module_& m);
void bind_llm(py::module_& m);
void bind_device(py::module_& m);
void bind_distributed(py::module_& m);
void bind_autocast(py::module_& m);

namespace {

std::vector<Tensor> as_tensor_list(py::handle obj) {
  if (py::isinstance<Tensor>(obj)) return {obj.cast<Tensor>()};
  std::vector<Tensor> out;
  for (py::handle h : obj) out.push_back(h.is_none() ? Tensor() : h.cast<Tensor>());
  return out;
}

py::object wrap_outputs(const autograd::variable_list& v) {
  py::tuple t(v.size());
  for (size_t i = 0; i < v.size(); ++i) t[i] = v[i].defined() ? py::cast(v[i]) : py::none();
  return std::move(t);
}

void bind_dtypes(py::module_& m) {
  py::enum_<ScalarType> dt(m, "dtype");
  const std::pair<const char*, ScalarType> names[] = {
      {"uint8", kByte},     {"int8", kChar},      {"int16", kShort},   {"short", kShort},
      {"int32", kInt},      {"int", kInt},        {"int64", kLong},    {"long", kLong},
      {"float16", kHalf},   {"half", kHalf},      {"float32", kFloat}, {"float", kFloat},
      {"float64", kDouble}, {"double", kDouble},  {"bool", kBool},     {"bfloat16", kBFloat16}};
  for (auto& [n, t] : names) dt.value(n, t);
  dt.def("__repr__", [](ScalarType t) { return "retorch." + std::string(dtype_name(t)); });
  dt.def("__str__", [](ScalarType t) { return "retorch." + std::string(dtype_name(t)); });
  dt.def_property_readonly("is_floating_point", [](ScalarType t) { return is_floating_type(t); });
  dt.def_property_readonly("itemsize", [](ScalarType t) { return element_size(t); });
  for (auto& [n, t] : names) m.attr(n) = py::cast(t);
  // Note [dtype objects]
  // As torch.dtype: one object per dtype (the caster in bindings.h hands out the same one each
  // time, aliases like float and float32 included), compared and hashed by identity. pybind11's
  // enum __eq__ and __hash__ went through int() each call (`x.dtype == y` took 1.3 us, torch
  // 0.05); pickling and copying give back the same object.
  py::delattr(dt, "__eq__");
  py::delattr(dt, "__ne__");
  py::delattr(dt, "__hash__");
  // pickled by name, as torch's: the module attribute retorch._C.float32 & co.
  dt.def("__reduce__", [](ScalarType t) { return std::string(dtype_name(t)); });
}

struct InferenceModeCtx {
  std::unique_ptr<InferenceMode> guard;
  bool enabled;
};

}  // namespace

}  // namespace retorch::python

using namespace retorch;
using namespace retorch::python;

PYBIND11_MODULE(_C, m) {
  m.doc() = "retorch: PyTorch's architecture in modern C++";
  // torch.OutOfMemoryError (also torch.cuda.OutOfMemoryError): a RuntimeError.
  static PyObject* out_of_memory =
      PyErr_NewException("retorch.OutOfMemoryError", PyExc_RuntimeError, nullptr);
  m.attr("OutOfMemoryError") = py::handle(out_of_memory);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const retorch::Error& e) {
      PyObject* type = PyExc_RuntimeError;
      switch (e.kind()) {
        case ErrorKind::kIndex: type = PyExc_IndexError; break;
        case ErrorKind::kType: type = PyExc_TypeError; break;
        case ErrorKind::kValue: type = PyExc_ValueError; break;
        case ErrorKind::kNotImplemented: type = PyExc_NotImplementedError; break;
        case ErrorKind::kOutOfMemory: type = out_of_memory; break;
        default: break;
      }
      PyErr_SetString(type, e.what());
    }
  });

  bind_dtypes(m);

  py::class_<Device>(m, "device")
      .def(py::init<std::string>())
      .def(py::init([](const std::string& type, int index) {
        return Device(Device(type).type, int8_t(index));
      }))
      .def_property_readonly("type", [](const Device& d) { return std::string(device_type_name(d.type)); })
      .def_property_readonly("index", [](const Device& d) -> py::object {
        return d.index < 0 ? py::none() : py::cast(int(d.index));
      })
      // devices only, as torch's: device("cpu") == "cpu" is False
      .def("__eq__", [](const Device& a, py::handle b) {
        return py::isinstance<Device>(b) && a == b.cast<Device>();
      })
      .def("__hash__", [](const Device& d) { return int(d.type) * 256 + d.index; })
      .def("__str__", &Device::str)
      .def("__repr__", [](const Device& d) {
        return "device(type='" + std::string(device_type_name(d.type)) + "'" +
               (d.index >= 0 ? ", index=" + std::to_string(d.index) : std::string()) + ")";
      });
  // (a device string converts in type_caster<Device>: Note [Fast caster failure])

  py::class_<Generator>(m, "Generator")
      .def(py::init<>())
      .def("manual_seed", [](Generator& g, uint64_t s) { g.manual_seed(s); return g; })
      .def("initial_seed", &Generator::initial_seed)
      .def("seed", &Generator::seed)
      .def("get_state", [](const Generator& g) { return g.get_state(); })
      .def("set_state", [](Generator& g, std::array<uint64_t, 2> s) { g.set_state(s); return g; });
  m.def("manual_seed", [](uint64_t s) { manual_seed(s); return default_generator(); });
  m.def("default_generator", []() { return default_generator(); });

  py::class_<autograd::Node, std::shared_ptr<autograd::Node>>(m, "Node")
      .def("name", &autograd::Node::name)
      .def_property_readonly("next_functions", [](const autograd::Node& n) {
        py::list l;
        for (auto& e : n.next_edges())
          l.append(py::make_tuple(e.function ? py::cast(e.function) : py::none(), e.input_nr));
        return py::tuple(l);
      })
      .def("__repr__", [](const autograd::Node& n) { return "<" + n.name() + " object>"; });
  bind_autograd_function(m);

  py::class_<Tensor> cls(m, "Tensor", py::dynamic_attr());  // attributes, as torch's
  bind_tensor(m, cls);
  bind_generated(m, cls);
  bind_memory_format(m, cls);
  bind_tensorboard(m);
  bind_io(m);
  bind_data(m);
  bind_optim(m);
  bind_nn(m);
  bind_dlpack(m, cls);
  bind_jit(m);
  bind_compiler(m);
  bind_profiler(m);
  bind_gguf(m);
  bind_tokenizer(m);
  bind_llm(m);
  bind_device(m);
  bind_distributed(m);
  bind_autocast(m);

  // Grad modes.
  m.def("is_grad_enabled", &GradMode::is_enabled);
  m.def("_set_grad_enabled", &GradMode::set_enabled);
  m.def("is_inference_mode_enabled", &InferenceMode::is_enabled);
  py::class_<InferenceModeCtx>(m, "_InferenceMode")
      .def(py::init([](bool enabled) { return InferenceModeCtx{nullptr, enabled}; }))
      .def("__enter__", [](InferenceModeCtx& c) { c.guard = std::make_unique<InferenceMode>(c.enabled); })
      .def("__exit__", [](InferenceModeCtx& c, py::args) { c.guard.reset(); });
  m.def("is_anomaly_enabled", &AnomalyMode::is_enabled);
  m.def("_set_anomaly_enabled", &AnomalyMode::set_enabled);

  // Autograd entry points.
  m.def("_backward", [](py::handle tensors, py::handle grads, std::optional<bool> retain_graph,
                        bool create_graph, py::handle inputs) {
    autograd::backward(as_tensor_list(tensors), grads.is_none() ? autograd::variable_list{} : as_tensor_list(grads),
                       retain_graph, create_graph,
                       inputs.is_none() ? autograd::variable_list{} : as_tensor_list(inputs));
  });
  m.def("_grad", [](py::handle outputs, py::handle inputs, py::handle grad_outputs,
                    std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
    auto r = autograd::grad(as_tensor_list(outputs), as_tensor_list(inputs),
                            grad_outputs.is_none() ? autograd::variable_list{} : as_tensor_list(grad_outputs),
                            retain_graph, create_graph, allow_unused);
    return wrap_outputs(r);
  });
  m.def("_gradcheck", [](py::function fn, py::handle inputs, double eps, double atol, double rtol,
                         bool raise_exception) {
    auto ins = as_tensor_list(inputs);
    auto f = [fn](const autograd::variable_list& xs) {
      py::tuple args(xs.size());
      for (size_t i = 0; i < xs.size(); ++i) args[i] = py::cast(xs[i]);
      py::object r = fn(*args);
      return as_tensor_list(r);
    };
    return autograd::gradcheck(f, ins, eps, atol, rtol, raise_exception);
  });

  // Runtime settings and statistics.
  m.def("get_default_dtype", &default_dtype);
  m.def("set_default_dtype", &set_default_dtype);
  m.def("_get_printoptions", [] {
    PrintOptions o = print_options();
    py::dict d;
    d["precision"] = o.precision;
    d["threshold"] = o.threshold;
    d["edgeitems"] = o.edgeitems;
    d["linewidth"] = o.linewidth;
    d["sci_mode"] = o.sci_mode ? py::cast(*o.sci_mode) : py::none();
    return d;
  });
  m.def("_set_printoptions", [](int precision, int64_t threshold, int64_t edgeitems,
                                int linewidth, std::optional<bool> sci_mode) {
    set_print_options({precision, threshold, edgeitems, linewidth, sci_mode});
  });
  m.def("get_num_threads", &get_num_threads);
  m.def("set_num_threads", &set_num_threads);
  m.def("_get_cpu_isa", []() { return std::string(cpu::cpu_isa_name(cpu::cpu_isa())); });
  m.def("_cpu_isa_supported",
        []() { return std::string(cpu::cpu_isa_name(cpu::cpu_isa_supported())); });
  m.def("_set_cpu_isa", &cpu::set_cpu_isa);
  m.def("get_float32_matmul_precision", &float32_matmul_precision_name);
  m.def("_set_float32_matmul_precision",
        [](const std::string& p) { return set_float32_matmul_precision(p); });
  m.def("_cuda_matmul_allow_tf32", []() { return cuda::matmul::allow_tf32(); });
  m.def("_set_cuda_matmul_allow_tf32", &cuda::matmul::set_allow_tf32);
  m.def("_cpu_memory_stats", []() {
    AllocatorStats s = cpu_allocator()->stats();
    py::dict d;
    d["allocated_bytes"] = s.allocated_bytes;
    d["reserved_bytes"] = s.reserved_bytes;
    d["peak_allocated_bytes"] = s.peak_allocated_bytes;
    d["num_allocs"] = s.num_allocs;
    d["num_os_allocs"] = s.num_os_allocs;
    return d;
  });
  m.def("_ops", []() {
    py::list l;
    for (auto* h : Dispatcher::singleton().ops()) l.append(h->qualified_name());
    return l;
  });
  m.def("_op_schemas", []() {
    py::list l;
    for (auto* h : Dispatcher::singleton().ops()) l.append(std::string(h->schema().schema));
    return l;
  });
}
