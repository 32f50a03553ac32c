// Decomposition of composite ops into primitives (addmm, linear, layer_norm, softmax), for
// backends that only implement the primitives. Each rule needs its scalar arguments constant.
#include "retorch/generated/Functions.h"
#include "retorch/jit/Schema.h"
#include "retorch/jit/passes/PassUtils.h"
#include "retorch/jit/passes/Passes.h"

namespace retorch::jit {

namespace {

using detail::arg_constant;
using detail::is_op;

// What an optional tensor argument is known to be.
enum class OptTensor { kNone, kTensor, kUnknown };
OptTensor opt_tensor_arg(const Node* n, size_t i) {
  if (i >= n->inputs().size()) return OptTensor::kNone;  // omitted: the default None
  const Value* v = n->input(i);
  if (auto c = to_constant(v)) return c->is_none() ? OptTensor::kNone : OptTensor::kTensor;
  return v->type()->is_tensor() ? OptTensor::kTensor : OptTensor::kUnknown;
}

// Builds the replacement nodes just before the decomposed node, with its source location.
struct Emitter {
  Graph& g;
  Node* at;
  Value* op(const char* name, const std::vector<Value*>& inputs) {
    const OperatorHandle* h = Dispatcher::singleton().find(name);
    RT_CHECK(h != nullptr, "jit: decompose: operator ", name, " is not registered");
    Node* m = g.create_op(*h, inputs, 1);
    m->set_source_location(at->source_location());
    m->insert_before(at);
    return m->output();
  }
  Value* constant(const IValue& v) { return detail::constant_before(g, at, v); }
  // A 0-dim tensor of a scalar: like a Python number, it does not promote a tensor's dtype
  // within its category (Float * Double 0-dim stays Float).
  Value* scalar_tensor(const IValue& s) {
    if (s.is_double()) return constant(IValue(full({}, s.to_double(), dtype(kDouble))));
    return constant(IValue(full({}, s.to_int(), dtype(kLong))));
  }
  Value* one() { return constant(IValue(int64_t(1))); }
};

bool is_number(const std::optional<IValue>& v) {
  return v && (v->is_int() || v->is_double());
}

// addmm(self, m1, m2, beta, alpha) = beta * self + alpha * mm(m1, m2); beta = 0 ignores self.
Value* decompose_addmm(Emitter& e, Node* n) {
  auto beta = arg_constant(n, 3), alpha = arg_constant(n, 4);
  if (!is_number(beta) || !is_number(alpha)) return nullptr;
  Value* prod = e.op("mm", {n->input(1), n->input(2)});
  if (alpha->to_double() != 1) prod = e.op("mul.Tensor", {prod, e.scalar_tensor(*alpha)});
  if (beta->to_double() == 0) return prod;
  Value* self = n->input(0);
  if (beta->to_double() != 1) self = e.op("mul.Tensor", {self, e.scalar_tensor(*beta)});
  return e.op("add.Tensor", {prod, self, e.one()});
}

// linear(x, w, b) = matmul(x, t(w)) + b.
Value* decompose_linear(Emitter& e, Node* n) {
  OptTensor bias = opt_tensor_arg(n, 2);
  if (bias == OptTensor::kUnknown) return nullptr;
  Value* out = e.op("matmul", {n->input(0), e.op("t", {n->input(1)})});
  if (bias == OptTensor::kTensor) out = e.op("add.Tensor", {out, n->input(2), e.one()});
  return out;
}

// The number of entries of a list argument, when known.
std::optional<size_t> list_length(const Node* n, size_t i) {
  if (i >= n->inputs().size()) return std::nullopt;
  const Value* v = n->input(i);
  if (v->node()->kind() == kind::kListConstruct) return v->node()->inputs().size();
  auto c = to_constant(v);
  if (c && c->is_int_list()) return c->to_int_list().size();
  return std::nullopt;
}

// layer_norm(x, shape, w, b, eps) = (x - mean) / sqrt(var + eps) * w + b over the last
// len(shape) dims, with the biased variance.
Value* decompose_layer_norm(Emitter& e, Node* n) {
  auto k = list_length(n, 1);
  auto eps = arg_constant(n, 4);
  OptTensor weight = opt_tensor_arg(n, 2), bias = opt_tensor_arg(n, 3);
  if (!k || *k == 0 || !is_number(eps) || weight == OptTensor::kUnknown ||
      bias == OptTensor::kUnknown)
    return nullptr;
  std::vector<int64_t> dims;
  for (int64_t d = -int64_t(*k); d < 0; ++d) dims.push_back(d);
  Value* x = n->input(0);
  Value* dim_list = e.constant(IValue(dims));
  Value* keep = e.constant(IValue(true));
  Value* mean = e.op("mean.dim", {x, dim_list, keep, e.constant(IValue())});
  Value* var = e.op("var.correction", {x, dim_list, e.constant(IValue(int64_t(0))), keep});
  Value* std = e.op("sqrt", {e.op("add.Tensor", {var, e.scalar_tensor(*eps), e.one()})});
  Value* out = e.op("div.Tensor", {e.op("sub.Tensor", {x, mean, e.one()}), std});
  if (weight == OptTensor::kTensor) out = e.op("mul.Tensor", {out, n->input(2)});
  if (bias == OptTensor::kTensor) out = e.op("add.Tensor", {out, n->input(3), e.one()});
  return out;
}

// softmax(x, dim) = exp(x - amax(x, dim)) / sum(exp(x - amax(x, dim)), dim).
Value* decompose_softmax(Emitter& e, Node* n) {
  auto dim = arg_constant(n, 1), dt = arg_constant(n, 2);
  if (!dim || !dim->is_int() || !dt || !dt->is_none()) return nullptr;
  Value* x = n->input(0);
  Value* dims = e.constant(IValue(std::vector<int64_t>{dim->to_int()}));
  Value* keep = e.constant(IValue(true));
  Value* max = e.op("amax", {x, dims, keep});
  Value* ex = e.op("exp", {e.op("sub.Tensor", {x, max, e.one()})});
  Value* sum = e.op("sum.dim_IntList", {ex, dims, keep, e.constant(IValue())});
  return e.op("div.Tensor", {ex, sum});
}

Value* decompose_node(Emitter& e, Node* n) {
  if (!detail::has_valid_arity(n) || n->outputs().size() != 1) return nullptr;
  if (is_op(n, "addmm", "")) return decompose_addmm(e, n);
  if (is_op(n, "linear", "")) return decompose_linear(e, n);
  if (is_op(n, "layer_norm", "")) return decompose_layer_norm(e, n);
  if (is_op(n, "softmax", "int")) return decompose_softmax(e, n);
  return nullptr;
}

void decompose_block(Graph& g, Block* b) {
  for (Node* n = b->nodes().first_; n != b->return_node();) {
    Node* next = n->next();
    for (Block* sub : n->blocks()) decompose_block(g, sub);
    Emitter e{g, n};
    if (Value* v = decompose_node(e, n)) {
      n->output()->replace_all_uses_with(v);
      n->destroy();
    }
    n = next;
  }
}

}  // namespace

void decompose(Graph& g) {
  decompose_block(g, g.block());
}

}  // namespace retorch::jit
