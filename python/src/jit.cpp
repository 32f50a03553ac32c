// retorch._C._jit: graphs, traced functions and modules, and the tracer entry used by retorch.jit.
#include <Python.h>
#include <frameobject.h>

#include "python/src/bindings.h"
#include "retorch/jit/Parser.h"
#include "retorch/jit/Serialization.h"
#include "retorch/jit/Tracer.h"
#include "retorch/jit/passes/PassManager.h"

namespace retorch::python {

namespace {

// "file.py:LINE:0" of the innermost Python frame whose file is not under pkg_dir ("" if none).
std::string user_frame_location(const std::string& pkg_dir) {
  PyFrameObject* f = PyEval_GetFrame();  // borrowed
  Py_XINCREF(f);
  std::string loc;
  while (f != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(f);  // new reference
    const char* name = PyUnicode_AsUTF8(code->co_filename);
    std::string file = name ? name : "";
    Py_DECREF(code);
    if (file.rfind(pkg_dir, 0) != 0) {
      loc = file + ":" + std::to_string(PyFrame_GetLineNumber(f)) + ":0";
      Py_DECREF(f);
      break;
    }
    PyFrameObject* back = PyFrame_GetBack(f);  // new reference
    Py_DECREF(f);
    f = back;
  }
  if (PyErr_Occurred()) PyErr_Clear();
  return loc;
}

std::vector<Tensor> as_tensors(const std::vector<IValue>& vs) {
  std::vector<Tensor> r;
  r.reserve(vs.size());
  for (const IValue& v : vs) {
    RT_CHECK(v.is_tensor(), "jit: the graph returned a ", v.type_name(),
             " where tensors were "
             "expected");
    r.push_back(v.to_tensor());
  }
  return r;
}

std::vector<IValue> as_ivalues(const std::vector<Tensor>& ts) {
  return std::vector<IValue>(ts.begin(), ts.end());
}

// Python arguments of a scripted function: tensors, numbers, bools, None, lists of ints.
IValue to_ivalue(const py::handle& o) {
  if (o.is_none()) return IValue();
  if (py::isinstance<Tensor>(o)) return IValue(o.cast<Tensor>());
  if (py::isinstance<py::bool_>(o)) return IValue(o.cast<bool>());
  if (py::isinstance<py::int_>(o)) return IValue(o.cast<int64_t>());
  if (py::isinstance<py::float_>(o)) return IValue(o.cast<double>());
  if (py::isinstance<py::str>(o)) return IValue(o.cast<std::string>());
  if (py::isinstance<py::list>(o) || py::isinstance<py::tuple>(o))
    return IValue(o.cast<std::vector<int64_t>>());
  throw py::type_error("retorch.jit: cannot pass a " +
                       std::string(py::str(o.get_type().attr("__name__"))) + " to a graph");
}

py::object from_ivalue(const IValue& v) {
  if (v.is_none()) return py::none();
  if (v.is_tensor()) return py::cast(v.to_tensor());
  if (v.is_bool()) return py::cast(v.to_bool());
  if (v.is_int()) return py::cast(v.to_int());
  if (v.is_double()) return py::cast(v.to_double());
  if (v.is_string()) return py::cast(v.to_string());
  if (v.is_int_list()) return py::cast(v.to_int_list());
  if (v.is_tensor_list()) return py::cast(v.to_tensor_list());
  RT_ERROR("jit: the graph returned a ", v.type_name(), ", which Python cannot receive");
}

}  // namespace

void bind_jit(py::module_& m) {
  using namespace retorch::jit;
  py::module_ j = m.def_submodule("_jit", "the JIT behind retorch.jit");

  py::class_<Graph, std::shared_ptr<Graph>>(j, "Graph")
      .def("__str__", [](const Graph& g) { return g.str(); })
      .def("__repr__", [](const Graph& g) { return g.str(); })
      .def("str", &Graph::str, py::arg("print_source_locations") = true)
      .def("lint", &Graph::lint)
      .def("num_nodes", &Graph::num_nodes)
      .def("node_kinds", [](const Graph& g) {
        std::vector<std::string> r;
        for (Node* n : g.nodes()) r.push_back(n->kind());
        return r;
      });

  py::class_<ScriptFunction>(j, "ScriptFunction")
      .def(py::init<std::shared_ptr<Graph>>())
      .def_property_readonly("graph", [](const ScriptFunction& f) { return f.graph_ptr(); })
      .def_property_readonly("code", &ScriptFunction::code)
      .def("invalidate", &ScriptFunction::invalidate)
      .def("run_passes",
           [](ScriptFunction& f, const std::vector<std::string>& names) {
             run_pipeline(f.graph(), names);  // the non-const graph() recompiles on next run
           })
      .def("run_default_passes", [](ScriptFunction& f) { run_default_pipeline(f.graph()); })
      .def("run_values",
           [](const ScriptFunction& f, const py::list& args) {
             std::vector<IValue> in;
             for (const auto& a : args) in.push_back(to_ivalue(a));
             std::vector<IValue> out;
             {
               py::gil_scoped_release no_gil;
               out = f.run(in);
             }
             py::list r;
             for (const IValue& v : out) r.append(from_ivalue(v));
             return r;
           })
      .def("run", [](const ScriptFunction& f, const std::vector<Tensor>& inputs) {
        py::gil_scoped_release no_gil;
        return as_tensors(f.run(as_ivalues(inputs)));
      });

  py::class_<ScriptModule, ScriptFunction>(j, "ScriptModule")
      .def(py::init<std::shared_ptr<Graph>, std::vector<std::pair<std::string, Tensor>>,
                    std::vector<std::pair<std::string, Tensor>>>())
      .def("forward",
           [](const ScriptModule& f, const std::vector<Tensor>& inputs) {
             py::gil_scoped_release no_gil;
             return as_tensors(f.forward(as_ivalues(inputs)));
           })
      .def("named_parameters", &ScriptModule::named_parameters)
      .def("named_buffers", &ScriptModule::named_buffers);

  j.def("_save_function", [](const ScriptFunction& f, const std::string& path) { save(f, path); });
  j.def("_save_module", [](const ScriptModule& m, const std::string& path) { save(m, path); });
  // (is_module, ScriptModule or ScriptFunction)
  j.def("_load", [](const std::string& path) {
    LoadedProgram p = load_program(path);
    if (p.is_module) return py::make_tuple(true, py::cast(*p.module));
    return py::make_tuple(false, py::cast(*p.function));
  });
  j.def("_parse_ir", [](const std::string& text) {
    return std::shared_ptr<Graph>(parse_ir(text));
  });

  // _trace(fn, inputs, attributes, input_names, self_type, package_dir, warning_class): fn takes
  // the list of inputs and returns a list of tensors; returns the Graph.
  j.def("_trace", [](py::function fn, const std::vector<Tensor>& inputs,
                     std::vector<std::pair<std::string, Tensor>> attributes,
                     std::vector<std::string> input_names, std::string self_type,
                     std::string package_dir, py::object warning_class) {
    TraceOptions o;
    o.attributes = std::move(attributes);
    o.input_names = std::move(input_names);
    o.self_type = std::move(self_type);
    // The hooks take the GIL: a traced graph run inside the trace (a traced function called
    // by the function being traced) releases it, and its ops reach the tracer from there.
    o.source_location = [package_dir] {
      py::gil_scoped_acquire gil;
      return user_frame_location(package_dir);
    };
    o.warn = [warning_class](const std::string& msg) {
      py::gil_scoped_acquire gil;
      // Raises (error_already_set) when warnings are turned into errors.
      py::module_::import("warnings").attr("warn")(msg, warning_class, 1);
    };
    TracedFunction f = [&fn](const std::vector<Tensor>& in) {
      return fn(py::cast(in)).cast<std::vector<Tensor>>();
    };
    return trace_graph(f, inputs, o);
  });
}

}  // namespace retorch::python
