// Call inlining: a prim::CallFunction carrying its callee's body as its block is replaced by
// a copy of that body.
#include "retorch/jit/passes/Passes.h"

namespace retorch::jit {

namespace {

constexpr std::string_view kCallFunction = "prim::CallFunction";

// Inlines the calls of b (and of its nested blocks); returns the number inlined.
size_t inline_block(Block* b) {
  size_t count = 0;
  for (Node* n = b->nodes().first_; n != b->return_node();) {
    if (n->kind() != kCallFunction) {
      for (Block* sub : n->blocks()) count += inline_block(sub);
      n = n->next();
      continue;
    }
    RT_CHECK(n->blocks().size() == 1, "jit: prim::CallFunction has ", n->blocks().size(),
             " blocks where one (the callee's body) was expected");
    Block* body = n->blocks()[0];
    RT_CHECK(body->inputs().size() == n->inputs().size() &&
                 body->outputs().size() == n->outputs().size(),
             "jit: prim::CallFunction passes ", n->inputs().size(), " arguments and takes ",
             n->outputs().size(), " results, but the callee has ", body->inputs().size(),
             " parameters and ", body->outputs().size(), " results");
    std::unordered_map<const Value*, Value*> env;
    for (size_t i = 0; i < n->inputs().size(); ++i) env[body->inputs()[i]] = n->input(i);
    Node* before_first = n->prev();
    clone_nodes_into(*body, b, n, env);
    for (size_t i = 0; i < n->outputs().size(); ++i)
      n->output(i)->replace_all_uses_with(env.at(body->outputs()[i]));
    n->destroy();
    ++count;
    // Continue with the inlined nodes: the callee may itself contain calls.
    n = before_first->next();
  }
  return count;
}

}  // namespace

void inline_calls(Graph& g) {
  inline_block(g.block());
}

}  // namespace retorch::jit
