// Python bindings of the profiler (_C._profiler): a Profile session, record_function ranges,
// statistics as dicts, the tables and the Chrome trace (retorch/profiler.py wraps them); and the
// launch manager's capture and replay (_C._launch, wrapped by retorch/runtime.py).
#include "bindings.h"
#include "retorch/profiler/Profiler.h"
#include "retorch/runtime/LaunchManager.h"

namespace retorch::python {

namespace {

// The Python frames of the calling thread, innermost first: with_stack profiles call this on
// each op the user calls (with the GIL held: ops are called from Python).
std::vector<std::string> python_stack() {
  std::vector<std::string> out;
  if (!Py_IsInitialized() || !PyGILState_Check()) return out;
  for (PyFrameObject* f = PyEval_GetFrame(); f != nullptr; ) {
    PyCodeObject* code = PyFrame_GetCode(f);
    std::string file = py::str(code->co_filename), name = py::str(code->co_name);
    out.push_back(file + "(" + std::to_string(PyFrame_GetLineNumber(f)) + "): " + name);
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(f);
    if (f != PyEval_GetFrame()) Py_DECREF(f);
    f = back;
  }
  return out;
}

}  // namespace

void bind_profiler(py::module_& m) {
  using namespace retorch::profiler;
  set_stack_provider(&python_stack);
  py::module_ p = m.def_submodule("_profiler", "the profiler behind retorch.profiler");
  py::class_<Profile>(p, "Profile")
      // schedule: (wait, warmup, active, repeat) or None
      .def(py::init([](bool record_shapes, std::optional<std::vector<int64_t>> schedule,
                       bool profile_memory, bool with_stack) {
             ProfilerOptions o;
             o.record_shapes = record_shapes;
             o.profile_memory = profile_memory;
             o.with_stack = with_stack;
             if (schedule) {
               RT_CHECK(schedule->size() == 4, "profiler: schedule needs 4 numbers");
               o.schedule = Schedule{(*schedule)[0], (*schedule)[1], (*schedule)[2], (*schedule)[3]};
             }
             return std::make_unique<Profile>(o);
           }),
           py::arg("record_shapes") = false, py::arg("schedule") = py::none(),
           py::arg("profile_memory") = false, py::arg("with_stack") = false)
      .def("stop", &Profile::stop)
      .def("step", &Profile::step)
      .def_property_readonly("active", &Profile::active)
      .def("events",
           [](const Profile& prof) {
             py::list out;
             for (const profiler::Event& e : prof.events()) {
               py::dict d;
               d["name"] = e.name;
               d["kind"] = e.kind;
               d["shapes"] = e.shapes;
               d["start_ns"] = e.start_ns;
               d["end_ns"] = e.end_ns;
               d["self_ns"] = e.self_ns;
               d["device_ns"] = e.device_ns;
               d["stream"] = e.stream;
               d["depth"] = e.depth;
               d["op"] = e.op;
               d["mem_bytes"] = e.mem_bytes;
               d["self_mem_bytes"] = e.self_mem_bytes;
               d["stack"] = e.stack;
               out.append(d);
             }
             return out;
           })
      .def("key_averages",
           [](const Profile& prof, bool by_shape, const std::string& sort_by) {
             py::list out;
             for (const EventStats& s : prof.key_averages(by_shape, sort_by)) {
               py::dict d;
               d["key"] = s.name;
               d["input_shapes"] = s.shapes;
               d["count"] = s.count;
               d["cpu_time_total"] = s.total_ns / 1e3;  // microseconds, as torch
               d["self_cpu_time_total"] = s.self_ns / 1e3;
               d["cpu_time"] = s.avg_ns / 1e3;
               out.append(d);
             }
             return out;
           },
           py::arg("group_by_input_shape") = false, py::arg("sort_by") = "self_cpu_time_total")
      .def("table", &Profile::table, py::arg("sort_by") = "self_cpu_time_total",
           py::arg("row_limit") = -1, py::arg("group_by_input_shape") = false)
      .def("kernel_summary", &Profile::kernel_summary, py::arg("row_limit") = -1,
           py::arg("by_op") = false)
      .def("chrome_trace",
           [](const Profile& prof, bool merge, size_t max_events) {
             return prof.chrome_trace(TraceOptions{merge, max_events});
           },
           py::arg("merge_identical") = false, py::arg("max_events") = 1000000)
      .def("export_chrome_trace",
           [](const Profile& prof, const std::string& path, bool merge, size_t max_events) {
             prof.export_chrome_trace(path, TraceOptions{merge, max_events});
           },
           py::arg("path"), py::arg("merge_identical") = false, py::arg("max_events") = 1000000)
      .def("table_csv", &Profile::table_csv, py::arg("group_by_input_shape") = false)
      .def("memory_events", [](const Profile& prof) {
        py::list out;
        for (const MemoryRecord& m : prof.memory_events())
          out.append(py::make_tuple(m.ts_ns, m.bytes, m.allocated_bytes, m.reserved_bytes,
                                    m.device.str()));
        return out;
      });
  p.def("memory_summary", [](const std::string& device) { return memory_summary(Device(device)); },
        py::arg("device") = "cpu");
  py::class_<RecordFunction>(p, "RecordFunction").def(py::init<std::string>(), py::arg("name"));

  using runtime::LaunchGraph;
  py::module_ l = m.def_submodule("_launch", "the launch manager behind retorch.runtime");
  py::class_<LaunchGraph>(l, "LaunchGraph")
      .def("replay", &LaunchGraph::replay, py::call_guard<py::gil_scoped_release>())
      .def("__len__", &LaunchGraph::size)
      .def("records", [](const LaunchGraph& g) {
        py::list out;
        for (const runtime::LaunchRecord& r : g.records()) {
          py::dict d;
          d["name"] = r.name;
          d["op"] = r.op;
          d["device"] = r.device.str();
          d["stream"] = r.stream;
          d["range"] = r.range;
          d["arg_bytes"] = r.arg_bytes;
          d["shapes"] = r.shapes;
          out.append(d);
        }
        return out;
      });
  l.def("capture", [](const py::function& fn) {
    return runtime::LaunchManager::get().capture([&] { fn(); });
  }, py::arg("fn"));
}

}  // namespace retorch::python
