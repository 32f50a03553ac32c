// The autograd engine: dependency counting, a ready queue ordered by creation, grad buffers.
#include "retorch/autograd/Engine.h"

#include <cmath>
#include <optional>
#include <queue>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "retorch/autograd/FunctionsManual.h"
#include "retorch/autograd/GradMode.h"
#include "retorch/generated/Functions.h"
#include "retorch/profiler/Profiler.h"

namespace retorch::autograd {

namespace {

struct ReadyItem {
  Node* node;
  bool operator<(const ReadyItem& o) const { return node->sequence_nr() < o.node->sequence_nr(); }
};

// Checks a gradient against the metadata of the forward value it belongs to: sums
// broadcast dims away and casts to the value's dtype (PyTorch's validate_outputs).
Tensor validate_grad(Tensor g, const InputMetadata& m, const Node& producer, size_t i) {
  if (!g.defined()) return g;
  if (!g.sizes().equals(m.shape)) {
    RT_CHECK(is_expandable_to(m.shape, g.sizes()), "Function ", producer.name(),
             " returned an invalid gradient at index ", i, " - got ", g.sizes(),
             " but expected shape compatible with ", IntArrayRef(m.shape));
    g = sum_to(g, m.shape);
  }
  if (g.dtype() != m.dtype) g = g.to(m.dtype);
  return g;
}

void check_anomaly(const Node& fn, const variable_list& outs) {
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& g = outs[i];
    if (!g.defined() || !is_floating_type(g.dtype())) continue;
    if (isnan(g).any().item<bool>()) {
      RT_ERROR("Function '", fn.name(), "' returned nan values in its ", i,
               "th output. The forward op that created it: ",
               fn.anomaly_info().empty() ? std::string("<unknown>") : fn.anomaly_info());
    }
  }
}

struct GraphTask {
  std::unordered_map<Node*, int> deps;
  std::unordered_map<Node*, variable_list> buffers;
  // For autograd.grad: captured edges (node, input_nr) -> index into captured.
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> captures;
  std::unordered_set<Node*> needed;  // when capturing: nodes on a path to a capture
  // Owns the captured nodes: a leaf's AccumulateGrad is cached only weakly, so without this
  // grad(x, [x]) would key the capture on a node freed before the roots are built.
  std::vector<std::shared_ptr<Node>> capture_owners;
  variable_list captured;
  bool keep_graph = false;
  bool accumulate = true;
};

// Note [Gradients nobody asked for]
// autograd.grad(y, [x]) and backward(inputs=[x]) only need gradients that flow towards x. The
// engine already skips nodes off every path to a requested input; while it applies a node of
// such a task, tls_needed points at the task's set of nodes on those paths, and
// Node::should_compute_output answers false for an edge into any other node, so that
// y = x @ w gives grad(y.sum(), [x]) one product (not w's as well) and a convolution's input
// gradient skips the weight's. A nested backward (a node that itself calls grad) installs its
// own set and puts the outer one back.
thread_local const std::unordered_set<Node*>* tls_needed = nullptr;

struct NeededGuard {
  explicit NeededGuard(const std::unordered_set<Node*>* s) : prev(tls_needed) { tls_needed = s; }
  ~NeededGuard() { tls_needed = prev; }
  const std::unordered_set<Node*>* prev;
};

void accumulate_into(variable_list& buf, size_t slot, Tensor g) {
  if (!g.defined()) return;
  if (!buf[slot].defined()) buf[slot] = std::move(g);
  else buf[slot] = buf[slot].add(g);
}

void execute(const std::vector<Edge>& roots, const variable_list& root_grads, GraphTask& task) {
  // Count dependencies by walking the graph once.
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  for (auto& e : roots) {
    if (e.valid() && seen.insert(e.function.get()).second) stack.push_back(e.function.get());
  }
  std::vector<Node*> order;
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    order.push_back(n);
    for (auto& e : n->next_edges()) {
      if (!e.valid()) continue;
      task.deps[e.function.get()]++;
      if (seen.insert(e.function.get()).second) stack.push_back(e.function.get());
    }
  }
  if (!task.captures.empty()) {
    // A node is needed if it is captured or leads to a needed node; iterate to a fixpoint
    // in reverse discovery order (children were discovered after parents).
    for (auto& [n, _] : task.captures) task.needed.insert(n);
    bool changed = true;
    while (changed) {
      changed = false;
      for (Node* n : order) {
        if (task.needed.count(n)) continue;
        for (auto& e : n->next_edges()) {
          if (e.valid() && task.needed.count(e.function.get())) {
            task.needed.insert(n);
            changed = true;
            break;
          }
        }
      }
    }
  }

  std::priority_queue<ReadyItem> ready;
  std::unordered_map<Node*, std::shared_ptr<Node>> keep_alive;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Edge& e = roots[i];
    if (!e.valid()) continue;
    Node* n = e.function.get();
    keep_alive[n] = e.function;
    auto& buf = task.buffers[n];
    if (buf.empty()) buf.resize(n->num_inputs());
    Tensor g = validate_grad(root_grads[i], n->input_metadata(e.input_nr), *n, i);
    accumulate_into(buf, e.input_nr, g);
  }
  for (auto& e : roots) {
    if (e.valid() && task.deps[e.function.get()] == 0) {
      task.deps[e.function.get()] = -1;  // queued
      ready.push({e.function.get()});
    }
  }

  while (!ready.empty()) {
    Node* n = ready.top().node;
    ready.pop();
    variable_list inputs = std::move(task.buffers[n]);
    task.buffers.erase(n);
    if (inputs.size() < n->num_inputs()) inputs.resize(n->num_inputs());
    n->run_pre_hooks(inputs);
    auto cap = task.captures.find(n);
    if (cap != task.captures.end()) {
      for (auto& [nr, idx] : cap->second) {
        if (nr < inputs.size() && inputs[nr].defined()) {
          if (!task.captured[idx].defined()) task.captured[idx] = inputs[nr];
          else task.captured[idx] = task.captured[idx].add(inputs[nr]);
        }
      }
    }
    bool run = true;
    if (!task.accumulate && dynamic_cast<AccumulateGrad*>(n)) run = false;
    if (!task.captures.empty() && !task.needed.count(n)) run = false;
    if (!task.captures.empty() && cap != task.captures.end()) {
      // Captured node: run it only if it leads to another capture.
      bool leads = false;
      for (auto& e : n->next_edges())
        if (e.valid() && task.needed.count(e.function.get())) leads = true;
      run = leads && !dynamic_cast<AccumulateGrad*>(n);
    }
    variable_list outs;
    if (run) {
      std::optional<profiler::RecordFunction> range;  // named like PyTorch's, when profiling
      if (profiler::is_profiling()) range.emplace("autograd::engine::evaluate_function: " + n->name());
      NeededGuard only(task.captures.empty() ? nullptr : &task.needed);
      outs = n->apply(std::move(inputs));
      if (AnomalyMode::is_enabled()) check_anomaly(*n, outs);
      if (!task.keep_graph) n->release_variables();
    }
    const auto& edges = n->next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.valid()) continue;
      Node* next = e.function.get();
      keep_alive.emplace(next, e.function);
      if (run && i < outs.size() && outs[i].defined()) {
        auto& buf = task.buffers[next];
        if (buf.empty()) buf.resize(next->num_inputs());
        accumulate_into(buf, e.input_nr, validate_grad(outs[i], next->input_metadata(e.input_nr), *n, i));
      }
      if (--task.deps[next] == 0) ready.push({next});
    }
  }
}

std::vector<Edge> root_edges(const variable_list& roots) {
  std::vector<Edge> edges;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    RT_CHECK(r.defined(), "autograd: root ", i, " is an undefined tensor");
    Edge e = gradient_edge(r);
    RT_CHECK(e.valid(), "element ", i, " of tensors does not require grad and does not have a grad_fn");
    edges.push_back(e);
  }
  return edges;
}

variable_list make_root_grads(const variable_list& roots, const variable_list& grads) {
  variable_list out;
  for (size_t i = 0; i < roots.size(); ++i) {
    if (i < grads.size() && grads[i].defined()) {
      RT_CHECK(grads[i].sizes().equals(roots[i].sizes()), "Mismatch in shape: grad_output[", i,
               "] has a shape of ", grads[i].sizes(), " and output[", i, "] has a shape of ",
               roots[i].sizes(), ".");
      out.push_back(grads[i]);
    } else {
      RT_CHECK(roots[i].numel() == 1, "grad can be implicitly created only for scalar outputs "
               "(got a tensor of shape ", roots[i].sizes(), " and dtype ", roots[i].dtype(),
               "; pass a gradient of the same shape)");
      out.push_back(ones_like(roots[i]));
    }
  }
  return out;
}

void add_captures(GraphTask& task, const variable_list& inputs) {
  task.captured.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    RT_CHECK(t.defined() && t.requires_grad(), "One of the differentiated Tensors (index ", i,
             ") does not require grad");
    Edge e = gradient_edge(t);
    task.captures[e.function.get()].push_back({e.input_nr, i});
    task.capture_owners.push_back(e.function);
  }
}

}  // namespace

bool edge_needed(const Edge& e) { return !tls_needed || tls_needed->count(e.function.get()); }

void backward(const variable_list& roots, const variable_list& grad_roots,
              std::optional<bool> retain_graph, bool create_graph, const variable_list& inputs) {
  GraphTask task;
  task.keep_graph = retain_graph.value_or(create_graph);
  auto edges = root_edges(roots);
  auto grads = make_root_grads(roots, grad_roots);
  AutoGradMode mode(create_graph);
  if (!inputs.empty()) {
    // Accumulate only into the given inputs: capture their grads, then add to .grad.
    GraphTask t2;
    t2.keep_graph = task.keep_graph;
    t2.accumulate = false;
    add_captures(t2, inputs);
    execute(edges, grads, t2);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!t2.captured[i].defined()) continue;
      if (inputs[i].is_leaf()) {
        auto acc = grad_accumulator(inputs[i]);
        acc->apply({t2.captured[i]});
      } else {
        inputs[i].impl()->ensure_autograd_meta().grad_ = t2.captured[i];
      }
    }
    return;
  }
  execute(edges, grads, task);
}

variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const variable_list& grad_outputs, std::optional<bool> retain_graph,
                   bool create_graph, bool allow_unused) {
  GraphTask task;
  task.keep_graph = retain_graph.value_or(create_graph);
  task.accumulate = false;
  add_captures(task, inputs);
  auto edges = root_edges(outputs);
  auto grads = make_root_grads(outputs, grad_outputs);
  {
    AutoGradMode mode(create_graph);
    execute(edges, grads, task);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    RT_CHECK(allow_unused || task.captured[i].defined(), "One of the differentiated Tensors "
             "appears to not have been used in the graph. Set allow_unused=True if this is the "
             "desired behavior.");
    if (task.captured[i].defined() && !create_graph) task.captured[i] = task.captured[i].detach();
  }
  return task.captured;
}

}  // namespace retorch::autograd
