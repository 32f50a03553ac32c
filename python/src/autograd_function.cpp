// PyFunctionNode: the backward node of a Python autograd.Function, the output wrapping, and the
// saved-tensor hooks of autograd.graph.
#include <unordered_set>

#include "python/src/bindings.h"
#include "retorch/autograd/GeneratedHelpers.h"
#include "retorch/autograd/SavedVariable.h"

namespace retorch::python {

namespace {

using autograd::Node;
using autograd::SavedVariable;
using autograd::variable_list;

// Note [Python Function ownership]
// The node owns the Python ctx (user attributes live there) and the backward trampoline; the
// ctx only holds a weak reference back (a FunctionNodeRef), so the node -> ctx edge, which
// Python's GC cannot see, never closes a cycle. Saved tensors live in the node as
// SavedVariables, so outputs are saved without their grad_fn (no cycle) and the version check
// of Note [Version counter] applies to them. Python objects are only touched with the GIL.
struct PyFunctionNode final : Node {
  PyFunctionNode(std::string name, py::object ctx, py::object backward)
      : name_(std::move(name)), ctx_(std::move(ctx)), backward_(std::move(backward)) {}

  ~PyFunctionNode() override {
    if (!Py_IsInitialized()) {  // interpreter gone: leak rather than touch freed state
      ctx_.release();
      backward_.release();
      return;
    }
    py::gil_scoped_acquire gil;
    ctx_ = py::object();
    backward_ = py::object();
  }

  std::string name() const override { return name_; }

  variable_list apply(variable_list&& grads) override {
    py::gil_scoped_acquire gil;
    py::tuple args(grads.size());
    for (size_t i = 0; i < grads.size(); ++i) {
      if (grads[i].defined()) {
        args[i] = py::cast(grads[i]);
      } else if (materialize_grads_) {
        const autograd::InputMetadata& m = input_metadata(i);
        args[i] = py::cast(zeros(m.shape, TensorOptions().dtype(m.dtype).device(m.device)));
      } else {
        args[i] = py::none();
      }
    }
    // The trampoline returns one entry (Tensor or None) per tensor input, in edge order; a
    // Python exception raised by the user's backward propagates as error_already_set.
    py::object r = backward_(ctx_, *args);
    variable_list out;
    for (py::handle h : r) out.push_back(h.is_none() ? Tensor() : h.cast<Tensor>());
    RT_CHECK(out.size() == num_outputs(), "function ", name_, " returned ", out.size(),
             " gradients for ", num_outputs(), " tensor inputs");
    return out;
  }

  void release_variables() override {
    for (auto& s : saved_) s.reset_data();
  }

  py::tuple saved_tensors() {
    py::tuple t(saved_.size());
    auto self = shared_from_this();
    for (size_t i = 0; i < saved_.size(); ++i) {
      Tensor v = saved_[i].unpack(self);
      t[i] = v.defined() ? py::cast(v) : py::none();
    }
    return t;
  }

  std::string name_;
  py::object ctx_;
  py::object backward_;
  std::vector<SavedVariable> saved_;
  bool materialize_grads_ = true;
};

struct FunctionNodeRef {
  std::weak_ptr<PyFunctionNode> node;
};

bool contains(const std::unordered_set<const TensorImpl*>& s, const Tensor& t) {
  return s.count(t.impl()) != 0;
}

std::unordered_set<const TensorImpl*> impl_set(py::handle seq) {
  std::unordered_set<const TensorImpl*> s;
  for (py::handle h : seq)
    if (py::isinstance<Tensor>(h)) s.insert(h.cast<Tensor>().impl());
  return s;
}

// Mirrors torch's _wrap_outputs: builds the node when some input requires grad under grad
// mode, gives every tensor output its history, and saves ctx's tensors. Returns the outputs.
py::tuple wrap_outputs(py::object ctx, const std::string& name, py::object backward,
                       py::tuple inputs, py::tuple outputs, py::object to_save, py::tuple dirty,
                       py::tuple non_differentiable, bool materialize_grads) {
  std::vector<Tensor> tensor_inputs;
  bool needs_grad = false;
  for (py::handle h : inputs) {
    if (!py::isinstance<Tensor>(h)) continue;
    tensor_inputs.push_back(h.cast<Tensor>());
    needs_grad = needs_grad || tensor_inputs.back().requires_grad();
  }
  needs_grad = needs_grad && GradMode::is_enabled();
  auto input_impls = impl_set(inputs);
  auto dirty_impls = impl_set(dirty);
  auto non_diff_impls = impl_set(non_differentiable);
  py::tuple result(outputs.size());
  if (!needs_grad) {
    for (size_t i = 0; i < outputs.size(); ++i) result[i] = outputs[i];
    return result;
  }

  auto node = std::make_shared<PyFunctionNode>(name, ctx, backward);
  node->materialize_grads_ = materialize_grads;
  std::vector<autograd::Edge> edges;
  for (auto& t : tensor_inputs)
    edges.push_back(t.requires_grad() ? autograd::gradient_edge(t) : autograd::Edge());
  node->set_next_edges(std::move(edges));
  if (AnomalyMode::is_enabled()) node->set_anomaly_info("the custom autograd.Function " + name);

  std::unordered_set<const TensorImpl*> output_impls;
  for (size_t i = 0; i < outputs.size(); ++i) {
    py::handle h = outputs[i];
    if (!py::isinstance<Tensor>(h)) {
      result[i] = h;
      continue;
    }
    Tensor t = h.cast<Tensor>();
    bool is_input = contains(input_impls, t);
    bool non_diff = contains(non_diff_impls, t);
    if (contains(dirty_impls, t)) {
      // Modified in place by forward: the tensor itself takes the new history, as after any
      // in-place op (views of a base get the base rewritten; see Note [In-place on views]).
      autograd::generated::check_inplace(t, true, name.c_str());
      Tensor a = alias_with_geometry(t, t.sizes(), t.strides(), t.storage_offset());
      autograd::generated::set_history(a, node, 0, nullptr);
      autograd::generated::rebase_history(t, a);
    } else {
      // An input returned as is gets a fresh alias, so the caller's tensor keeps its history.
      if (is_input) t = alias_with_geometry(t, t.sizes(), t.strides(), t.storage_offset());
      if (non_diff) {
        node->add_input_metadata(t);  // gets a (materialized) grad slot but no history
      } else {
        autograd::generated::set_history(t, node, 0, nullptr);
      }
    }
    output_impls.insert(t.impl());
    result[i] = py::cast(t);
  }
  for (const TensorImpl* d : dirty_impls)
    RT_CHECK(output_impls.count(d), "Some elements marked as dirty during the forward method were "
             "not returned as output. The inputs that are modified inplace must all be outputs "
             "of the Function.");

  if (!to_save.is_none()) {
    for (py::handle h : to_save) {
      if (h.is_none()) {
        node->saved_.emplace_back();
        continue;
      }
      Tensor t = h.cast<Tensor>();
      node->saved_.emplace_back(t, contains(output_impls, t));
    }
  }
  ctx.attr("_node") = FunctionNodeRef{node};
  return result;
}

// A saved tensor's Python pack and unpack hooks (autograd.graph.saved_tensors_hooks). They run
// wherever the tensor is saved or unpacked, with or without the GIL held, so each call takes
// it, and so does dropping the packed object.
class PySavedVariableHooks final : public autograd::SavedVariableHooks {
 public:
  PySavedVariableHooks(py::function pack, py::function unpack)
      : pack_(std::move(pack)), unpack_(std::move(unpack)) {}

  ~PySavedVariableHooks() override {
    if (!Py_IsInitialized()) {  // interpreter gone: leak rather than touch freed state
      pack_.release();
      unpack_.release();
      packed_.release();
      return;
    }
    py::gil_scoped_acquire gil;
    pack_ = py::function();
    unpack_ = py::function();
    packed_ = py::object();
  }

  void call_pack_hook(const Tensor& t) override {
    py::gil_scoped_acquire gil;
    packed_ = pack_(t);
  }

  Tensor call_unpack_hook() override {
    py::gil_scoped_acquire gil;
    py::object r = unpack_(packed_);
    if (!py::detail::is_bound_instance<Tensor>(r))
      throw py::type_error(std::string("Output of saved tensor unpack_hook expected to be a "
                                       "Tensor but got result of type ") +
                           Py_TYPE(r.ptr())->tp_name);
    return r.cast<Tensor>();
  }

 private:
  py::function pack_, unpack_;
  py::object packed_;
};

struct PySavedVariableHooksFactory final : autograd::SavedVariableHooksFactory {
  PySavedVariableHooksFactory(py::function pack, py::function unpack)
      : pack(std::move(pack)), unpack(std::move(unpack)) {}
  ~PySavedVariableHooksFactory() override {
    py::gil_scoped_acquire gil;
    pack = py::function();
    unpack = py::function();
  }
  std::unique_ptr<autograd::SavedVariableHooks> make() override {
    py::gil_scoped_acquire gil;
    return std::make_unique<PySavedVariableHooks>(pack, unpack);
  }
  py::function pack, unpack;
};

}  // namespace

void bind_autograd_function(py::module_& m) {
  // torch._C._autograd's names (autograd/graph.py).
  m.def("_push_saved_tensors_default_hooks", [](py::function pack, py::function unpack) {
    autograd::push_saved_tensor_hooks(
        std::make_shared<PySavedVariableHooksFactory>(std::move(pack), std::move(unpack)));
  });
  m.def("_pop_saved_tensors_default_hooks", [] { autograd::pop_saved_tensor_hooks(); });
  m.def("_saved_tensors_hooks_disable",
        [](std::string message) { autograd::disable_saved_tensor_hooks(std::move(message)); });
  m.def("_saved_tensors_hooks_enable", [] { autograd::enable_saved_tensor_hooks(); });

  py::class_<PyFunctionNode, Node, std::shared_ptr<PyFunctionNode>>(m, "_FunctionNode")
      .def_property_readonly("saved_tensors", &PyFunctionNode::saved_tensors)
      // torch's grad_fn of a custom Function is its ctx: y.grad_fn.k reads ctx.k.
      .def("__getattr__", [](PyFunctionNode& n, const std::string& attr) {
        return py::getattr(n.ctx_, attr.c_str());
      });

  py::class_<FunctionNodeRef>(m, "_FunctionNodeRef")
      .def("saved_tensors", [](const FunctionNodeRef& r) {
        auto n = r.node.lock();
        RT_CHECK(n, "Trying to backward through the graph a second time (or directly access "
                 "saved tensors after they have already been freed).");
        return n->saved_tensors();
      })
      .def("alive", [](const FunctionNodeRef& r) { return !r.node.expired(); });

  m.def("_function_wrap_outputs", &wrap_outputs, py::arg("ctx"), py::arg("name"),
        py::arg("backward"), py::arg("inputs"), py::arg("outputs"), py::arg("to_save"),
        py::arg("dirty"), py::arg("non_differentiable"), py::arg("materialize_grads"));
}

}  // namespace retorch::python
