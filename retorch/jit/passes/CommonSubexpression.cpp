// Common subexpression elimination: identical pure nodes computed twice are computed once.
#include <unordered_map>

#include "retorch/jit/PrimOps.h"
#include "retorch/jit/passes/PassUtils.h"
#include "retorch/jit/passes/Passes.h"

namespace retorch::jit {

namespace {

// A bucket key; nodes in one bucket are then compared exactly by same_node.
std::string node_key(const Node* n) {
  std::string k = n->kind();
  k += '|';
  k += std::to_string(reinterpret_cast<uintptr_t>(n->op()));
  for (const Value* v : n->inputs()) k += "|" + std::to_string(v->unique());
  for (const auto& [name, v] : n->attrs()) k += "|" + name + "=" + constant_str(v);
  return k;
}

bool same_node(const Node* a, const Node* b) {
  if (a->kind() != b->kind() || a->op() != b->op() || a->inputs() != b->inputs() ||
      a->outputs().size() != b->outputs().size() || a->attrs().size() != b->attrs().size())
    return false;
  for (size_t i = 0; i < a->attrs().size(); ++i) {
    const auto& [an, av] = a->attrs()[i];
    if (!b->has_attr(an) || !detail::ivalue_equal(av, b->attr(an))) return false;
  }
  return true;
}

bool candidate(const Node* n, const std::unordered_set<const Value*>& touched) {
  if (!n->blocks().empty() || n->has_side_effects() || n->outputs().empty()) return false;
  if (n->op() == nullptr) {
    // Only value-building prims; GetAttr may observe a SetAttr in between.
    static const std::unordered_set<std::string_view> kPrims = {
        kind::kConstant, kind::kListConstruct, kind::kListUnpack, kind::kTupleConstruct,
        kind::kTupleUnpack};
    if (!kPrims.count(n->kind()) && find_prim_op(n->kind()) == nullptr) return false;
  }
  for (const Value* v : n->inputs())
    if (touched.count(v)) return false;
  for (const Value* v : n->outputs())
    if (touched.count(v)) return false;
  return true;
}

// One scope per block; lookups also search the enclosing blocks' scopes.
struct Scope {
  const Scope* parent;
  std::unordered_map<std::string, std::vector<Node*>> buckets;
  Node* find(const std::string& key, const Node* n) const {
    for (const Scope* s = this; s; s = s->parent) {
      auto it = s->buckets.find(key);
      if (it == s->buckets.end()) continue;
      for (Node* m : it->second)
        if (same_node(m, n)) return m;
    }
    return nullptr;
  }
};

void cse_block(Block* b, const Scope* parent, const std::unordered_set<const Value*>& touched) {
  Scope scope{parent, {}};
  for (Node* n = b->nodes().first_; n != b->return_node();) {
    Node* next = n->next();
    for (Block* sub : n->blocks()) cse_block(sub, &scope, touched);
    if (candidate(n, touched)) {
      std::string key = node_key(n);
      if (Node* prior = scope.find(key, n)) {
        for (size_t i = 0; i < n->outputs().size(); ++i)
          n->output(i)->replace_all_uses_with(prior->output(i));
        n->destroy();
      } else {
        scope.buckets[key].push_back(n);
      }
    }
    n = next;
  }
}

}  // namespace

void eliminate_common_subexpression(Graph& g) {
  auto touched = detail::values_touched_by_mutation(g);
  cse_block(g.block(), nullptr, touched);
}

}  // namespace retorch::jit
