// The JIT interpreter (Note [Interpreter]): graph -> flat instructions, then a register machine.
#include "retorch/jit/Interpreter.h"

#include <algorithm>
#include <iostream>
#include <sstream>
#include <unordered_map>

#include "retorch/jit/PrimOps.h"
#include "retorch/jit/Schema.h"

namespace retorch::jit {

namespace {

enum class OpCode : uint8_t {
  kCall,         // operands -> op->call_boxed -> outs
  kGetAttr,      // attrs[target] -> outs[0]
  kList,         // operands -> one list (list_kind) -> outs[0]
  kUnpack,       // operands[0] (a list) -> outs
  kMove,         // operands -> outs (a parallel copy: all read before any is written)
  kDrop,         // regs[target] = None
  kJump,         // pc = target
  kJumpIfFalse,  // if !operands[0]: pc = target
  kLoopTest,     // outs = {trip, max, cond, body_i}: continue (body_i = trip++) or pc = target
  kPrint,
  kRaise,
  kPrim,  // operands -> prim (a PrimFn on numbers) -> outs
  kCustom,  // operands -> custom[target] (a NodeFn) -> outs
};

enum class ListKind : uint8_t { kTensor, kOptionalTensor, kInt, kFloat };

// A register (>= 0) or a constant (-1 - index); `move` on a register's last use.
struct Operand {
  int32_t idx;
  bool move;
};

struct Instr {
  OpCode code;
  ListKind list_kind = ListKind::kTensor;
  uint32_t in_begin = 0, in_count = 0;
  uint32_t out_begin = 0, out_count = 0;
  int32_t target = 0;
  const OperatorHandle* op = nullptr;
  PrimFn prim = nullptr;
  uint32_t node = 0;  // index into Code::where, for error messages
};

bool truthy(const IValue& v) {
  if (v.is_bool()) return v.to_bool();
  if (v.is_int()) return v.to_int() != 0;
  if (v.is_double()) return v.to_double() != 0;
  if (v.is_tensor()) return v.to_tensor().item<bool>();
  RT_ERROR("jit interpreter: a condition must be a bool, got ", v.type_name());
}

}  // namespace

struct Interpreter::Code {
  std::vector<Instr> instrs;
  std::vector<Operand> operands;
  std::vector<int32_t> outs;  // registers; -1 discards the result
  std::vector<IValue> constants;
  std::vector<IValue> attrs;
  std::vector<NodeFn> custom;
  std::vector<std::string> where;  // "aten::add (model.py:3:0)" per compiled node
  std::vector<int32_t> inputs;     // graph input registers (-1: unused)
  std::vector<Operand> returns;
  size_t num_regs = 0;
  size_t max_stack = 0;
};

namespace {

// Compiles one graph; see Note [Interpreter].
class Compiler {
 public:
  Compiler(Interpreter::Code& c, const AttributeTable& attrs, const CustomNodes& custom)
      : c_(c), custom_(custom) {
    for (size_t i = 0; i < attrs.size(); ++i) {
      attr_index_.emplace(attrs[i].first, int32_t(i));
      c_.attrs.push_back(attrs[i].second);
    }
  }

  void compile(const Graph& g) {
    analyze_block(*g.block());
    for (Value* v : g.inputs()) c_.inputs.push_back(v->has_uses() ? reg(v) : -1);
    emit_block(*g.block());
    for (size_t i = 0; i < g.outputs().size(); ++i)
      c_.returns.push_back(operand(g.outputs()[i], g.block()->return_node(), i));
  }

 private:
  struct LastUse {
    const Node* at = nullptr;  // the node of v's own block containing the last use
    size_t pos = 0;
    bool nested = false;  // some use at `at` is inside its blocks
  };

  // Position of every node in its block and, per value, where its last use is.
  void analyze_block(const Block& b) {
    size_t pos = 0;
    for (const Node* n : b.nodes()) {
      pos_[n] = ++pos;
      for (const Block* sub : n->blocks()) analyze_block(*sub);
    }
    pos_[b.return_node()] = ++pos;
    auto visit = [&](const Value* v) {
      const Block* def = v->node()->owning_block();
      LastUse lu;
      for (const Use& u : v->uses()) {
        const Node* n = u.user;
        bool nested = false;
        while (n->owning_block() != def) {
          const Node* owner = n->owning_block()->owning_node();
          if (owner == nullptr) break;  // malformed: lint reports it
          n = owner;
          nested = true;
        }
        size_t p = pos_.count(n) ? pos_[n] : 0;
        if (lu.at == nullptr || p > lu.pos)
          lu = {n, p, nested};
        else if (p == lu.pos)
          lu.nested = lu.nested || nested;
      }
      last_[v] = lu;
    };
    for (const Value* v : b.inputs()) visit(v);
    for (const Node* n : b.nodes())
      for (const Value* v : n->outputs()) visit(v);
  }

  int32_t reg(const Value* v) {
    auto it = regs_.find(v);
    if (it != regs_.end()) return it->second;
    int32_t r = new_reg();
    regs_.emplace(v, r);
    return r;
  }
  int32_t new_reg() { return int32_t(c_.num_regs++); }
  int32_t constant(IValue v) {
    c_.constants.push_back(std::move(v));
    return -1 - int32_t(c_.constants.size() - 1);
  }

  // The operand for input `offset` of `user`.
  Operand operand(const Value* v, const Node* user, size_t offset) {
    if (auto k = to_constant(v)) return {constant(*k), false};
    int32_t r = reg(v);
    auto it = last_.find(v);
    bool move = it != last_.end() && it->second.at == user && !it->second.nested;
    // Only the last occurrence among the user's inputs may move.
    for (size_t j = offset + 1; move && j < user->inputs().size(); ++j)
      if (user->inputs()[j] == v) move = false;
    return {r, move};
  }

  Instr& emit(OpCode code, const Node* n) {
    Instr in;
    in.code = code;
    in.in_begin = uint32_t(c_.operands.size());
    in.out_begin = uint32_t(c_.outs.size());
    if (n) {
      in.node = uint32_t(c_.where.size());
      std::string w = n->kind();
      if (!n->source_location().empty()) w += " (" + n->source_location() + ")";
      c_.where.push_back(std::move(w));
    }
    c_.instrs.push_back(in);
    return c_.instrs.back();
  }
  void add_in(Operand o) {
    c_.operands.push_back(o);
    ++c_.instrs.back().in_count;
  }
  void add_out(int32_t r) {
    c_.outs.push_back(r);
    ++c_.instrs.back().out_count;
  }
  void add_node_inputs(const Node* n) {
    for (size_t i = 0; i < n->inputs().size(); ++i) add_in(operand(n->input(i), n, i));
  }
  void add_node_outputs(const Node* n) {
    for (const Value* o : n->outputs()) add_out(o->has_uses() ? reg(o) : -1);
  }
  // A parallel move of `vals` (used at `user`, input offsets from `first`) into `dst`.
  void emit_move(const std::vector<Value*>& vals, const Node* user, size_t first,
                 const std::vector<int32_t>& dst) {
    if (vals.empty()) return;
    emit(OpCode::kMove, nullptr);
    for (size_t i = 0; i < vals.size(); ++i) add_in(operand(vals[i], user, first + i));
    for (int32_t r : dst) add_out(r);
  }

  [[noreturn]] void fail(const Node* n, const std::string& why) {
    RT_ERROR("jit interpreter: cannot compile ", n->kind(),
             n->source_location().empty() ? "" : " (" + n->source_location() + ")", ": ", why);
  }

  void emit_block(const Block& b) {
    for (const Node* n : b.nodes()) {
      emit_node(n);
      for (const Value* v : drops_after(n)) {
        emit(OpCode::kDrop, nullptr).target = reg(v);
      }
    }
  }

  std::vector<const Value*> drops_after(const Node* n) {
    std::vector<const Value*> r;
    // Values whose last use is nested inside n (an If or a Loop) die right after it.
    if (n->blocks().empty()) return r;
    std::vector<const Value*> cands;
    for (const Value* v : n->inputs()) cands.push_back(v);
    collect_free_values(n, cands);
    for (const Value* v : cands) {
      auto it = last_.find(v);
      if (it != last_.end() && it->second.at == n && it->second.nested && !to_constant(v) &&
          std::find(r.begin(), r.end(), v) == r.end())
        r.push_back(v);
    }
    return r;
  }
  static void collect_free_values(const Node* n, std::vector<const Value*>& out) {
    for (const Block* b : n->blocks()) {
      for (const Node* m : b->nodes()) {
        for (const Value* v : m->inputs()) out.push_back(v);
        collect_free_values(m, out);
      }
      for (const Value* v : b->outputs()) out.push_back(v);
    }
  }

  std::vector<int32_t> out_regs(const Node* n) {
    std::vector<int32_t> r;
    for (const Value* o : n->outputs()) r.push_back(reg(o));
    return r;
  }
  void emit_node(const Node* n) {
    const std::string& k = n->kind();
    if (k == kind::kConstant) return;  // read from the constant table at each use
    if (k == kind::kIf) return emit_if(n);
    if (k == kind::kLoop) return emit_loop(n);
    if (!n->blocks().empty()) fail(n, "nodes with blocks other than prim::If/prim::Loop");
    if (k == kind::kGetAttr) {
      if (!n->has_attr("name") || !n->attr("name").is_string()) fail(n, "no name attribute");
      auto it = attr_index_.find(n->attr("name").to_string());
      if (it == attr_index_.end())
        fail(n, "the module has no attribute '" + n->attr("name").to_string() + "'");
      emit(OpCode::kGetAttr, n).target = it->second;
      add_node_outputs(n);
      return;
    }
    if (k == kind::kListConstruct || k == kind::kTupleConstruct) {
      if (n->outputs().size() != 1) fail(n, "expected one output");
      ListKind lk = ListKind::kTensor;
      if (k == kind::kListConstruct) {
        const Type& t = *n->output()->type();
        if (t.kind() != TypeKind::kList) fail(n, "its output is not typed as a list");
        const Type& e = *t.elem();
        if (e.is_tensor())
          lk = ListKind::kTensor;
        else if (e.kind() == TypeKind::kOptional && e.elem()->is_tensor())
          lk = ListKind::kOptionalTensor;
        else if (e.kind() == TypeKind::kInt)
          lk = ListKind::kInt;
        else if (e.kind() == TypeKind::kFloat)
          lk = ListKind::kFloat;
        else
          fail(n, "lists of " + e.str() + " are not supported");
      } else {
        for (const Value* v : n->inputs())
          if (!v->type()->is_tensor())
            fail(n,
                 "tuples are tensor lists here; element %" + v->name() + " is " + v->type()->str());
      }
      emit(OpCode::kList, n).list_kind = lk;
      add_node_inputs(n);
      add_node_outputs(n);
      return;
    }
    if (k == kind::kListUnpack || k == kind::kTupleUnpack) {
      if (n->inputs().size() != 1) fail(n, "expected one input");
      emit(OpCode::kUnpack, n);
      add_node_inputs(n);
      add_node_outputs(n);
      return;
    }
    if (k == kind::kPrint || k == kind::kRaiseException) {
      emit(k == kind::kPrint ? OpCode::kPrint : OpCode::kRaise, n);
      add_node_inputs(n);
      return;
    }
    if (PrimFn f = find_prim_op(k)) {
      emit(OpCode::kPrim, n).prim = f;
      add_node_inputs(n);
      add_node_outputs(n);
      c_.max_stack = std::max(c_.max_stack, n->inputs().size() + n->outputs().size());
      return;
    }
    if (custom_) {
      if (NodeFn f = custom_(*n)) {
        emit(OpCode::kCustom, n).target = int32_t(c_.custom.size());
        c_.custom.push_back(std::move(f));
        add_node_inputs(n);
        add_node_outputs(n);
        c_.max_stack = std::max(c_.max_stack, n->inputs().size() + n->outputs().size());
        return;
      }
    }
    if (k.rfind("aten::", 0) != 0) fail(n, "unknown node kind");
    const OperatorHandle* op = n->op();
    if (op == nullptr) fail(n, "the node has no resolved operator");
    const FunctionSchema& s = schema_of(*op);
    size_t nargs = size_t(op->schema().num_args);
    if (n->inputs().size() > nargs)
      fail(n, "takes " + std::to_string(nargs) + " arguments but the node has " +
                  std::to_string(n->inputs().size()));
    if (n->outputs().size() != size_t(op->schema().num_returns))
      fail(n, "returns " + std::to_string(op->schema().num_returns) + " values but the node has " +
                  std::to_string(n->outputs().size()) + " outputs");
    Instr& in = emit(OpCode::kCall, n);
    in.op = op;
    add_node_inputs(n);
    for (size_t i = n->inputs().size(); i < nargs; ++i) {
      if (!s.args[i].default_value) fail(n, "argument '" + s.args[i].name + "' is missing");
      add_in({constant(default_value(s.args[i])), false});
    }
    add_node_outputs(n);
    c_.max_stack = std::max(c_.max_stack, nargs + n->outputs().size());
  }

  void emit_if(const Node* n) {
    if (n->inputs().size() != 1 || n->blocks().size() != 2)
      fail(n, "expected one condition input and two blocks");
    for (const Block* b : n->blocks())
      if (b->outputs().size() != n->outputs().size())
        fail(n, "a block returns " + std::to_string(b->outputs().size()) + " values for " +
                    std::to_string(n->outputs().size()) + " outputs");
    size_t jf = c_.instrs.size();
    emit(OpCode::kJumpIfFalse, n);
    add_in(operand(n->input(0), n, 0));
    std::vector<int32_t> outs = out_regs(n);
    emit_block(*n->blocks()[0]);
    emit_move(n->blocks()[0]->outputs(), n->blocks()[0]->return_node(), 0, outs);
    size_t jend = c_.instrs.size();
    emit(OpCode::kJump, nullptr);
    c_.instrs[jf].target = int32_t(c_.instrs.size());
    emit_block(*n->blocks()[1]);
    emit_move(n->blocks()[1]->outputs(), n->blocks()[1]->return_node(), 0, outs);
    c_.instrs[jend].target = int32_t(c_.instrs.size());
  }

  void emit_loop(const Node* n) {
    if (n->inputs().size() < 2 || n->blocks().size() != 1)
      fail(n, "expected (%max_trip_count, %initial_cond, %carried...) and one block");
    const Block& body = *n->blocks()[0];
    size_t carried = n->inputs().size() - 2;
    if (body.inputs().size() != carried + 1 || body.outputs().size() != carried + 1 ||
        n->outputs().size() != carried)
      fail(n, "the body must be (%i, carried...) -> (%cond, carried...) with " +
                  std::to_string(carried) + " carried values");
    int32_t trip = new_reg(), max = new_reg(), cond = new_reg();
    std::vector<int32_t> outs = out_regs(n);
    // max, cond, carried -> registers; trip = 0.
    std::vector<int32_t> init = {max, cond};
    init.insert(init.end(), outs.begin(), outs.end());
    emit_move(n->inputs(), n, 0, init);
    emit(OpCode::kMove, nullptr);
    add_in({constant(IValue(int64_t(0))), false});
    add_out(trip);
    size_t head = c_.instrs.size();
    emit(OpCode::kLoopTest, n);
    add_out(trip);
    add_out(max);
    add_out(cond);
    add_out(reg(body.inputs()[0]));
    // The carried values enter the body (the output registers are refilled at its end).
    if (carried > 0) {
      emit(OpCode::kMove, nullptr);
      for (int32_t r : outs) add_in({r, true});
      for (size_t i = 1; i < body.inputs().size(); ++i) add_out(reg(body.inputs()[i]));
    }
    emit_block(body);
    std::vector<int32_t> back = {cond};
    back.insert(back.end(), outs.begin(), outs.end());
    emit_move(body.outputs(), body.return_node(), 0, back);
    emit(OpCode::kJump, nullptr).target = int32_t(head);
    c_.instrs[head].target = int32_t(c_.instrs.size());
  }

  Interpreter::Code& c_;
  const CustomNodes& custom_;
  std::unordered_map<std::string, int32_t> attr_index_;
  std::unordered_map<const Value*, int32_t> regs_;
  std::unordered_map<const Node*, size_t> pos_;
  std::unordered_map<const Value*, LastUse> last_;
};

}  // namespace

Interpreter::Interpreter(const Graph& graph, AttributeTable attributes, const CustomNodes& custom)
    : code_(std::make_unique<Code>()) {
  Compiler(*code_, attributes, custom).compile(graph);
}
Interpreter::~Interpreter() = default;
Interpreter::Interpreter(Interpreter&&) noexcept = default;
Interpreter& Interpreter::operator=(Interpreter&&) noexcept = default;

size_t Interpreter::num_inputs() const {
  return code_->inputs.size();
}
size_t Interpreter::num_outputs() const {
  return code_->returns.size();
}
size_t Interpreter::num_instructions() const {
  return code_->instrs.size();
}

namespace {

IValue make_list(ListKind k, Stack& s) {
  switch (k) {
    case ListKind::kTensor: {
      std::vector<Tensor> l;
      l.reserve(s.size());
      for (IValue& v : s) l.push_back(std::move(v.to_tensor()));
      return IValue(std::move(l));
    }
    case ListKind::kOptionalTensor: {
      std::vector<std::optional<Tensor>> l;
      for (IValue& v : s)
        l.push_back(v.is_none() ? std::nullopt : std::optional<Tensor>(v.to_tensor()));
      return IValue(std::move(l));
    }
    case ListKind::kInt: {
      std::vector<int64_t> l;
      for (IValue& v : s) l.push_back(v.to_int());
      return IValue(std::move(l));
    }
    case ListKind::kFloat: {
      std::vector<double> l;
      for (IValue& v : s) l.push_back(v.to_double());
      return IValue(std::move(l));
    }
  }
  return IValue();
}

void unpack(const IValue& list, Stack& out) {
  const auto& p = list.payload();
  if (auto* l = std::get_if<std::vector<Tensor>>(&p)) {
    for (const Tensor& t : *l) out.emplace_back(t);
  } else if (auto* l = std::get_if<std::vector<int64_t>>(&p)) {
    for (int64_t i : *l) out.emplace_back(i);
  } else if (auto* l = std::get_if<std::vector<double>>(&p)) {
    for (double d : *l) out.emplace_back(d);
  } else if (auto* l = std::get_if<std::vector<std::optional<Tensor>>>(&p)) {
    for (const auto& t : *l) out.emplace_back(t);
  } else {
    RT_ERROR("jit interpreter: cannot unpack a ", list.type_name());
  }
}

}  // namespace

std::vector<IValue> Interpreter::run(const std::vector<IValue>& inputs) const {
  const Code& c = *code_;
  RT_CHECK(inputs.size() == c.inputs.size(), "jit interpreter: the graph takes ", c.inputs.size(),
           " inputs but ", inputs.size(), " were given");
  std::vector<IValue> regs(c.num_regs);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (c.inputs[i] >= 0) regs[size_t(c.inputs[i])] = inputs[i];
  Stack stack;
  stack.reserve(c.max_stack);
  auto push = [&](const Operand& o) {
    if (o.idx < 0)
      stack.push_back(c.constants[size_t(-1 - o.idx)]);
    else if (o.move)
      stack.push_back(std::move(regs[size_t(o.idx)]));
    else
      stack.push_back(regs[size_t(o.idx)]);
  };
  auto read = [&](const Operand& o) -> const IValue& {
    return o.idx < 0 ? c.constants[size_t(-1 - o.idx)] : regs[size_t(o.idx)];
  };
  auto store_outs = [&](const Instr& in) {
    RT_CHECK(stack.size() == in.out_count, "jit interpreter: ", c.where[in.node], " produced ",
             stack.size(), " values for ", in.out_count, " outputs");
    for (uint32_t k = 0; k < in.out_count; ++k) {
      int32_t r = c.outs[in.out_begin + k];
      if (r >= 0) regs[size_t(r)] = std::move(stack[k]);
    }
    stack.clear();
  };
  const Operand* ops = c.operands.data();
  // Pushes the operands, runs f on the stack (naming the node in any error), stores the results.
  auto call = [&](const Instr& in, const auto& f) {
    for (uint32_t k = 0; k < in.in_count; ++k) push(ops[in.in_begin + k]);
    try {
      f();
    } catch (const Error& e) {
      throw Error(e.kind(), e.message() + "\n  (jit: while running " + c.where[in.node] + ")");
    }
    store_outs(in);
  };
  size_t pc = 0, end = c.instrs.size();
  while (pc < end) {
    const Instr& in = c.instrs[pc++];
    switch (in.code) {
      case OpCode::kCall:
        call(in, [&] { in.op->call_boxed(&stack); });
        break;
      case OpCode::kPrim:
        call(in, [&] { in.prim(stack); });
        break;
      case OpCode::kCustom:
        call(in, [&] { c.custom[size_t(in.target)](stack); });
        break;
      case OpCode::kGetAttr:
        if (c.outs[in.out_begin] >= 0)
          regs[size_t(c.outs[in.out_begin])] = c.attrs[size_t(in.target)];
        break;
      case OpCode::kList:
        for (uint32_t k = 0; k < in.in_count; ++k) push(ops[in.in_begin + k]);
        {
          IValue l = make_list(in.list_kind, stack);
          stack.clear();
          stack.push_back(std::move(l));
        }
        store_outs(in);
        break;
      case OpCode::kUnpack: {
        push(ops[in.in_begin]);
        IValue l = std::move(stack.back());
        stack.clear();
        unpack(l, stack);
        store_outs(in);
        break;
      }
      case OpCode::kMove:
        for (uint32_t k = 0; k < in.in_count; ++k) push(ops[in.in_begin + k]);
        for (uint32_t k = 0; k < in.out_count; ++k)
          regs[size_t(c.outs[in.out_begin + k])] = std::move(stack[k]);
        stack.clear();
        break;
      case OpCode::kDrop:
        regs[size_t(in.target)] = IValue();
        break;
      case OpCode::kJump:
        pc = size_t(in.target);
        break;
      case OpCode::kJumpIfFalse:
        if (!truthy(read(ops[in.in_begin]))) pc = size_t(in.target);
        break;
      case OpCode::kLoopTest: {
        const int32_t* o = &c.outs[in.out_begin];
        IValue& trip = regs[size_t(o[0])];
        int64_t t = trip.to_int();
        if (t < regs[size_t(o[1])].to_int() && truthy(regs[size_t(o[2])])) {
          regs[size_t(o[3])] = IValue(t);
          trip = IValue(t + 1);
        } else {
          pc = size_t(in.target);
        }
        break;
      }
      case OpCode::kPrint: {
        std::ostringstream os;
        for (uint32_t k = 0; k < in.in_count; ++k)
          os << (k ? " " : "") << read(ops[in.in_begin + k]);
        std::cout << os.str() << std::endl;
        break;
      }
      case OpCode::kRaise: {
        std::string msg = in.in_count > 0 && read(ops[in.in_begin]).is_string()
                              ? read(ops[in.in_begin]).to_string()
                              : std::string("Exception");
        RT_ERROR("jit: ", msg, " (raised by ", c.where[in.node], ")");
      }
    }
  }
  std::vector<IValue> result;
  result.reserve(c.returns.size());
  for (const Operand& o : c.returns) {
    if (o.idx < 0)
      result.push_back(c.constants[size_t(-1 - o.idx)]);
    else if (o.move)
      result.push_back(std::move(regs[size_t(o.idx)]));
    else
      result.push_back(regs[size_t(o.idx)]);
  }
  return result;
}

std::string Interpreter::dump() const {
  static const char* names[] = {"CALL", "GETATTR", "LIST",     "UNPACK", "MOVE", "DROP",
                                "JUMP", "JUMPF",   "LOOPTEST", "PRINT",  "RAISE", "PRIM",   "CUSTOM"};
  std::ostringstream os;
  const Code& c = *code_;
  for (size_t i = 0; i < c.instrs.size(); ++i) {
    const Instr& in = c.instrs[i];
    os << i << ": " << names[int(in.code)];
    if (in.op) os << " " << in.op->qualified_name();
    for (uint32_t k = 0; k < in.in_count; ++k) {
      const Operand& o = c.operands[in.in_begin + k];
      if (o.idx < 0)
        os << " $" << constant_str(c.constants[size_t(-1 - o.idx)]);
      else
        os << (o.move ? " mv r" : " r") << o.idx;
    }
    if (in.out_count) os << " ->";
    for (uint32_t k = 0; k < in.out_count; ++k) os << " r" << c.outs[in.out_begin + k];
    if (in.code == OpCode::kJump || in.code == OpCode::kJumpIfFalse ||
        in.code == OpCode::kLoopTest || in.code == OpCode::kDrop || in.code == OpCode::kGetAttr)
      os << " @" << in.target;
    os << "\n";
  }
  return os.str();
}

}  // namespace retorch::jit
