// Helpers shared by the graph passes: block walking, constants, running one op, mutation fences.
#include "retorch/jit/passes/PassUtils.h"

#include <cstring>
#include <unordered_map>

#include "retorch/autograd/GradMode.h"
#include "retorch/jit/PrimOps.h"
#include "retorch/jit/Schema.h"

namespace retorch::jit::detail {

void for_each_node(const Block* b, const std::function<void(Node*)>& f) {
  for (Node* n : b->nodes()) {
    f(n);
    for (Block* sub : n->blocks()) for_each_node(sub, f);
  }
}

std::optional<IValue> constant_input(const Value* v) {
  const Node* n = v->node();
  if (n->kind() == kind::kConstant) return constant_value(n);
  if (n->kind() != kind::kListConstruct) return std::nullopt;
  const TypePtr& t = v->type();
  TypeKind elem = t->kind() == TypeKind::kList ? t->elem()->kind() : TypeKind::kAny;
  std::vector<int64_t> ints;
  std::vector<double> doubles;
  std::vector<Tensor> tensors;
  for (const Value* in : n->inputs()) {
    auto c = to_constant(in);
    if (!c) return std::nullopt;
    if (c->is_int())
      ints.push_back(c->to_int());
    else if (c->is_double())
      doubles.push_back(c->to_double());
    else if (c->is_tensor())
      tensors.push_back(c->to_tensor());
    else
      return std::nullopt;
  }
  size_t count = n->inputs().size();
  if (ints.size() == count && (count > 0 || elem == TypeKind::kInt)) return IValue(ints);
  if (doubles.size() == count && (count > 0 || elem == TypeKind::kFloat)) return IValue(doubles);
  if (tensors.size() == count && (count > 0 || elem == TypeKind::kTensor)) return IValue(tensors);
  return std::nullopt;
}

static bool tensor_equal(const Tensor& a, const Tensor& b) {
  if (a.impl() == b.impl()) return true;
  if (!a.is_cpu() || !b.is_cpu()) return false;  // no device reads at compile time
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes() || a.strides() != b.strides() ||
      a.requires_grad() != b.requires_grad())
    return false;
  Tensor ca = a.detach().contiguous(), cb = b.detach().contiguous();
  size_t bytes = size_t(ca.numel()) * size_t(ca.element_size());
  return bytes == 0 || std::memcmp(ca.data_ptr(), cb.data_ptr(), bytes) == 0;
}

static bool double_bits_equal(double a, double b) {
  return std::memcmp(&a, &b, sizeof(double)) == 0;
}

bool ivalue_equal(const IValue& a, const IValue& b) {
  if (a.payload().index() != b.payload().index()) return false;
  return std::visit(
      [&](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b.payload());
        if constexpr (std::is_same_v<T, std::monostate>) {
          return true;
        } else if constexpr (std::is_same_v<T, Tensor>) {
          return tensor_equal(x, y);
        } else if constexpr (std::is_same_v<T, double>) {
          return double_bits_equal(x, y);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          if (x.size() != y.size()) return false;
          for (size_t i = 0; i < x.size(); ++i)
            if (!double_bits_equal(x[i], y[i])) return false;
          return true;
        } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
          if (x.size() != y.size()) return false;
          for (size_t i = 0; i < x.size(); ++i)
            if (!tensor_equal(x[i], y[i])) return false;
          return true;
        } else if constexpr (std::is_same_v<T, std::vector<std::optional<Tensor>>>) {
          if (x.size() != y.size()) return false;
          for (size_t i = 0; i < x.size(); ++i) {
            if (x[i].has_value() != y[i].has_value()) return false;
            if (x[i] && !tensor_equal(*x[i], *y[i])) return false;
          }
          return true;
        } else if constexpr (std::is_same_v<T, Generator>) {
          return false;  // generators carry state: never the same constant
        } else {
          return x == y;
        }
      },
      a.payload());
}

std::optional<Stack> run_node_op(const Node* n, Stack args, bool record_grad) {
  if (n->op() == nullptr) return std::nullopt;
  const FunctionSchema& s = schema_of(*n->op());
  if (args.size() > s.args.size()) return std::nullopt;
  try {
    for (size_t i = args.size(); i < s.args.size(); ++i) {
      if (!s.args[i].default_value) return std::nullopt;
      args.push_back(default_value(s.args[i]));
    }
    AutoGradMode grad_mode(record_grad);
    n->op()->call_boxed(&args);
  } catch (const std::exception&) {
    return std::nullopt;  // the op rejects these arguments: leave the node to fail at run time
  }
  if (args.size() != n->outputs().size()) return std::nullopt;
  return args;
}

bool has_valid_arity(const Node* n) {
  if (n->op() == nullptr) return false;
  const FunctionSchema& s = schema_of(*n->op());
  if (n->inputs().size() > s.args.size()) return false;
  for (size_t i = n->inputs().size(); i < s.args.size(); ++i)
    if (!s.args[i].default_value) return false;
  return true;
}

bool may_hold_tensor(const TypePtr& t) {
  switch (t->kind()) {
    case TypeKind::kTensor:
    case TypeKind::kAny:
    case TypeKind::kClass:
      return true;
    case TypeKind::kList:
    case TypeKind::kOptional:
      return may_hold_tensor(t->elem());
    case TypeKind::kTuple:
      for (const TypePtr& e : t->elems())
        if (may_hold_tensor(e)) return true;
      return false;
    default:
      return false;
  }
}

bool is_pure_prim(const std::string& k) {
  static const std::unordered_set<std::string> kPure = {
      std::string(kind::kConstant),       std::string(kind::kListConstruct),
      std::string(kind::kListUnpack),     std::string(kind::kTupleConstruct),
      std::string(kind::kTupleUnpack),    std::string(kind::kIf),
      std::string(kind::kLoop),           std::string(kind::kFusionGroup),
      std::string(kind::kGetAttr),        std::string(kind::kPrint),
      std::string(kind::kRaiseException), "prim::CallFunction"};
  // The number ops of scripted code (prim::add, prim::NumToTensor, ...) are pure too.
  return kPure.count(k) > 0 || find_prim_op(k) != nullptr;
}

namespace {

// Union-find over values. See Note [Mutation fences].
struct Groups {
  std::unordered_map<const Value*, const Value*> parent;
  const Value* find(const Value* v) {
    auto it = parent.find(v);
    if (it == parent.end()) return parent[v] = v;
    if (it->second == v) return v;
    const Value* root = find(it->second);
    parent[v] = root;
    return root;
  }
  void join(const Value* a, const Value* b) { parent[find(a)] = find(b); }
};

void join_all(Groups& g, const std::vector<const Value*>& vs) {
  const Value* first = nullptr;
  for (const Value* v : vs) {
    if (!may_hold_tensor(v->type())) continue;
    if (first)
      g.join(first, v);
    else
      first = g.find(v);
  }
}

}  // namespace

std::unordered_set<const Value*> values_touched_by_mutation(const Graph& graph) {
  Groups groups;
  std::vector<const Value*> seeds;
  for_each_node(graph.block(), [&](Node* n) {
    std::vector<const Value*> vs(n->inputs().begin(), n->inputs().end());
    vs.insert(vs.end(), n->outputs().begin(), n->outputs().end());
    for (Block* b : n->blocks()) {
      vs.insert(vs.end(), b->inputs().begin(), b->inputs().end());
      vs.insert(vs.end(), b->outputs().begin(), b->outputs().end());
    }
    join_all(groups, vs);
    bool unknown = n->op() == nullptr && !is_pure_prim(n->kind());
    if (n->is_mutating() || unknown)
      for (const Value* v : n->inputs())
        if (may_hold_tensor(v->type())) seeds.push_back(v);
  });
  std::unordered_set<const Value*> touched;
  if (seeds.empty()) return touched;
  std::unordered_set<const Value*> roots;
  for (const Value* s : seeds) roots.insert(groups.find(s));
  std::vector<const Value*> graph_inputs(graph.inputs().begin(), graph.inputs().end());
  for (const Value* in : graph_inputs)
    if (may_hold_tensor(in->type()) && roots.count(groups.find(in))) {
      join_all(groups, graph_inputs);  // callers may pass aliased inputs
      roots.clear();
      for (const Value* s : seeds) roots.insert(groups.find(s));
      break;
    }
  auto consider = [&](const Value* v) {
    if (may_hold_tensor(v->type()) && roots.count(groups.find(v))) touched.insert(v);
  };
  for (const Value* in : graph.inputs()) consider(in);
  for_each_node(graph.block(), [&](Node* n) {
    for (const Value* v : n->outputs()) consider(v);
    for (Block* b : n->blocks())
      for (const Value* v : b->inputs()) consider(v);
  });
  return touched;
}

Value* constant_before(Graph& g, Node* before, const IValue& v) {
  Node* c = g.create(std::string(kind::kConstant), {}, 1);
  if (!v.is_none()) c->set_attr("value", v);
  c->output()->set_type(Type::of(v));
  c->insert_before(before);
  return c->output();
}

bool is_op(const Node* n, std::string_view name, std::string_view overload) {
  return n->op() != nullptr && n->op()->schema().name == name &&
         n->op()->schema().overload == overload;
}

std::optional<IValue> arg_constant(const Node* n, size_t i) {
  if (i < n->inputs().size()) return constant_input(n->input(i));
  const FunctionSchema& s = schema_of(*n->op());
  if (i < s.args.size() && s.args[i].default_value) return default_value(s.args[i]);
  return std::nullopt;
}

}  // namespace retorch::jit::detail
