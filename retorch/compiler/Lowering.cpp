// Lowering and scheduling: groups the lowerable pointwise nodes of a graph into kernels (loop IR)
// and rewrites the graph to call them, leaving everything else to eager kernels.
#include <algorithm>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "retorch/compiler/Backward.h"
#include "retorch/compiler/LoopIR.h"
#include "retorch/compiler/RowOps.h"
#include "retorch/core/Error.h"

namespace retorch::compiler {

// Note [Lowering]
// A node lowers when it is a pointwise op of the emitter table (PointwiseRules.cpp), its output
// and tensor inputs have complete types (the tracer records them) of a lowerable dtype, and its
// non-tensor arguments are constants; or when it is a row op (RowOps.h: a reduction over
// trailing dims, softmax, log_softmax, layer_norm, rms_norm, var). Scheduling walks the graph in
// order. A pointwise node joins the open group of its output's shape (vertical fusion of chains
// and horizontal fusion of independent loops over the same range alike), or, when its shape is
// the per-row shape of an open row group (with or without keepdim's 1s) and it reads only row
// values of that group, joins it as a row node (an epilogue); else it opens a group. A row op
// turns the group that produces its input (same shape; no other reduced dims) into a row group,
// or opens one; so `x - x.amax(-1, keepdim=True)`, its exp, their sum and the division are one
// kernel, and so is layer_norm followed by gelu and a residual add. An element node may read a
// row value only in keepdim form (it broadcasts along the row). A softmax, log_softmax or
// layer_norm left alone in its group runs eagerly: eager's kernel is the same fused row loop
// (measured: a kernel of its own was no faster). Any other node is an extern (an
// eager kernel through the dispatcher). An extern that reads none of an open group's values and
// has no side effects is scheduled before the group's kernel (so a view or a matmul between two
// pointwise ops does not split them); otherwise the group is closed first. A closed group
// becomes one kernel whose inputs are the tensors it reads from outside and whose outputs are
// the values used after it (or returned); values used only inside stay in registers. Several
// groups may be open at once, one per iteration space (a [64, 33] chain next to ops on its
// broadcast [33] row): a node that reads a value of another open group closes that group first,
// so kernels run in dependency order. Views are not lowered: an eager view costs no copy, and
// the kernel reads its result through the view's strides.

namespace {

// Whether `in` broadcasts to `out` (right-aligned, each dim equal or 1).
bool broadcasts_to(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  if (in.size() > out.size()) return false;
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t a = in[in.size() - 1 - i], b = out[out.size() - 1 - i];
    if (a != b && a != 1) return false;
  }
  return true;
}

// Whether the strides lay the sizes out densely without overlap (a permutation of contiguous).
bool dense_strides(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  std::vector<size_t> perm;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] != 1) perm.push_back(i);
  std::sort(perm.begin(), perm.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t expect = 1;
  for (size_t i : perm) {
    if (strides[i] != expect) return false;
    expect *= sizes[i];
  }
  return true;
}


// Whether n can be part of a kernel (independently of any group).
bool lowerable(const jit::Node* n) {
  if (n->op() == nullptr || !n->blocks().empty() || n->outputs().size() != 1 ||
      n->has_side_effects())
    return false;
  if (!find_pointwise_rule(op_key(n))) return false;
  const jit::TensorInfo* out = complete_tensor(n->output());
  if (!out) return false;
  std::vector<int64_t> osz = sizes_of(*out);
  for (const jit::Value* v : n->inputs()) {
    if (v->type()->is_tensor()) {
      if (jit::to_constant(v)) {
        IValue c = *jit::to_constant(v);
        if (!c.is_tensor() || c.to_tensor().dim() != 0) return false;  // folded to a number
        continue;
      }
      const jit::TensorInfo* info = complete_tensor(v);
      if (!info || !broadcasts_to(sizes_of(*info), osz)) return false;
    } else if (!jit::to_constant(v)) {
      return false;  // a non-tensor argument computed at run time
    }
  }
  return true;
}


struct Group {
  std::vector<const jit::Node*> nodes;
  std::unordered_set<const jit::Value*> produced;
  std::unordered_set<const jit::Value*> row_values;  // one value per row (row groups)
  std::vector<int64_t> sizes;  // the iteration space (a row group's: its rows' input shape)
  size_t reduce_dims = 0;      // a row group: its trailing dims are the row

  // Whether s is the per-row shape: the kept dims, with or without the row dims as 1s.
  bool row_shape(const std::vector<int64_t>& s) const {
    if (reduce_dims == 0) return false;
    const size_t nout = sizes.size() - reduce_dims;
    if (s.size() != nout && s.size() != sizes.size()) return false;
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] != (d < nout ? sizes[d] : 1)) return false;
    return true;
  }
  // Whether the pointwise node n (of shape sz) can join: an element node reads row values in
  // keepdim form only; a row node reads only row values.
  bool accepts(const jit::Node* n, const std::vector<int64_t>& sz) const {
    const bool element = sz == sizes;
    if (!element && !row_shape(sz)) return false;
    for (const jit::Value* v : n->inputs()) {
      if (!produced.count(v)) continue;
      const bool row = row_values.count(v) > 0;
      if (element ? row && v->type()->tensor().sizes->size() != sizes.size() : !row) return false;
    }
    return true;
  }
};

// One item of the schedule: an extern node or a group (kernel).
struct Item {
  const jit::Node* node = nullptr;
  size_t group = 0;
};

jit::Node* clone_node(jit::Graph& dst, const jit::Node* n,
                      std::unordered_map<const jit::Value*, jit::Value*>& env) {
  std::vector<jit::Value*> ins;
  for (const jit::Value* v : n->inputs()) ins.push_back(env.at(v));
  jit::Node* c = dst.create(n->kind(), ins, 0);
  c->set_op(n->op());
  for (const auto& [k, v] : n->attrs()) c->set_attr(k, v);
  c->set_source_location(n->source_location());
  for (const jit::Value* o : n->outputs()) {
    jit::Value* co = c->add_output(o->type());
    if (o->has_debug_name()) co->set_debug_name(o->debug_name());
    env[o] = co;
  }
  for (const jit::Block* b : n->blocks()) {
    jit::Block* cb = c->add_block();
    for (jit::Value* in : b->inputs()) env[in] = cb->add_input(in->debug_name(), in->type());
    jit::clone_nodes_into(*b, cb, cb->return_node(), env);
    for (jit::Value* out : b->outputs()) cb->register_output(env.at(out));
  }
  return c;
}

class Lowerer {
 public:
  Lowerer(const jit::Graph& g, const LoweringOptions& o) : g_(g), opts_(o) {}

  LoweredGraph run() {
    schedule();
    LoweredGraph lg;
    lg.graph = std::make_shared<jit::Graph>();
    jit::Graph& out = *lg.graph;
    std::unordered_map<const jit::Value*, jit::Value*> env;
    for (const jit::Value* in : g_.inputs()) env[in] = out.add_input(in->debug_name(), in->type());
    for (const Item& it : order_) {
      if (it.node) {
        out.insert_node(clone_node(out, it.node, env));
        continue;
      }
      Kernel k = make_kernel(groups_[it.group], lg.kernels.size());
      jit::Node* call = out.create(std::string(kCppKernel), {}, 0);
      call->set_attr("index", IValue(int64_t(lg.kernels.size())));
      call->set_attr("name", IValue(k.name));
      for (const jit::Value* v : kernel_inputs_) call->add_input(env.at(v));
      for (const jit::Value* v : kernel_outputs_) {
        jit::Value* o = call->add_output(v->type());
        if (v->has_debug_name()) o->set_debug_name(v->debug_name());
        env[v] = o;
      }
      out.insert_node(call);
      lg.kernels.push_back(std::move(k));
    }
    for (const jit::Value* v : g_.outputs()) out.register_output(env.at(v));
    return lg;
  }

 private:
  void schedule() {
    // Open groups, one per iteration space; see Note [Lowering].
    std::vector<std::unique_ptr<Group>> open;
    auto close = [&](size_t i) {
      const Group& g = *open[i];
      std::optional<RowOp> alone = g.nodes.size() == 1 ? as_row_op(g.nodes[0]) : std::nullopt;
      if (alone && (alone->kind == "softmax" || alone->kind == "log_softmax" ||
                    alone->kind == "layer_norm")) {
        // Alone, these gain nothing from a kernel: eager's is the same fused row loop.
        order_.push_back({g.nodes[0], 0});
      } else {
        groups_.push_back(std::move(*open[i]));
        order_.push_back({nullptr, groups_.size() - 1});
      }
      open.erase(open.begin() + std::ptrdiff_t(i));
    };
    auto reads = [](const jit::Node* n, const Group& g) {
      for (const jit::Value* v : n->inputs())
        if (g.produced.count(v)) return true;
      return false;
    };
    auto join = [&](Group* home, const jit::Node* n, std::vector<int64_t> sz) -> Group* {
      if (!home) {
        open.push_back(std::make_unique<Group>());
        home = open.back().get();
        home->sizes = std::move(sz);
      }
      home->nodes.push_back(n);
      home->produced.insert(n->output());
      return home;
    };
    for (const jit::Node* n : g_.nodes()) {
      if (std::optional<RowOp> op = as_row_op(n)) {
        // The newest group over the op's input shape (the one producing its input, or one
        // it fuses with horizontally) becomes (or already is) its row group.
        const jit::Value* v = n->input(0);
        std::vector<int64_t> sz = sizes_of(v->type()->tensor());
        Group* home = nullptr;
        for (size_t i = open.size(); i-- > 0;) {
          Group& g = *open[i];
          bool other_reads = false;
          for (size_t j = 1; j < n->inputs().size(); ++j)
            other_reads |= g.produced.count(n->input(j)) > 0;
          const bool produces = g.produced.count(v) > 0;
          if (!home && g.sizes == sz && !g.row_values.count(v) &&
              (g.reduce_dims == 0 || g.reduce_dims == op->dims) && !other_reads &&
              (produces || opts_.horizontal) && g.nodes.size() < opts_.max_fusion_size)
            home = &g;
          else if (reads(n, g))
            close(i);
        }
        home = join(home, n, sz);
        home->reduce_dims = op->dims;
        if (!op->keeps_shape) home->row_values.insert(n->output());
        continue;
      }
      if (lowerable(n)) {
        std::vector<int64_t> sz = sizes_of(n->output()->type()->tensor());
        // The newest group taking this node, preferring one whose values it reads; a value of
        // another open group is read: that group's kernel runs first.
        Group* home = nullptr;
        for (int pass = 0; pass < 2 && !home; ++pass)
          for (size_t i = open.size(); i-- > 0 && !home;) {
            Group& g = *open[i];
            const bool full = g.nodes.size() >= opts_.max_fusion_size;
            if (g.accepts(n, sz) && !full && (reads(n, g) || (pass == 1 && opts_.horizontal)))
              home = &g;
          }
        for (size_t i = open.size(); i-- > 0;)
          if (open[i].get() != home && reads(n, *open[i])) {
            close(i);
          }
        home = join(home, n, sz);
        if (home->row_shape(sz)) home->row_values.insert(n->output());
        continue;
      }
      const bool barrier = n->has_side_effects() || !n->blocks().empty();
      for (size_t i = open.size(); i-- > 0;)
        if (barrier || reads(n, *open[i])) close(i);
      order_.push_back({n, 0});
    }
    while (!open.empty()) close(0);
  }

  // Lowers one group; sets kernel_inputs_/kernel_outputs_ (graph values) alongside.
  Kernel make_kernel(const Group& grp, size_t index) {
    Kernel k;
    k.sizes = grp.sizes;
    k.reduce_dims = grp.reduce_dims;
    const size_t nout = k.sizes.size() - k.reduce_dims;
    kernel_inputs_.clear();
    kernel_outputs_.clear();
    BodyBuilder body(k);
    std::unordered_set<const jit::Node*> in_group(grp.nodes.begin(), grp.nodes.end());
    std::unordered_map<const jit::Value*, Operand> vals;  // the group's values (registers)
    // Kernel inputs by phase: read per element (0) or once per row (1).
    std::unordered_map<const jit::Value*, Operand> loads[2];
    std::set<std::string> names;
    for (const jit::Node* n : grp.nodes) {
      std::ostringstream os;
      os << *n;
      std::string line = os.str();
      while (!line.empty() && line.back() == '\n') line.pop_back();
      k.origins.push_back(line);
      names.insert(std::string(n->op()->schema().name));
      const std::optional<RowOp> rop = as_row_op(n);
      const std::vector<int64_t> sz = sizes_of(n->output()->type()->tensor());
      const bool row = !rop && grp.row_shape(sz);
      std::vector<Operand> args;
      for (const jit::Value* v : n->inputs()) {
        if (!v->type()->is_tensor() || jit::to_constant(v)) {
          IValue c = *jit::to_constant(v);
          if (c.is_tensor()) {
            Tensor t = c.to_tensor();
            c = is_floating_type(t.dtype()) ? IValue(t.item<double>())
                : t.dtype() == kBool        ? IValue(t.item<bool>())
                                            : IValue(t.item<int64_t>());
          }
          args.push_back(Operand{false, "", "", kFloat, c});
          continue;
        }
        if (auto it = vals.find(v); it != vals.end()) {
          args.push_back(it->second);
          continue;
        }
        auto it = loads[row].find(v);
        if (it == loads[row].end()) {  // a new kernel input
          const jit::TensorInfo& info = v->type()->tensor();
          KernelArg a{*info.dtype, sizes_of(info), *info.strides, {}, row};
          a.loop_strides = aligned_strides(a.sizes, a.strides, row ? sz : k.sizes);
          a.loop_strides.resize(row ? nout : k.sizes.size());
          k.inputs.push_back(std::move(a));
          k.input_ctypes.push_back(compute_ctype(*info.dtype));
          kernel_inputs_.push_back(v);
          const size_t i = k.inputs.size() - 1;
          it = loads[row]
                   .emplace(v, Operand{true, "l" + std::to_string(i), k.input_ctypes.back(),
                                       *info.dtype, IValue()})
                   .first;
        }
        args.push_back(it->second);
      }
      const ScalarType out_dt = *n->output()->type()->tensor().dtype;
      Operand result;
      if (rop) {
        result = expand_row_op(*rop, args, compute_ctype(out_dt), body);
      } else {
        const PointwiseRule& rule = *find_pointwise_rule(op_key(n));
        std::string ct = compute_ctype(out_dt);
        if (rule.comparison) {
          std::optional<ScalarType> common;
          bool float_scalar = false;  // a float constant against integer tensors compares as float
          for (const Operand& a : args) {
            if (a.is_tensor) common = common ? promote_types(*common, a.dtype) : a.dtype;
            else float_scalar |= a.constant.is_double();
          }
          ScalarType dt = common.value_or(kFloat);
          if (float_scalar && !is_floating_type(dt)) dt = kFloat;
          ct = compute_ctype(dt);
        }
        if (rule.floating && ct != "float" && ct != "double") ct = "float";
        std::optional<std::string> e = rule.emit(args, ct);
        RT_CHECK(e.has_value(), "compile: internal error: ", op_key(n),
                 " was accepted but not emitted");
        std::string result_ct = rule.comparison ? "bool" : compute_ctype(out_dt);
        result = body.push(result_ct,
                           ct == result_ct ? *e : "static_cast<" + result_ct + ">(" + *e + ")",
                           row, args, out_dt);
        // The partials, for a backward kernel (Note [Compiled backward]).
        const GradFn* grad = find_pointwise_grad(op_key(n));
        std::optional<std::vector<std::string>> parts;
        if (grad) parts = (*grad)(args, result.expr, ct);
        if (parts) {
          for (size_t j = 0; j < args.size() && j < parts->size(); ++j)
            if (args[j].is_tensor && is_floating_type(args[j].dtype) && !(*parts)[j].empty())
              k.body.back().partials.emplace_back(args[j].expr, "(" + (*parts)[j] + ")");
        } else if (is_floating_type(out_dt)) {
          k.differentiable = false;
        }
      }
      result.dtype = out_dt;
      vals[n->output()] = result;
      // A value used after the group (or returned) is a kernel output.
      bool escapes = false;
      for (const jit::Use& u : n->output()->uses()) escapes |= !in_group.count(u.user);
      if (escapes) {
        const jit::TensorInfo& info = n->output()->type()->tensor();
        const bool row_out = grp.row_values.count(n->output()) > 0;
        KernelArg a{out_dt, sizes_of(info), *info.strides, {}, row_out};
        if (!dense_strides(a.sizes, a.strides)) a.strides = contiguous_strides(a.sizes);
        a.loop_strides = aligned_strides(a.sizes, a.strides, row_out ? a.sizes : k.sizes);
        a.loop_strides.resize(row_out ? nout : k.sizes.size());
        k.outputs.push_back(std::move(a));
        k.stores.push_back(std::stoul(result.expr.substr(1)));
        kernel_outputs_.push_back(n->output());
      }
    }
    k.name = "cpp_fused";
    size_t shown = 0;
    for (const std::string& nm : names)
      if (shown++ < 6) k.name += "_" + nm;
    k.name += "_" + std::to_string(index);
    k.fallback = fallback_graph(grp);
    k.backward = make_backward(k);
    return k;
  }

  // The group's nodes as a graph from the kernel inputs to the kernel outputs.
  std::shared_ptr<jit::Graph> fallback_graph(const Group& grp) {
    auto fg = std::make_shared<jit::Graph>();
    std::unordered_map<const jit::Value*, jit::Value*> env;
    for (const jit::Value* v : kernel_inputs_) env[v] = fg->add_input("", v->type());
    for (const jit::Node* n : grp.nodes) {
      for (const jit::Value* v : n->inputs())
        if (!env.count(v)) fg->insert_node(clone_node(*fg, v->node(), env));  // a constant
      fg->insert_node(clone_node(*fg, n, env));
    }
    for (const jit::Value* v : kernel_outputs_) fg->register_output(env.at(v));
    return fg;
  }

  const jit::Graph& g_;
  LoweringOptions opts_;
  std::vector<Group> groups_;
  std::vector<Item> order_;
  std::vector<const jit::Value*> kernel_inputs_, kernel_outputs_;
};

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

}  // namespace

LoweredGraph lower(const jit::Graph& g, const LoweringOptions& options) {
  return Lowerer(g, options).run();
}

std::string dump(const LoweredGraph& lg) {
  std::ostringstream os;
  for (const Kernel& k : lg.kernels) {
    os << k.name << " over [" << join(k.sizes) << "]";
    if (k.reduce_dims) os << ", rows of the last " << k.reduce_dims << " dims";
    os << "\n";
    auto per_row = [](bool row) { return row ? " (per row)" : ""; };
    for (size_t i = 0; i < k.inputs.size(); ++i)
      os << "  l" << i << " = load(in" << i << " : " << dtype_name(k.inputs[i].dtype) << "["
         << join(k.inputs[i].sizes) << "], strides=[" << join(k.inputs[i].strides) << "])"
         << per_row(k.inputs[i].row) << "\n";
    for (size_t j = 0; j < k.reductions.size(); ++j)
      os << "  r" << j << " : " << k.reductions[j].ctype << " = " << k.reductions[j].kind
         << " over the row of t" << k.reductions[j].value << "\n";
    for (size_t i = 0; i < k.body.size(); ++i)
      os << "  t" << i << " : " << k.body[i].ctype << " = " << k.body[i].expr
         << per_row(k.body[i].row) << "\n";
    for (size_t i = 0; i < k.outputs.size(); ++i)
      os << "  store(out" << i << " : " << dtype_name(k.outputs[i].dtype) << ", strides=["
         << join(k.outputs[i].strides) << "], t" << k.stores[i] << ")"
         << per_row(k.outputs[i].row) << "\n";
  }
  os << "wrapper:\n" << lg.graph->str(false);
  return os.str();
}

}  // namespace retorch::compiler
