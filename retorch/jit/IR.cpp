// The graph IR's structure: value uses, node linking, blocks, constants, copying and lint.
#include "retorch/jit/IR.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

namespace retorch::jit {

// ---------------------------------------------------------------- Value

Value* Value::set_type(TypePtr t) {
  RT_CHECK(t != nullptr, "jit: value %", name(), " given a null type");
  type_ = std::move(t);
  return this;
}

Value* Value::set_debug_name(const std::string& name) {
  RT_CHECK(name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit),
           "jit: value names may not be plain numbers (got '", name, "')");
  Graph* g = owning_graph();
  auto& names = g->names_;
  if (has_debug_name()) names.erase(debug_name_);
  debug_name_ = name;
  if (name.empty()) return this;
  auto it = names.find(name);
  if (it != names.end() && it->second != this) {
    // The old holder becomes name.1, name.2, ... (the first free suffix).
    Value* old = it->second;
    for (size_t k = 1;; ++k) {
      std::string alt = name + "." + std::to_string(k);
      if (!names.count(alt)) {
        old->debug_name_ = alt;
        names[alt] = old;
        break;
      }
    }
  }
  names[name] = this;
  return this;
}

std::string Value::name() const {
  return has_debug_name() ? debug_name_ : std::to_string(unique_);
}

void Value::replace_all_uses_with(Value* v) {
  RT_CHECK(v != this, "jit: replace_all_uses_with: %", name(), " replaced by itself");
  RT_CHECK(v->owning_graph() == owning_graph(), "jit: replace_all_uses_with across graphs");
  for (const Use& u : uses_) {
    u.user->inputs_[u.offset] = v;
    v->uses_.push_back(u);
  }
  uses_.clear();
}

Graph* Value::owning_graph() const {
  return node_->owning_graph();
}

// ---------------------------------------------------------------- Node

Value* Node::output() const {
  RT_CHECK(outputs_.size() == 1, "jit: ", kind_, " has ", outputs_.size(),
           " outputs where one was expected");
  return outputs_[0];
}

Value* Node::add_input(Value* v) {
  return insert_input(inputs_.size(), v);
}

Value* Node::insert_input(size_t i, Value* v) {
  RT_CHECK(v != nullptr && v->owning_graph() == graph_, "jit: ", kind_,
           ": input from another graph");
  RT_CHECK(i <= inputs_.size(), "jit: ", kind_, ": input index ", i, " out of range");
  // Later inputs shift by one: fix their recorded offsets.
  for (size_t k = i; k < inputs_.size(); ++k)
    for (Use& u : inputs_[k]->uses_)
      if (u.user == this && u.offset == k) {
        ++u.offset;
        break;
      }
  inputs_.insert(inputs_.begin() + std::ptrdiff_t(i), v);
  v->uses_.push_back({this, i});
  return v;
}

Value* Node::replace_input(size_t i, Value* v) {
  RT_CHECK(i < inputs_.size(), "jit: ", kind_, ": input index ", i, " out of range");
  Value* old = inputs_[i];
  auto& ou = old->uses_;
  ou.erase(std::find(ou.begin(), ou.end(), Use{this, i}));
  inputs_[i] = v;
  v->uses_.push_back({this, i});
  return old;
}

void Node::replace_input_with(Value* from, Value* to) {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (inputs_[i] == from) replace_input(i, to);
}

void Node::remove_input(size_t i) {
  RT_CHECK(i < inputs_.size(), "jit: ", kind_, ": input index ", i, " out of range");
  auto& ou = inputs_[i]->uses_;
  ou.erase(std::find(ou.begin(), ou.end(), Use{this, i}));
  for (size_t k = i + 1; k < inputs_.size(); ++k)
    for (Use& u : inputs_[k]->uses_)
      if (u.user == this && u.offset == k) {
        --u.offset;
        break;
      }
  inputs_.erase(inputs_.begin() + std::ptrdiff_t(i));
}

void Node::drop_input_uses() {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    auto& ou = inputs_[i]->uses_;
    auto it = std::find(ou.begin(), ou.end(), Use{this, i});
    if (it != ou.end()) ou.erase(it);
  }
}

void Node::remove_all_inputs() {
  drop_input_uses();
  inputs_.clear();
}

Value* Node::add_output(TypePtr type) {
  Value* v = graph_->new_value(this, outputs_.size(), std::move(type));
  outputs_.push_back(v);
  return v;
}

void Node::erase_output(size_t i) {
  RT_CHECK(i < outputs_.size(), "jit: ", kind_, ": output index ", i, " out of range");
  Value* v = outputs_[i];
  RT_CHECK(!v->has_uses(), "jit: ", kind_, ": cannot erase output %", v->name(),
           " that still has uses");
  outputs_.erase(outputs_.begin() + std::ptrdiff_t(i));
  for (size_t k = i; k < outputs_.size(); ++k) outputs_[k]->offset_ = k;
  graph_->free_value(v);
}

Block* Node::add_block() {
  auto* b = new Block(graph_, this);
  graph_->all_blocks_.insert(b);
  blocks_.push_back(b);
  return b;
}

bool Node::has_attr(std::string_view name) const {
  for (const auto& [k, v] : attrs_)
    if (k == name) return true;
  return false;
}

const IValue& Node::attr(std::string_view name) const {
  for (const auto& [k, v] : attrs_)
    if (k == name) return v;
  RT_ERROR("jit: node ", kind_, " has no attribute '", name, "'");
}

Node* Node::set_attr(const std::string& name, IValue v) {
  for (auto& [k, old] : attrs_)
    if (k == name) {
      old = std::move(v);
      return this;
    }
  attrs_.emplace_back(name, std::move(v));
  return this;
}

void Node::remove_attr(std::string_view name) {
  attrs_.erase(
      std::remove_if(attrs_.begin(), attrs_.end(), [&](const auto& a) { return a.first == name; }),
      attrs_.end());
}

Node* Node::insert_before(Node* n) {
  RT_CHECK(!in_block_list(), "jit: ", kind_, " is already in a block");
  RT_CHECK(n->in_block_list() && n->kind_ != kind::kParam, "jit: cannot insert ", kind_, " before ",
           n->kind_);
  owning_block_ = n->owning_block_;
  prev_ = n->prev_;
  next_ = n;
  n->prev_->next_ = this;
  n->prev_ = this;
  return this;
}

Node* Node::insert_after(Node* n) {
  RT_CHECK(n->kind_ != kind::kReturn, "jit: cannot insert ", kind_, " after a return");
  return insert_before(n->next_);
}

void Node::move_before(Node* n) {
  remove_from_list();
  insert_before(n);
}

void Node::move_after(Node* n) {
  remove_from_list();
  insert_after(n);
}

bool Node::is_before(const Node* n) const {
  RT_CHECK(owning_block_ == n->owning_block_, "jit: is_before on nodes of different blocks");
  for (const Node* p = next_; p; p = p->next_) {
    if (p == n) return true;
    if (p->kind_ == kind::kReturn) break;
  }
  return false;
}

void Node::remove_from_list() {
  RT_CHECK(in_block_list(), "jit: ", kind_, " is not in a block");
  RT_CHECK(kind_ != kind::kParam && kind_ != kind::kReturn, "jit: cannot unlink ", kind_);
  if (graph_->insert_before_ == this) graph_->insert_before_ = next_;
  prev_->next_ = next_;
  next_->prev_ = prev_;
  prev_ = next_ = nullptr;
  owning_block_ = nullptr;
}

void Node::destroy() {
  for (Value* v : outputs_)
    RT_CHECK(!v->has_uses(), "jit: cannot destroy ", kind_, ": its output %", v->name(),
             " is still used by ", v->uses()[0].user->kind());
  if (in_block_list()) remove_from_list();
  for (Block* b : blocks_) b->destroy();
  blocks_.clear();
  remove_all_inputs();
  for (Value* v : outputs_) graph_->free_value(v);
  outputs_.clear();
  graph_->free_node(this);
}

bool Node::is_mutating() const {
  return op_ != nullptr && op_->schema().schema.find('!') != std::string_view::npos;
}

bool Node::has_side_effects() const {
  if (kind_ == kind::kPrint || kind_ == kind::kRaiseException) return true;
  if (is_mutating()) return true;
  if (op_ != nullptr) {
    std::string_view s = op_->schema().schema;
    if (s.find("Generator") != std::string_view::npos) return true;
    static const std::string_view kRandom[] = {"dropout",
                                               "feature_dropout",
                                               "alpha_dropout",
                                               "feature_alpha_dropout",
                                               "dropout2d",
                                               "native_dropout",
                                               "rrelu",
                                               "bernoulli",
                                               "multinomial",
                                               "rand_like",
                                               "randn_like",
                                               "scaled_dot_product_attention",
                                               "multi_head_attention_forward"};
    for (auto r : kRandom)
      if (op_->schema().name == r) return true;
  }
  for (Block* b : blocks_)
    for (Node* n : b->nodes())
      if (n->has_side_effects()) return true;
  return false;
}

// ---------------------------------------------------------------- Block

Block::Block(Graph* g, Node* owner) : graph_(g), owning_node_(owner) {
  param_ = new Node(g, std::string(kind::kParam));
  return_ = new Node(g, std::string(kind::kReturn));
  g->all_nodes_.insert(param_);
  g->all_nodes_.insert(return_);
  // The sentinels form the list: param -> return; "in the list" means next_ is set.
  param_->owning_block_ = return_->owning_block_ = this;
  param_->next_ = return_;
  return_->prev_ = param_;
  return_->next_ = param_;
  param_->prev_ = return_;
}

Value* Block::add_input(const std::string& name, TypePtr type) {
  Value* v = param_->add_output(std::move(type));
  if (!name.empty()) v->set_debug_name(name);
  return v;
}

void Block::erase_input(size_t i) {
  param_->erase_output(i);
}

size_t Block::register_output(Value* v) {
  return_->add_input(v);
  return return_->inputs().size() - 1;
}

std::vector<Node*> Block::nodes_reversed() const {
  std::vector<Node*> r;
  for (Node* n : nodes()) r.push_back(n);
  std::reverse(r.begin(), r.end());
  return r;
}

void Block::destroy() {
  return_->remove_all_inputs();
  for (Node* n : nodes_reversed()) {
    for (Value* v : n->outputs_) v->uses_.clear();  // users are being destroyed too
    n->destroy();
  }
  for (Value* v : param_->outputs_) {
    v->uses_.clear();
    graph_->free_value(v);
  }
  param_->outputs_.clear();
  graph_->free_node(param_);
  graph_->free_node(return_);
  graph_->all_blocks_.erase(this);
  delete this;
}

// ---------------------------------------------------------------- Graph

Graph::Graph() {
  block_ = new Block(this, nullptr);
  all_blocks_.insert(block_);
  insert_before_ = block_->return_node();
}

Graph::~Graph() {
  for (Node* n : all_nodes_) delete n;
  for (Value* v : all_values_) delete v;
  for (Block* b : all_blocks_) delete b;
}

Value* Graph::new_value(Node* n, size_t offset, TypePtr type) {
  auto* v = new Value(n, offset, next_unique_++, std::move(type));
  all_values_.insert(v);
  return v;
}

void Graph::free_node(Node* n) {
  if (insert_before_ == n) insert_before_ = block_->return_node();
  all_nodes_.erase(n);
  delete n;
}

void Graph::free_value(Value* v) {
  if (v->has_debug_name()) {
    auto it = names_.find(v->debug_name());
    if (it != names_.end() && it->second == v) names_.erase(it);
  }
  all_values_.erase(v);
  delete v;
}

Node* Graph::create(std::string kind, const std::vector<Value*>& inputs, size_t num_outputs) {
  auto* n = new Node(this, std::move(kind));
  all_nodes_.insert(n);
  for (Value* v : inputs) n->add_input(v);
  for (size_t i = 0; i < num_outputs; ++i) n->add_output();
  return n;
}

Node* Graph::create_op(const OperatorHandle& op, const std::vector<Value*>& inputs,
                       size_t num_outputs) {
  Node* n = create("aten::" + std::string(op.schema().name), inputs, num_outputs);
  n->set_op(&op);
  return n;
}

Node* Graph::insert_node(Node* n) {
  return n->insert_before(insert_before_);
}

Value* Graph::insert_constant(const IValue& v) {
  Node* n = create(std::string(kind::kConstant), {}, 1);
  if (!v.is_none()) n->set_attr("value", v);
  n->output()->set_type(Type::of(v));
  insert_node(n);
  return n->output();
}

IValue constant_value(const Node* n) {
  RT_CHECK(n->kind() == kind::kConstant, "jit: expected prim::Constant, got ", n->kind());
  return n->has_attr("value") ? n->attr("value") : IValue();
}

std::optional<IValue> to_constant(const Value* v) {
  if (v->node()->kind() != kind::kConstant) return std::nullopt;
  return constant_value(v->node());
}

void clone_nodes_into(const Block& src, Block* dst, Node* insert_before,
                      std::unordered_map<const Value*, Value*>& env) {
  Graph* g = dst->owning_graph();
  auto lookup = [&](const Value* v) {
    auto it = env.find(v);
    RT_CHECK(it != env.end(), "jit: copying a graph: value %", v->name(),
             " is used outside the scope that defines it");
    return it->second;
  };
  for (Node* n : src.nodes()) {
    std::vector<Value*> ins;
    for (Value* v : n->inputs()) ins.push_back(lookup(v));
    Node* c = g->create(n->kind(), ins, 0);
    c->set_op(n->op());
    for (const auto& [k, v] : n->attrs()) c->set_attr(k, v);
    c->set_source_location(n->source_location());
    for (Value* o : n->outputs()) {
      Value* co = c->add_output(o->type());
      if (o->has_debug_name()) co->set_debug_name(o->debug_name());
      env[o] = co;
    }
    for (Block* b : n->blocks()) {
      Block* cb = c->add_block();
      for (Value* in : b->inputs()) env[in] = cb->add_input(in->debug_name(), in->type());
      clone_nodes_into(*b, cb, cb->return_node(), env);
      for (Value* out : b->outputs()) cb->register_output(lookup(out));
    }
    c->insert_before(insert_before);
  }
}

std::unique_ptr<Graph> Graph::copy() const {
  auto g = std::make_unique<Graph>();
  std::unordered_map<const Value*, Value*> env;
  for (Value* in : inputs()) env[in] = g->add_input(in->debug_name(), in->type());
  clone_nodes_into(*block_, g->block(), g->block()->return_node(), env);
  for (Value* out : outputs()) g->register_output(env.at(out));
  return g;
}

void Graph::assign_uniques(const std::vector<std::pair<Value*, size_t>>& numbers) {
  std::unordered_set<size_t> taken;
  std::unordered_set<const Value*> listed;
  size_t next = 0;
  for (const auto& [v, u] : numbers) {
    RT_CHECK(all_values_.count(v), "jit: assign_uniques: a value of another graph");
    RT_CHECK(taken.insert(u).second, "jit: value number %", u, " given twice");
    RT_CHECK(listed.insert(v).second, "jit: assign_uniques: a value listed twice");
    next = std::max(next, u + 1);
  }
  // The others keep their relative order, above every listed number.
  std::vector<Value*> rest;
  for (Value* v : all_values_)
    if (!listed.count(v)) rest.push_back(v);
  std::sort(rest.begin(), rest.end(), [](Value* a, Value* b) { return a->unique_ < b->unique_; });
  for (const auto& [v, u] : numbers) v->unique_ = u;
  for (Value* v : rest) v->unique_ = next++;
  next_unique_ = next;
}

std::vector<Value*> Graph::insert_graph(const Graph& src, const std::vector<Value*>& inputs) {
  RT_CHECK(inputs.size() == src.inputs().size(), "jit: insert_graph: the graph takes ",
           src.inputs().size(), " inputs but ", inputs.size(), " were given");
  std::unordered_map<const Value*, Value*> env;
  for (size_t i = 0; i < inputs.size(); ++i) env[src.inputs()[i]] = inputs[i];
  Block* dst = insert_before_->owning_block();
  clone_nodes_into(*src.block(), dst, insert_before_, env);
  std::vector<Value*> outs;
  for (Value* o : src.outputs()) outs.push_back(env.at(o));
  return outs;
}

// Checks one block: every input is defined earlier in scope and its use is recorded.
static void lint_block(const Block* b, std::unordered_set<const Value*>& scope) {
  for (Value* v : b->inputs()) scope.insert(v);
  auto check_inputs = [&](const Node* n) {
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      const Value* v = n->inputs()[i];
      RT_CHECK(scope.count(v), "jit lint: ", n->kind(), " uses %", v->name(),
               " before it is defined (or outside its block)");
      const auto& uses = v->uses();
      RT_CHECK(std::find(uses.begin(), uses.end(), Use{const_cast<Node*>(n), i}) != uses.end(),
               "jit lint: %", v->name(), " does not record its use by ", n->kind(), " input ", i);
    }
  };
  for (Node* n : b->nodes()) {
    RT_CHECK(n->owning_block() == b, "jit lint: ", n->kind(), " has a wrong owning block");
    RT_CHECK(n->next()->prev() == n, "jit lint: broken node list after ", n->kind());
    check_inputs(n);
    for (Block* sub : n->blocks()) {
      std::unordered_set<const Value*> inner = scope;
      lint_block(sub, inner);
    }
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      const Value* o = n->outputs()[i];
      RT_CHECK(o->node() == n && o->offset() == i, "jit lint: output ", i, " of ", n->kind(),
               " has a wrong node/offset");
      for (const Use& u : o->uses())
        RT_CHECK(u.offset < u.user->inputs().size() && u.user->inputs()[u.offset] == o,
                 "jit lint: %", o->name(), " records a use that its user does not have");
      scope.insert(o);
    }
  }
  check_inputs(b->return_node());
}

void Graph::lint() const {
  std::unordered_set<const Value*> scope;
  lint_block(block_, scope);
}

}  // namespace retorch::jit
