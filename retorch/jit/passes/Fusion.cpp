// Fusion groups: maximal runs of adjacent pointwise nodes (optionally ending in a reduction)
// become one prim::FusionGroup whose block holds the fused subgraph; and the inverse.
#include <unordered_map>

#include "retorch/jit/passes/PassUtils.h"
#include "retorch/jit/passes/Passes.h"

namespace retorch::jit {

namespace {

// The pointwise ops of ops.yaml and its families: those whose generated tests are of kind
// unary, unary_float, binary or ternary, plus the activations and where/clamp/masked_fill
// overloads. contiguous and detach (aliasing, no compute) are left out.
const std::unordered_set<std::string_view>& fusible_ops() {
  static const std::unordered_set<std::string_view> kOps = {
      // unary / unary_float
      "clone", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin",
      "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "erf", "reciprocal",
      "silu", "gelu", "softplus", "neg", "abs", "sign", "relu", "floor", "ceil", "round", "trunc",
      "isnan", "logical_not", "lgamma", "digamma", "erfinv", "erfc", "i0", "special_i1", "sinc",
      "isinf", "isfinite", "isposinf", "isneginf", "nan_to_num",
      // binary / ternary
      "add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor", "div.Tensor_mode",
      "pow.Tensor_Tensor", "pow.Tensor_Scalar", "maximum", "minimum", "remainder.Tensor",
      "fmod.Tensor", "atan2", "eq.Tensor", "ne.Tensor", "lt.Tensor", "le.Tensor", "gt.Tensor",
      "ge.Tensor", "logical_and", "logical_or", "logical_xor", "addcmul", "addcdiv", "max.other",
      "min.other", "xlogy.Tensor", "where.self", "where.ScalarOther", "where.ScalarSelf",
      "lerp.Scalar", "lerp.Tensor", "masked_fill.Scalar", "masked_fill.Tensor",
      // activations
      "clamp", "clamp.Tensor", "clamp_min", "clamp_max", "leaky_relu", "elu", "selu", "celu",
      "hardsigmoid", "hardswish", "hardtanh", "mish", "threshold", "logit", "logsigmoid", "relu6",
      "softsign", "tanhshrink", "hardshrink", "softshrink"};
  return kOps;
}

std::string op_key(const OperatorHandle& op) {
  std::string k(op.schema().name);
  if (!op.schema().overload.empty()) k += "." + std::string(op.schema().overload);
  return k;
}

bool plain_tensor_node(const Node* n) {
  return n->op() != nullptr && n->blocks().empty() && n->outputs().size() == 1 &&
         !n->has_side_effects();
}

bool is_reduction(const Node* n) {
  if (!plain_tensor_node(n)) return false;
  std::string k = op_key(*n->op());
  return k == "sum" || k == "sum.dim_IntList" || k == "mean" || k == "mean.dim" || k == "amax";
}

bool is_fusible(const Node* n) {
  return plain_tensor_node(n) && fusible_ops().count(op_key(*n->op())) > 0;
}

// Replaces the run's nodes (in order, adjacent but for constants) by one prim::FusionGroup.
void make_group(Graph& g, const std::vector<Node*>& run) {
  std::unordered_set<const Node*> in_run(run.begin(), run.end());
  Node* group = g.create(std::string(kind::kFusionGroup), {}, 0);
  group->insert_after(run.back());
  Block* body = group->add_block();
  std::unordered_map<const Value*, Value*> env;
  for (Node* n : run) {
    std::vector<Value*> ins;
    for (Value* v : n->inputs()) {
      auto it = env.find(v);
      if (it == env.end()) {
        if (v->node()->kind() == kind::kConstant) {  // constants are copied in, not passed
          Node* c = g.create(std::string(kind::kConstant), {}, 1);
          for (const auto& [k, a] : v->node()->attrs()) c->set_attr(k, a);
          c->output()->set_type(v->type());
          body->append_node(c);
          it = env.emplace(v, c->output()).first;
        } else {
          group->add_input(v);
          it = env.emplace(v, body->add_input("", v->type())).first;
        }
      }
      ins.push_back(it->second);
    }
    Node* c = g.create(n->kind(), ins, 0);
    c->set_op(n->op());
    for (const auto& [k, a] : n->attrs()) c->set_attr(k, a);
    c->set_source_location(n->source_location());
    env[n->output()] = c->add_output(n->output()->type());
    body->append_node(c);
  }
  // Values read after the run leave the group as its outputs.
  std::vector<std::pair<Value*, std::string>> renamed;
  for (Node* n : run) {
    Value* o = n->output();
    std::vector<Use> outside;
    for (const Use& u : o->uses())
      if (!in_run.count(u.user)) outside.push_back(u);
    if (outside.empty()) continue;
    body->register_output(env.at(o));
    Value* go = group->add_output(o->type());
    for (const Use& u : outside) u.user->replace_input(u.offset, go);
    if (o->has_debug_name()) renamed.emplace_back(go, o->debug_name());
  }
  for (auto it = run.rbegin(); it != run.rend(); ++it) (*it)->destroy();
  for (auto& [v, name] : renamed) v->set_debug_name(name);
}

void fuse_block(Graph& g, Block* b) {
  std::vector<Node*> run;
  size_t compute = 0;
  auto flush = [&] {
    if (compute >= 2) make_group(g, run);
    run.clear();
    compute = 0;
  };
  // A snapshot: make_group only removes nodes of the run, all before the current node.
  std::vector<Node*> nodes;
  for (Node* n : b->nodes()) nodes.push_back(n);
  for (Node* n : nodes) {
    if (n->kind() == kind::kConstant) continue;  // no inputs: they never split a run
    if (is_fusible(n)) {
      run.push_back(n);
      ++compute;
      continue;
    }
    if (is_reduction(n) && !run.empty()) {  // a reduction may end a group
      run.push_back(n);
      ++compute;
      flush();
      continue;
    }
    flush();  // anything else (side effects included) ends the run: nothing moves across it
    for (Block* sub : n->blocks()) fuse_block(g, sub);
  }
  flush();
}

void unfuse_block(Block* b) {
  for (Node* n = b->nodes().first_; n != b->return_node();) {
    Node* next = n->next();
    for (Block* sub : n->blocks()) unfuse_block(sub);
    if (n->kind() == kind::kFusionGroup && n->blocks().size() == 1) {
      Block* body = n->blocks()[0];
      RT_CHECK(body->inputs().size() == n->inputs().size() &&
                   body->outputs().size() == n->outputs().size(),
               "jit: prim::FusionGroup's block takes ", body->inputs().size(), " inputs and gives ",
               body->outputs().size(), " outputs, but the node has ", n->inputs().size(), " and ",
               n->outputs().size());
      std::unordered_map<const Value*, Value*> env;
      for (size_t i = 0; i < n->inputs().size(); ++i) env[body->inputs()[i]] = n->input(i);
      clone_nodes_into(*body, b, n, env);
      for (size_t i = 0; i < n->outputs().size(); ++i) {
        Value* o = n->output(i);
        Value* r = env.at(body->outputs()[i]);
        std::string name = o->has_debug_name() ? o->debug_name() : "";
        o->replace_all_uses_with(r);
        if (!name.empty() && !r->has_debug_name()) {
          o->set_debug_name("");
          r->set_debug_name(name);
        }
      }
      n->destroy();
    }
    n = next;
  }
}

}  // namespace

bool is_fusible_pointwise(std::string_view op_name) {
  if (op_name.substr(0, 6) == "aten::") op_name.remove_prefix(6);
  return fusible_ops().count(op_name) > 0;
}

void create_fusion_groups(Graph& g) {
  fuse_block(g, g.block());
}

void inline_fusion_groups(Graph& g) {
  unfuse_block(g.block());
}

}  // namespace retorch::jit
