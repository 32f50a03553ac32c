// Constant propagation (fold pure ops on constants, inline If on a constant condition) and
// constant pooling (one constant per value, at the top of the graph).
#include "retorch/jit/passes/PassUtils.h"
#include "retorch/jit/passes/Passes.h"

namespace retorch::jit {

namespace {

using Touched = std::unordered_set<const Value*>;

bool requires_grad_tensor(const IValue& v) {
  if (v.is_tensor()) return v.to_tensor().requires_grad();
  if (v.is_tensor_list())
    for (const Tensor& t : v.to_tensor_list())
      if (t.requires_grad()) return true;
  return false;
}

// The inputs of n if all are known at compile time and n may be folded; else nullopt.
std::optional<Stack> foldable_inputs(const Node* n, const Touched& touched) {
  if (!n->blocks().empty() || n->has_side_effects()) return std::nullopt;
  for (const Value* v : n->outputs())
    if (touched.count(v)) return std::nullopt;
  Stack args;
  for (const Value* v : n->inputs()) {
    if (touched.count(v)) return std::nullopt;
    auto c = detail::constant_input(v);
    // Folding an op on a parameter-like constant would cut it out of autograd.
    if (!c || requires_grad_tensor(*c)) return std::nullopt;
    args.push_back(std::move(*c));
  }
  return args;
}

// Replaces n's outputs by constants of `results` and destroys n; returns true.
bool replace_by_constants(Node* n, const Stack& results) {
  Graph& g = *n->owning_graph();
  for (size_t i = 0; i < results.size(); ++i) {
    Value* c = detail::constant_before(g, n, results[i]);
    if (n->output(i)->has_debug_name()) {
      std::string name = n->output(i)->debug_name();
      n->output(i)->set_debug_name("");
      c->set_debug_name(name);
    }
    n->output(i)->replace_all_uses_with(c);
  }
  n->destroy();
  return true;
}

bool try_fold(Node* n, const Touched& touched) {
  if (n->kind() == kind::kListConstruct) {
    // A list of constant ints or floats becomes a list constant, as in PyTorch.
    const TypePtr& t = n->output()->type();
    if (t->kind() != TypeKind::kList ||
        (t->elem()->kind() != TypeKind::kInt && t->elem()->kind() != TypeKind::kFloat))
      return false;
    auto c = detail::constant_input(n->output());
    return c && replace_by_constants(n, {*c});
  }
  if (n->op() == nullptr) return false;
  auto args = foldable_inputs(n, touched);
  if (!args) return false;
  auto results = detail::run_node_op(n, std::move(*args));
  return results && replace_by_constants(n, *results);
}

// Moves the taken branch of `n` (a prim::If on a constant) before it and removes the If.
// Returns the first inlined node (or n's successor when the branch was empty).
Node* inline_if(Node* n, bool cond) {
  Block* taken = n->blocks()[cond ? 0 : 1];
  RT_CHECK(taken->outputs().size() == n->outputs().size(), "jit: prim::If gives ",
           n->outputs().size(), " outputs but its block", cond ? "0" : "1", " returns ",
           taken->outputs().size());
  Node* first = nullptr;
  for (Node* m = taken->nodes().first_; m != taken->return_node();) {
    Node* next = m->next();
    m->move_before(n);
    if (!first) first = m;
    m = next;
  }
  for (size_t i = 0; i < n->outputs().size(); ++i)
    n->output(i)->replace_all_uses_with(taken->outputs().at(i));
  Node* after = n->next();
  n->destroy();
  return first ? first : after;
}

void propagate_block(Block* b, const Touched& touched) {
  for (Node* n = b->nodes().first_; n != b->return_node();) {
    if (n->kind() == kind::kIf && n->blocks().size() == 2) {
      auto c = to_constant(n->input(0));
      if (c && c->is_bool()) {
        n = inline_if(n, c->to_bool());  // the inlined nodes are visited next
        continue;
      }
    }
    for (Block* sub : n->blocks()) propagate_block(sub, touched);
    Node* next = n->next();
    try_fold(n, touched);
    n = next;
  }
}

void collect_constants(const Block* b, std::vector<Node*>& out) {
  detail::for_each_node(b, [&](Node* n) {
    if (n->kind() == kind::kConstant) out.push_back(n);
  });
}

}  // namespace

void constant_propagation(Graph& g) {
  auto touched = detail::values_touched_by_mutation(g);
  propagate_block(g.block(), touched);
}

void constant_pooling(Graph& g) {
  auto touched = detail::values_touched_by_mutation(g);
  std::vector<Node*> constants;
  collect_constants(g.block(), constants);
  std::vector<Node*> pooled;
  Node* last_hoisted = g.block()->param_node();
  for (Node* c : constants) {
    if (touched.count(c->output())) continue;  // an in-place op may change it: keep it apart
    IValue v = constant_value(c);
    Node* same = nullptr;
    for (Node* p : pooled)
      if (detail::ivalue_equal(constant_value(p), v)) {
        same = p;
        break;
      }
    if (same) {
      c->output()->replace_all_uses_with(same->output());
      c->destroy();
      continue;
    }
    if (c != last_hoisted->next()) c->move_after(last_hoisted);
    last_hoisted = c;
    pooled.push_back(c);
  }
}

}  // namespace retorch::jit
