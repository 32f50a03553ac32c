// Dead code elimination: drops pure nodes whose results nobody reads, and unused If outputs.
#include "retorch/jit/passes/PassUtils.h"
#include "retorch/jit/passes/Passes.h"

namespace retorch::jit {

namespace {

bool removable(const Node* n) {
  for (const Value* o : n->outputs())
    if (o->has_uses()) return false;
  // Nodes of unknown kind (no operator, not a known prim) might do anything: keep them.
  if (n->op() == nullptr && !detail::is_pure_prim(n->kind())) return false;
  return !n->has_side_effects();
}

// An output of prim::If that nobody reads is dropped from the node and from both branches.
void drop_unused_if_outputs(Node* n) {
  for (size_t i = n->outputs().size(); i-- > 0;) {
    if (n->output(i)->has_uses()) continue;
    for (Block* b : n->blocks()) b->erase_output(i);
    n->erase_output(i);
  }
}

void dce_block(Block* b) {
  // Reverse order: removing a node can make the producers of its inputs dead.
  for (Node* n : b->nodes_reversed()) {
    if (n->kind() == kind::kIf) drop_unused_if_outputs(n);
    for (Block* sub : n->blocks()) dce_block(sub);
    if (removable(n)) n->destroy();
  }
}

}  // namespace

void eliminate_dead_code(Graph& g) {
  dce_block(g.block());
}

}  // namespace retorch::jit
