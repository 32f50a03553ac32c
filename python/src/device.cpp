// Python bindings of the device API (retorch.cuda / mps / xpu) and of device routing.
#include "python/src/bindings.h"
#include "retorch/device/Nvtx.h"

namespace retorch::python {
namespace {

DeviceType type_of(const std::string& name) {
  Device d(name);
  return d.type;
}

// The fallback's warn policy as a Python UserWarning (filterable, and an error under -W error).
void python_warning(const std::string& message) {
  py::gil_scoped_acquire gil;
  if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) != 0) throw py::error_already_set();
}

FallbackPlacement placement_of(const std::string& s) {
  if (s == "requested") return FallbackPlacement::kRequested;
  if (s == "executing") return FallbackPlacement::kExecuting;
  RT_ERROR_KIND(ErrorKind::kValue,
                "set_device_fallback_placement: expected 'requested' or 'executing', got '", s, "'");
}

}  // namespace

void bind_device(py::module_& m) {
  set_fallback_warning_handler(&python_warning);

  py::class_<Stream>(m, "Stream")
      .def(py::init([](std::optional<Device> device, int priority) {
             return device_api::new_stream(device.value_or(Device(kCUDA)), priority);
           }),
           py::arg("device") = py::none(), py::arg("priority") = 0)
      .def_property_readonly("device", &Stream::device)
      .def_property_readonly("priority", &Stream::priority)
      .def_property_readonly("stream_id", &Stream::id)
      .def("query", &Stream::query)
      .def("synchronize", &Stream::synchronize)
      .def("wait_event", &Stream::wait_event)
      .def("wait_stream", &Stream::wait_stream)
      .def("record_event", [](const Stream& s, std::optional<Event> e) {
             Event ev = e.value_or(Event());
             ev.record(s);
             return ev;
           }, py::arg("event") = py::none())
      .def("__eq__", [](const Stream& a, const Stream& b) { return a == b; })
      .def("__hash__", [](const Stream& s) {
        return (s.id() * 64 + int(s.device().type)) * 256 + s.device().index;
      })
      .def("__repr__", [](const Stream& s) {
        return "<retorch.Stream device=" + s.device().str() + " id=" + std::to_string(s.id()) + ">";
      });

  py::class_<Event>(m, "Event")
      .def(py::init([](bool enable_timing, bool, bool) { return Event(enable_timing); }),
           py::arg("enable_timing") = false, py::arg("blocking") = false,
           py::arg("interprocess") = false)
      .def("record", [](Event& e, std::optional<Stream> s) {
             e.record(s.value_or(device_api::current_stream(kCUDA, -1)));
           }, py::arg("stream") = py::none())
      .def("query", &Event::query)
      .def("synchronize", &Event::synchronize)
      .def("wait", [](const Event& e, std::optional<Stream> s) {
             e.wait(s.value_or(device_api::current_stream(kCUDA, -1)));
           }, py::arg("stream") = py::none())
      .def("elapsed_time", &Event::elapsed_time);

  py::class_<cuda::CUDAGraph>(m, "CUDAGraph")
      .def(py::init<>())
      .def("capture_begin", [](cuda::CUDAGraph& g, const py::object& pool,
                               const std::string& capture_error_mode) {
             if (!pool.is_none())
               throw Error(ErrorKind::kNotImplemented,
                           "CUDAGraph.capture_begin: sharing a memory pool between graphs (pool=) "
                           "is not supported; each graph has its own");
             if (capture_error_mode != "global" && capture_error_mode != "thread_local" &&
                 capture_error_mode != "relaxed")
               throw py::value_error("CUDAGraph.capture_begin: capture_error_mode must be "
                                     "'global', 'thread_local' or 'relaxed', got '" +
                                     capture_error_mode + "'");
             g.capture_begin();
           }, py::arg("pool") = py::none(), py::arg("capture_error_mode") = "global")
      .def("capture_end", &cuda::CUDAGraph::capture_end)
      .def("_capture_abort", &cuda::CUDAGraph::capture_abort)
      .def("replay", &cuda::CUDAGraph::replay)
      .def("reset", &cuda::CUDAGraph::reset);

  // The per-type API; python/retorch/_device_api.py builds retorch.cuda / mps / xpu from it.
  m.def("_device_available", [](const std::string& t) { return device_available(type_of(t)); });
  m.def("_device_count", [](const std::string& t) { return device_count(type_of(t)); });
  m.def("_current_device", [](const std::string& t) { return device_api::current_device(type_of(t)); });
  m.def("_set_device", [](const std::string& t, int i) { device_api::set_device(type_of(t), i); });
  m.def("_synchronize", [](const std::string& t, int i) { device_api::synchronize(type_of(t), i); });
  m.def("_current_stream", [](const std::string& t, int i) {
    return device_api::current_stream(type_of(t), i);
  });
  m.def("_default_stream", [](const std::string& t, int i) {
    return device_api::default_stream(type_of(t), i);
  });
  m.def("_set_stream", &device_api::set_stream);
  m.def("_cuda_is_built", &detail::cuda_backend_built);
  m.def("_nvtx_range_push", &cuda::nvtx::range_push);
  m.def("_nvtx_range_pop", &cuda::nvtx::range_pop);
  m.def("_nvtx_range_start", &cuda::nvtx::range_start);
  m.def("_nvtx_range_end", &cuda::nvtx::range_end);
  m.def("_nvtx_mark", &cuda::nvtx::mark);
  m.def("_device_manual_seed", [](const std::string& t, uint64_t s) {
    device_api::manual_seed(type_of(t), s);
  });
  m.def("_device_get_rng_state", [](const std::string& t, int i) {
    return device_api::get_rng_state(type_of(t), i);
  });
  m.def("_device_set_rng_state", [](const std::string& t, const Tensor& s, int i) {
    device_api::set_rng_state(type_of(t), s, i);
  });
  m.def("_memory_stat", [](const std::string& t, const std::string& what, int i) -> int64_t {
    DeviceType ty = type_of(t);
    if (what == "allocated") return device_api::memory_allocated(ty, i);
    if (what == "max_allocated") return device_api::max_memory_allocated(ty, i);
    if (what == "reserved") return device_api::memory_reserved(ty, i);
    if (what == "max_reserved") return device_api::max_memory_reserved(ty, i);
    RT_ERROR("unknown memory statistic '", what, "'");
  });
  m.def("_reset_peak_memory_stats", [](const std::string& t, int i) {
    device_api::reset_peak_memory_stats(type_of(t), i);
  });
  m.def("_empty_cache", [](const std::string& t) { device_api::empty_cache(type_of(t)); });
  m.def("_memory_summary", [](const std::string& t, int i) {
    return device_api::memory_summary(type_of(t), i);
  });
  // torch.cuda.get_device_properties's object (torch._C._CudaDeviceProperties).
  py::class_<DeviceProperties>(m, "_DeviceProperties")
      .def_readonly("name", &DeviceProperties::name)
      .def_readonly("major", &DeviceProperties::major)
      .def_readonly("minor", &DeviceProperties::minor)
      .def_readonly("multi_processor_count", &DeviceProperties::multi_processor_count)
      .def_readonly("total_memory", &DeviceProperties::total_memory)
      .def_readonly("L2_cache_size", &DeviceProperties::l2_cache_size)
      .def("__repr__", [](const DeviceProperties& p) {
        return "_CudaDeviceProperties(name='" + p.name + "', major=" + std::to_string(p.major) +
               ", minor=" + std::to_string(p.minor) + ", total_memory=" +
               std::to_string(p.total_memory / (1024 * 1024)) + "MB, multi_processor_count=" +
               std::to_string(p.multi_processor_count) + ")";
      });
  m.def("_device_properties", [](const std::string& t, int i) {
    return device_api::get_device_properties(type_of(t), i);
  });
  m.def("_mem_get_info", [](const std::string& t, int i) {
    return device_api::mem_get_info(type_of(t), i);
  });

  // Device routing (Note [Device routing]).
  m.def("set_device_fallback", py::overload_cast<const std::string&>(&set_device_fallback),
        "auto | warn | error | off: what an op on a device without a kernel for it does");
  m.def("get_device_fallback", [] { return device_fallback_name(device_fallback()); });
  m.def("set_device_fallback_placement", [](const std::string& s) {
    set_device_fallback_placement(placement_of(s));
  });
  m.def("get_device_fallback_placement", [] {
    return device_fallback_placement() == FallbackPlacement::kRequested ? "requested" : "executing";
  });
  m.def("set_device_fallback_order", [](const std::vector<std::string>& order) {
    std::vector<DeviceType> types;
    for (const auto& s : order) types.push_back(type_of(s));
    set_device_fallback_order(types);
  });
  m.def("get_device_fallback_order", [] {
    std::vector<std::string> out;
    for (DeviceType t : device_fallback_order()) out.emplace_back(device_type_name(t));
    return out;
  });
  m.def("device_fallback_stats", [] {
    py::list rows;
    for (const auto& s : device_fallback_stats()) {
      py::dict d;
      d["op"] = s.op;
      d["from"] = s.from.str();
      d["to"] = s.to.str();
      d["calls"] = s.calls;
      d["bytes_moved"] = s.bytes_moved;
      d["bytes_copied"] = s.bytes_copied;
      d["move_ns"] = s.move_ns;
      rows.append(d);
    }
    return rows;
  });
  m.def("reset_device_fallback_stats", &reset_device_fallback_stats);
  m.def("device_fallback_report", &device_fallback_report);
  m.def("compat_matrix", [] {
    py::dict out;
    for (const auto& r : compat_matrix()) out[py::str(r.op)] = r.devices;
    return out;
  });
  m.def("compat_matrix_text", &compat_matrix_text, py::arg("markdown") = false);
}

}  // namespace retorch::python
