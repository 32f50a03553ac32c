// The JIT's graph IR: a Graph of Nodes in Blocks producing SSA Values, as in PyTorch's
// torch/csrc/jit/ir. Nodes name their operator ("aten::add", "prim::Constant"), carry
// attributes, nested blocks (prim::If, prim::Loop) and the source location that created them.
#pragma once
#include <memory>
#include <ostream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "retorch/dispatch/Dispatcher.h"
#include "retorch/jit/Type.h"

namespace retorch::jit {

class Block;
class Graph;
class Node;

/// One use of a value: input number `offset` of `user`.
struct Use {
  Node* user;
  size_t offset;
  bool operator==(const Use& o) const { return user == o.user && offset == o.offset; }
};

// Well-known node kinds.
namespace kind {
inline constexpr std::string_view kParam = "prim::Param";
inline constexpr std::string_view kReturn = "prim::Return";
inline constexpr std::string_view kConstant = "prim::Constant";
inline constexpr std::string_view kGetAttr = "prim::GetAttr";
inline constexpr std::string_view kListConstruct = "prim::ListConstruct";
inline constexpr std::string_view kListUnpack = "prim::ListUnpack";
inline constexpr std::string_view kTupleConstruct = "prim::TupleConstruct";
inline constexpr std::string_view kTupleUnpack = "prim::TupleUnpack";
inline constexpr std::string_view kIf = "prim::If";
inline constexpr std::string_view kLoop = "prim::Loop";
inline constexpr std::string_view kFusionGroup = "prim::FusionGroup";
inline constexpr std::string_view kPrint = "prim::Print";
inline constexpr std::string_view kRaiseException = "prim::RaiseException";
}  // namespace kind

/// An SSA value: the output of exactly one node (a block's inputs are its Param node's outputs).
class Value {
 public:
  Node* node() const { return node_; }
  size_t offset() const { return offset_; }
  const TypePtr& type() const { return type_; }
  Value* set_type(TypePtr t);
  /// A number unique within the graph, used to print unnamed values (%3).
  size_t unique() const { return unique_; }
  bool has_debug_name() const { return !debug_name_.empty(); }
  const std::string& debug_name() const { return debug_name_; }
  /// Names the value; a name already taken in the graph gets a ".1", ".2" suffix on the old
  /// holder, as in PyTorch. Names that are plain numbers are not allowed (they mean unique()).
  Value* set_debug_name(const std::string& name);
  /// The printed name without '%': the debug name, else the unique number.
  std::string name() const;
  const std::vector<Use>& uses() const { return uses_; }
  bool has_uses() const { return !uses_.empty(); }
  /// Makes every user of this value use `v` instead.
  void replace_all_uses_with(Value* v);
  Graph* owning_graph() const;

 private:
  friend class Graph;
  friend class Node;
  friend class Block;
  Value(Node* node, size_t offset, size_t unique, TypePtr type)
      : node_(node), offset_(offset), unique_(unique), type_(std::move(type)) {}
  Node* node_;
  size_t offset_;
  size_t unique_;
  TypePtr type_;
  std::string debug_name_;
  std::vector<Use> uses_;
};

/// An operation: a kind, inputs, outputs, attributes and nested blocks, linked into a block.
class Node {
 public:
  const std::string& kind() const { return kind_; }
  /// The operator an "aten::" node calls (resolved by the tracer or the parser); else nullptr.
  const OperatorHandle* op() const { return op_; }
  Node* set_op(const OperatorHandle* op) {
    op_ = op;
    return this;
  }

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* input(size_t i) const { return inputs_.at(i); }
  Value* output(size_t i) const { return outputs_.at(i); }
  /// The only output (checks there is exactly one).
  Value* output() const;
  Value* add_input(Value* v);
  Value* insert_input(size_t i, Value* v);
  /// Replaces input i; returns the old value.
  Value* replace_input(size_t i, Value* v);
  /// Replaces every use of `from` among this node's inputs with `to`.
  void replace_input_with(Value* from, Value* to);
  void remove_input(size_t i);
  void remove_all_inputs();
  Value* add_output(TypePtr type = Type::tensor_type());
  void erase_output(size_t i);

  const std::vector<Block*>& blocks() const { return blocks_; }
  Block* add_block();

  bool has_attr(std::string_view name) const;
  /// The attribute's value; throws naming the node and attribute when absent.
  const IValue& attr(std::string_view name) const;
  Node* set_attr(const std::string& name, IValue v);
  void remove_attr(std::string_view name);
  const std::vector<std::pair<std::string, IValue>>& attrs() const { return attrs_; }

  /// "file.cpp:12" or "model.py:4:0" of the call that created the node, "" if unknown.
  const std::string& source_location() const { return source_location_; }
  Node* set_source_location(std::string loc) {
    source_location_ = std::move(loc);
    return this;
  }

  Block* owning_block() const { return owning_block_; }
  Graph* owning_graph() const { return graph_; }
  Node* next() const { return next_; }
  Node* prev() const { return prev_; }
  /// True while the node sits in a block's node list.
  bool in_block_list() const { return next_ != nullptr; }

  /// Links this (unlinked) node into n's block just before / after n.
  Node* insert_before(Node* n);
  Node* insert_after(Node* n);
  /// Moves this (linked) node before / after n.
  void move_before(Node* n);
  void move_after(Node* n);
  /// True if this node comes before n in the same block.
  bool is_before(const Node* n) const;
  /// Unlinks the node from its block (it stays owned by the graph).
  void remove_from_list();
  /// Unlinks, drops its inputs and frees the node and its blocks; its outputs must be unused.
  void destroy();

  /// True for nodes that must run even when their outputs are unused: printing, exceptions,
  /// in-place and out= ops (schema arguments written as `Tensor(a!)`), random ops.
  bool has_side_effects() const;
  /// True for "aten::" ops whose schema marks an argument as mutated.
  bool is_mutating() const;

 private:
  friend class Graph;
  friend class Block;
  friend class Value;
  Node(Graph* g, std::string kind) : graph_(g), kind_(std::move(kind)) {}
  void drop_input_uses();
  Graph* graph_;
  std::string kind_;
  const OperatorHandle* op_ = nullptr;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<Block*> blocks_;
  std::vector<std::pair<std::string, IValue>> attrs_;
  std::string source_location_;
  Block* owning_block_ = nullptr;
  Node* next_ = nullptr;
  Node* prev_ = nullptr;
};

/// A straight-line list of nodes with inputs (a Param node's outputs) and outputs (a Return
/// node's inputs). Iterate with `for (Node* n : block->nodes())`.
class Block {
 public:
  class Iterator {
   public:
    explicit Iterator(Node* n) : n_(n) {}
    Node* operator*() const { return n_; }
    Iterator& operator++() {
      n_ = n_->next();
      return *this;
    }
    bool operator!=(const Iterator& o) const { return n_ != o.n_; }

   private:
    Node* n_;
  };
  struct NodeRange {
    Node* first_;
    Node* last_;  // one past the end: the Return sentinel
    Iterator begin() const { return Iterator(first_); }
    Iterator end() const { return Iterator(last_); }
  };

  const std::vector<Value*>& inputs() const { return param_->outputs(); }
  const std::vector<Value*>& outputs() const { return return_->inputs(); }
  Value* add_input(const std::string& name = "", TypePtr type = Type::tensor_type());
  void erase_input(size_t i);
  size_t register_output(Value* v);
  void erase_output(size_t i) { return_->remove_input(i); }
  Node* param_node() const { return param_; }
  Node* return_node() const { return return_; }
  /// The nodes between the Param and Return sentinels, in order.
  NodeRange nodes() const { return {param_->next(), return_}; }
  /// The nodes in reverse order (safe against destroying the current node).
  std::vector<Node*> nodes_reversed() const;
  Node* append_node(Node* n) { return n->insert_before(return_); }
  Node* prepend_node(Node* n) { return n->insert_after(param_); }
  Graph* owning_graph() const { return graph_; }
  /// The node this block belongs to (prim::If, prim::Loop), nullptr for the graph's block.
  Node* owning_node() const { return owning_node_; }

 private:
  friend class Graph;
  friend class Node;
  Block(Graph* g, Node* owner);
  void destroy();
  Graph* graph_;
  Node* owning_node_;
  Node* param_;
  Node* return_;
};

/// A function body: the top block plus ownership of every node and value in it.
class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Block* block() const { return block_; }
  const std::vector<Value*>& inputs() const { return block_->inputs(); }
  const std::vector<Value*>& outputs() const { return block_->outputs(); }
  Value* add_input(const std::string& name = "", TypePtr type = Type::tensor_type()) {
    return block_->add_input(name, std::move(type));
  }
  size_t register_output(Value* v) { return block_->register_output(v); }
  Block::NodeRange nodes() const { return block_->nodes(); }

  /// A new, unlinked node with `num_outputs` Tensor outputs.
  Node* create(std::string kind, const std::vector<Value*>& inputs = {}, size_t num_outputs = 1);
  /// A new, unlinked node that calls `op` (kind "aten::<name>").
  Node* create_op(const OperatorHandle& op, const std::vector<Value*>& inputs, size_t num_outputs);
  /// Links n at the insertion point (by default the end of the top block).
  Node* insert_node(Node* n);
  /// Nodes inserted from now on go before `n` (or at the end of `b`).
  void set_insert_point(Node* n) { insert_before_ = n; }
  void set_insert_point(Block* b) { insert_before_ = b->return_node(); }
  Node* insert_point() const { return insert_before_; }
  /// Inserts a prim::Constant node at the insertion point and returns its output.
  Value* insert_constant(const IValue& v);

  /// The graph in PyTorch's text form; source locations as "# file:line" comments.
  std::string str(bool print_source_locations = true) const;
  /// Checks the invariants (uses match inputs, values defined before use, sentinels in
  /// place) and throws a retorch::Error naming the first broken one.
  void lint() const;
  /// A deep copy (attributes and types shared, values renumbered alike).
  std::unique_ptr<Graph> copy() const;
  /// Copies `src`'s nodes into this graph at the insertion point, mapping src inputs to
  /// `inputs`; returns the values that correspond to src's outputs.
  std::vector<Value*> insert_graph(const Graph& src, const std::vector<Value*>& inputs);

  size_t num_nodes() const { return all_nodes_.size(); }
  /// Gives the listed values the numbers they print as (%N), distinct, and every other value a
  /// fresh number above them (the parser's: parse(print(g)) prints like g).
  void assign_uniques(const std::vector<std::pair<Value*, size_t>>& numbers);

 private:
  friend class Value;
  friend class Node;
  friend class Block;
  Value* new_value(Node* n, size_t offset, TypePtr type);
  void free_node(Node* n);
  void free_value(Value* v);
  Block* block_;
  Node* insert_before_;
  size_t next_unique_ = 0;
  std::unordered_set<Node*> all_nodes_;
  std::unordered_set<Value*> all_values_;
  std::unordered_set<Block*> all_blocks_;
  std::unordered_map<std::string, Value*> names_;  // debug name -> value
};

std::ostream& operator<<(std::ostream& os, const Graph& g);
std::ostream& operator<<(std::ostream& os, const Node& n);

/// The constant a prim::Constant node holds (None when it has no "value" attribute).
IValue constant_value(const Node* n);
/// The constant behind v if v is a prim::Constant's output.
std::optional<IValue> to_constant(const Value* v);

/// Formats a constant like PyTorch's printer: 1, 1., "cpu", [1, 2], {0.5} (a 0-d tensor).
std::string constant_str(const IValue& v);

/// Copies the nodes of `src` into block `dst` before `insert_before`, mapping values through
/// `env` (entries for src's inputs must be present; new ones are added).
void clone_nodes_into(const Block& src, Block* dst, Node* insert_before,
                      std::unordered_map<const Value*, Value*>& env);

}  // namespace retorch::jit
