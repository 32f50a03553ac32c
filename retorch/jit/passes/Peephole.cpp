// Peephole rewrites: local patterns that are provably no-ops (x + 0, t(t(x)), to() the same
// type, ...). Each rule fires only when the types prove it safe; otherwise the node stays.
#include "retorch/core/Shape.h"
#include "retorch/jit/Schema.h"
#include "retorch/jit/passes/PassUtils.h"
#include "retorch/jit/passes/Passes.h"

namespace retorch::jit {

namespace {

using detail::arg_constant;
using detail::is_op;

using Touched = std::unordered_set<const Value*>;

// The number a constant scalar or constant 0-dim tensor holds.
std::optional<double> scalar_constant(const Value* v) {
  auto c = to_constant(v);
  if (!c) return std::nullopt;
  if (c->is_int() || c->is_double() || c->is_bool()) return c->to_double();
  if (c->is_tensor()) {
    const Tensor& t = c->to_tensor();
    if (t.dim() != 0 || !t.is_cpu()) return std::nullopt;
    return t.item().to_double();
  }
  return std::nullopt;
}

bool scalar_is(const Value* v, double want) {
  auto s = scalar_constant(v);
  return s && *s == want;
}

bool arg_is(const Node* n, size_t i, double want) {
  auto c = arg_constant(n, i);
  return c && c->is_scalar() && c->to_double() == want;
}

bool same_complete_type(const Value* a, const Value* b) {
  return a->type()->is_complete_tensor() && b->type()->is_complete_tensor() &&
         a->type()->equals(*b->type());
}

// x op identity -> x: only when the result's type is known to be x's (a 0-dim Double zero
// added to an Int tensor promotes, a division of ints gives floats), and when neither value is
// fenced by an in-place op (the rewrite makes the result alias x).
Value* arithmetic_identity(const Node* n, const Touched& touched) {
  Value* out = n->output();
  Value* keep = nullptr;
  if (is_op(n, "add", "Tensor") && arg_is(n, 2, 1)) {
    if (scalar_is(n->input(1), 0))
      keep = n->input(0);
    else if (scalar_is(n->input(0), 0))
      keep = n->input(1);
  } else if (is_op(n, "sub", "Tensor") && arg_is(n, 2, 1)) {
    if (scalar_is(n->input(1), 0)) keep = n->input(0);
  } else if (is_op(n, "mul", "Tensor")) {
    if (scalar_is(n->input(1), 1))
      keep = n->input(0);
    else if (scalar_is(n->input(0), 1))
      keep = n->input(1);
  } else if (is_op(n, "div", "Tensor")) {
    if (scalar_is(n->input(1), 1)) keep = n->input(0);
  }
  if (!keep || !same_complete_type(keep, out)) return nullptr;
  if (touched.count(keep) || touched.count(out)) return nullptr;
  return keep;
}

std::optional<int64_t> const_int(const Node* n, size_t i) {
  auto c = arg_constant(n, i);
  if (!c || !c->is_int()) return std::nullopt;
  return c->to_int();
}

// transpose(transpose(x, a, b), a, b) -> x (also with the dims swapped).
Value* double_transpose(const Node* n) {
  Node* inner = n->input(0)->node();
  if (!is_op(inner, "transpose", "int") || !detail::has_valid_arity(inner)) return nullptr;
  auto a = const_int(inner, 1), b = const_int(inner, 2);
  auto c = const_int(n, 1), d = const_int(n, 2);
  if (!a || !b || !c || !d) return nullptr;
  Value* x = inner->input(0);
  const auto& sizes = x->type()->is_tensor() ? x->type()->tensor().sizes : std::nullopt;
  if (sizes) {  // with the rank known, -1 and rank-1 name the same dim
    int64_t rank = int64_t(sizes->size());
    for (int64_t* dim : {&*a, &*b, &*c, &*d})
      if (*dim < 0) *dim += rank;
  }
  bool same = (*a == *c && *b == *d) || (*a == *d && *b == *c);
  return same ? x : nullptr;
}

std::optional<Device> device_of(const Value* v) {
  return v->type()->is_tensor() ? v->type()->tensor().device : std::nullopt;
}
std::optional<ScalarType> dtype_of(const Value* v) {
  return v->type()->is_tensor() ? v->type()->tensor().dtype : std::nullopt;
}

// x.to(...) that changes neither dtype nor device returns x itself.
Value* noop_to(const Node* n) {
  Value* x = n->input(0);
  if (!x->type()->is_complete_tensor()) return nullptr;
  auto no_copy = [&](size_t i) {
    auto c = arg_constant(n, i);
    return c && c->is_bool() && !c->to_bool();
  };
  try {
    if (is_op(n, "to", "dtype")) {
      auto dt = arg_constant(n, 1);
      if (dt && !dt->is_none() && dt->to_scalar_type() == dtype_of(x) && no_copy(3)) return x;
    } else if (is_op(n, "to", "device")) {
      auto dev = arg_constant(n, 1), dt = arg_constant(n, 2);
      if (!dev || !dt || !no_copy(4)) return nullptr;
      bool same_dev = dev->is_none() || dev->to_device() == device_of(x);
      bool same_dt = dt->is_none() || dt->to_scalar_type() == dtype_of(x);
      if (same_dev && same_dt) return x;
    } else if (is_op(n, "to", "other")) {
      Value* other = n->input(1);
      if (dtype_of(other) && device_of(other) && dtype_of(other) == dtype_of(x) &&
          device_of(other) == device_of(x) && no_copy(3))
        return x;
    }
  } catch (const Error&) {
    // A malformed dtype/device constant: leave the node for the runtime to report.
  }
  return nullptr;
}

std::vector<int64_t> known_sizes(const Value* x) {
  std::vector<int64_t> r;
  for (const auto& s : *x->type()->tensor().sizes) r.push_back(*s);
  return r;
}

Value* noop_contiguous(const Node* n) {
  Value* x = n->input(0);
  if (!x->type()->is_complete_tensor()) return nullptr;
  return is_contiguous_strides(known_sizes(x), *x->type()->tensor().strides) ? x : nullptr;
}

Value* noop_expand(const Node* n) {
  Value* x = n->input(0);
  auto size = arg_constant(n, 1);
  if (!x->type()->is_complete_tensor() || !size || !size->is_int_list()) return nullptr;
  std::vector<int64_t> have = known_sizes(x);
  const std::vector<int64_t>& want = size->to_int_list();
  if (want.size() != have.size()) return nullptr;
  for (size_t i = 0; i < want.size(); ++i)
    if (want[i] != have[i] && want[i] != -1) return nullptr;
  return x;
}

Value* rewrite(const Node* n, const Touched& touched) {
  if (!detail::has_valid_arity(n) || n->outputs().size() != 1 || n->inputs().empty())
    return nullptr;
  if (Value* v = arithmetic_identity(n, touched)) return v;
  if (is_op(n, "t", "") && is_op(n->input(0)->node(), "t", "") &&
      detail::has_valid_arity(n->input(0)->node()))
    return n->input(0)->node()->input(0);
  if (is_op(n, "transpose", "int")) return double_transpose(n);
  if (n->op()->schema().name == "to") return noop_to(n);
  if (is_op(n, "contiguous", "")) return noop_contiguous(n);
  if (is_op(n, "expand", "")) return noop_expand(n);
  return nullptr;
}

bool peephole_block(Block* b, const Touched& touched) {
  bool changed = false;
  for (Node* n = b->nodes().first_; n != b->return_node();) {
    Node* next = n->next();
    for (Block* sub : n->blocks()) changed |= peephole_block(sub, touched);
    if (Value* v = rewrite(n, touched)) {
      n->output()->replace_all_uses_with(v);
      n->destroy();
      changed = true;
    }
    n = next;
  }
  return changed;
}

}  // namespace

void peephole(Graph& g) {
  // Until nothing changes: t(t(t(t(x)))) needs two rounds. Each round removes a node.
  while (peephole_block(g.block(), detail::values_touched_by_mutation(g))) {
  }
}

}  // namespace retorch::jit
