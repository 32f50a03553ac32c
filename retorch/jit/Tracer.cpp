// The tracer (Note [Tracing]): the Tracer-key fallback that records ops into a Graph.
#include "retorch/jit/Tracer.h"

#include <iostream>
#include <mutex>
#include <unordered_map>

#include "retorch/core/ValueReadHook.h"
#include "retorch/nn/Module.h"

namespace retorch::jit {

const char* const kTracerWarningText =
    "Converting a tensor to a C++/Python value might cause the trace to be incorrect. We can't "
    "record the data flow of C++/Python values, so this value will be treated as a constant in "
    "the future. This means that the trace might not generalize to other inputs!";

namespace {

struct TracingState {
  Graph* graph = nullptr;
  const TraceOptions* options = nullptr;
  Value* self = nullptr;
  // Tensor -> its current value; the Tensor keeps the TensorImpl alive so its address cannot be
  // reused by another tensor during the trace.
  std::unordered_map<const TensorImpl*, std::pair<Value*, Tensor>> values;
  std::unordered_map<const TensorImpl*, const std::string*> attr_names;
  bool warned = false;
};

thread_local TracingState* tls_state = nullptr;
thread_local std::string tls_source_location;

std::string current_location(const TracingState& st) {
  if (st.options->source_location) return st.options->source_location();
  return tls_source_location;
}

Node* add_node(TracingState& st, Node* n) {
  n->set_source_location(current_location(st));
  return st.graph->insert_node(n);
}

Value* add_constant(TracingState& st, const IValue& v, std::string_view op) {
  if (v.is_tensor())
    RT_CHECK(!v.to_tensor().requires_grad(), "jit trace: ", op,
             " uses a tensor that requires grad but is neither an input of the traced function "
             "nor a parameter or buffer of the module; it cannot become a constant: pass it as "
             "an input, register it, or detach it");
  Value* c = st.graph->insert_constant(v);
  c->node()->set_source_location(current_location(st));
  return c;
}

void bind(TracingState& st, const Tensor& t, Value* v) {
  st.values[t.impl()] = {v, t};
}

Value* value_of_tensor(TracingState& st, const Tensor& t, std::string_view op) {
  if (!t.defined()) return add_constant(st, IValue(), op);
  auto it = st.values.find(t.impl());
  if (it != st.values.end()) return it->second.first;
  auto at = st.attr_names.find(t.impl());
  if (at != st.attr_names.end() && st.self != nullptr) {
    Node* n = st.graph->create(std::string(kind::kGetAttr), {st.self}, 1);
    n->set_attr("name", IValue(*at->second));
    n->output()->set_type(Type::of_tensor(t));
    n->output()->set_debug_name(*at->second);
    st.graph->insert_node(n);  // PyTorch gives GetAttr no source location
    bind(st, t, n->output());
    return n->output();
  }
  return add_constant(st, IValue(t), op);
}

Value* value_of(TracingState& st, const IValue& v, std::string_view op) {
  const auto& p = v.payload();
  if (v.is_tensor()) return value_of_tensor(st, v.to_tensor(), op);
  if (auto* l = std::get_if<std::vector<Tensor>>(&p)) {
    std::vector<Value*> ins;
    for (const Tensor& t : *l) ins.push_back(value_of_tensor(st, t, op));
    Node* n = st.graph->create(std::string(kind::kListConstruct), ins, 1);
    n->output()->set_type(Type::list_of(Type::tensor_type()));
    return add_node(st, n)->output();
  }
  if (auto* l = std::get_if<std::vector<std::optional<Tensor>>>(&p)) {
    std::vector<Value*> ins;
    for (const auto& t : *l)
      ins.push_back(t ? value_of_tensor(st, *t, op) : add_constant(st, IValue(), op));
    Node* n = st.graph->create(std::string(kind::kListConstruct), ins, 1);
    n->output()->set_type(Type::list_of(Type::optional_of(Type::tensor_type())));
    return add_node(st, n)->output();
  }
  return add_constant(st, v, op);
}

void tracer_fallback(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  TracingState* st = tls_state;
  ExcludeDispatchKeyGuard no_trace(DispatchKeySet(DispatchKey::Tracer));
  if (st == nullptr) return op.redispatch_boxed(ks.below(DispatchKey::Tracer), stack);
  std::string_view name = op.schema().name;
  size_t nargs = size_t(op.schema().num_args);
  RT_CHECK(stack->size() >= nargs, "jit trace: ", op.qualified_name(), " called with ",
           stack->size(), " arguments for ", nargs);
  std::vector<Value*> ins;
  ins.reserve(nargs);
  for (size_t i = stack->size() - nargs; i < stack->size(); ++i)
    ins.push_back(value_of(*st, (*stack)[i], name));
  op.redispatch_boxed(ks.below(DispatchKey::Tracer), stack);
  size_t nret = size_t(op.schema().num_returns);
  RT_CHECK(stack->size() >= nret, "jit trace: ", op.qualified_name(), " returned too few values");
  Node* node = add_node(*st, st->graph->create_op(op, ins, 0));
  for (size_t i = stack->size() - nret; i < stack->size(); ++i) {
    const IValue& r = (*stack)[i];
    if (r.is_tensor()) {
      const Tensor& t = r.to_tensor();
      if (!t.defined()) {
        node->add_output(Type::tensor_type());
        continue;
      }
      bind(*st, t, node->add_output(Type::of_tensor(t)));
    } else if (r.is_tensor_list()) {
      Value* list = node->add_output(Type::list_of(Type::tensor_type()));
      const auto& ts = r.to_tensor_list();
      Node* un = add_node(*st, st->graph->create(std::string(kind::kListUnpack), {list}, 0));
      for (const Tensor& t : ts) {
        Value* v = un->add_output(t.defined() ? Type::of_tensor(t) : Type::tensor_type());
        if (t.defined()) bind(*st, t, v);
      }
    } else {
      node->add_output(Type::of(r));
    }
  }
}

void on_value_read(const Tensor& t) {
  TracingState* st = tls_state;
  if (st == nullptr || st->warned || !t.defined()) return;
  // Inside an op being recorded the value is the op's business, not the user's.
  if (tls_local_dispatch_key_set().excluded.has(DispatchKey::Tracer)) return;
  if (!st->values.count(t.impl()) && !st->attr_names.count(t.impl())) return;
  st->warned = true;
  if (st->options->warn)
    st->options->warn(kTracerWarningText);
  else
    std::cerr << "TracerWarning: " << kTracerWarningText << "\n";
}

void install_tracer() {
  static std::once_flag once;
  std::call_once(once, [] {
    Dispatcher::singleton().register_fallback(DispatchKey::Tracer, tracer_fallback);
    retorch::detail::set_value_read_hook(on_value_read);
  });
}

// Makes `st` the thread's trace and adds the Tracer key for the scope.
class TracingScope {
 public:
  explicit TracingScope(TracingState* st) : include_(DispatchKeySet(DispatchKey::Tracer)) {
    tls_state = st;
  }
  ~TracingScope() { tls_state = nullptr; }

 private:
  IncludeDispatchKeyGuard include_;
};

}  // namespace

std::shared_ptr<Graph> trace_graph(const TracedFunction& fn, const std::vector<Tensor>& inputs,
                                   const TraceOptions& options) {
  install_tracer();
  RT_CHECK(tls_state == nullptr,
           "jit trace: this thread is already tracing (nested traces are "
           "not supported)");
  RT_CHECK(!tls_local_dispatch_key_set().excluded.has(DispatchKey::Tracer),
           "jit trace: cannot trace inside an op being traced");
  auto graph = std::make_shared<Graph>();
  TracingState st;
  st.graph = graph.get();
  st.options = &options;
  if (!options.self_type.empty()) {
    st.self = graph->add_input("self", Type::class_type(options.self_type));
    for (const auto& [name, t] : options.attributes)
      if (t.defined()) st.attr_names.emplace(t.impl(), &name);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    RT_CHECK(inputs[i].defined(), "jit trace: example input ", i, " is an undefined tensor");
    std::string name = i < options.input_names.size() ? options.input_names[i] : "";
    bool numeric = !name.empty() && name.find_first_not_of("0123456789") == std::string::npos;
    Value* v = graph->add_input(numeric ? "" : name, Type::of_tensor(inputs[i]));
    bind(st, inputs[i], v);
  }
  {
    TracingScope scope(&st);
    std::vector<Tensor> outputs = fn(inputs);
    ExcludeDispatchKeyGuard no_trace(DispatchKeySet(DispatchKey::Tracer));
    for (const Tensor& t : outputs) {
      RT_CHECK(t.defined(), "jit trace: the traced function returned an undefined tensor");
      graph->register_output(value_of_tensor(st, t, "the traced function's output"));
    }
  }
  graph->lint();
  return graph;
}

ScriptFunction trace(const TracedFunction& fn, const std::vector<Tensor>& example_inputs) {
  return ScriptFunction(trace_graph(fn, example_inputs));
}

namespace {
std::string self_type_of(const nn::Module& m) {
  std::string n = m.name().empty() ? std::string("Module") : m.name();
  for (size_t p; (p = n.find("::")) != std::string::npos;) n.replace(p, 2, ".");
  return "__torch__." + n;
}
std::vector<std::pair<std::string, Tensor>> items(const OrderedDict<Tensor>& d) {
  std::vector<std::pair<std::string, Tensor>> r;
  for (const auto& it : d) r.emplace_back(it.key, it.value);
  return r;
}
}  // namespace

ScriptModule trace(nn::Module& module, const TracedFunction& forward,
                   const std::vector<Tensor>& example_inputs) {
  TraceOptions o;
  auto params = items(module.named_parameters());
  auto buffers = items(module.named_buffers());
  o.attributes = params;
  o.attributes.insert(o.attributes.end(), buffers.begin(), buffers.end());
  o.self_type = self_type_of(module);
  return ScriptModule(trace_graph(forward, example_inputs, o), std::move(params),
                      std::move(buffers));
}

ScriptModule trace(nn::Module& module, const std::vector<Tensor>& example_inputs) {
  RT_CHECK(example_inputs.size() == 1, "jit trace: Module::forward takes one tensor but ",
           example_inputs.size(),
           " example inputs were given (pass a forward function for other "
           "signatures)");
  return trace(
      module,
      [&module](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{module.forward(in[0])};
      },
      example_inputs);
}

bool is_tracing() {
  return tls_state != nullptr;
}

SourceLocationGuard::SourceLocationGuard(const char* file, int line)
    : prev_(std::move(tls_source_location)) {
  tls_source_location = std::string(file) + ":" + std::to_string(line);
}

SourceLocationGuard::~SourceLocationGuard() {
  tls_source_location = std::move(prev_);
}

}  // namespace retorch::jit
