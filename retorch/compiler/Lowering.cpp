// Lowering and scheduling: groups the lowerable pointwise nodes of a graph into kernels (loop IR)
// and rewrites the graph to call them, leaving everything else to eager kernels.
#include <algorithm>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "retorch/compiler/LoopIR.h"
#include "retorch/compiler/PointwiseRules.h"
#include "retorch/core/Error.h"

namespace retorch::compiler {

// Note [Lowering]
// A node lowers when it is a pointwise op of the emitter table (PointwiseRules.cpp), its output
// and tensor inputs have complete types (the tracer records them) of a lowerable dtype, and its
// non-tensor arguments are constants. Scheduling walks the graph in order:
// a lowerable node joins the open group of its output's shape (vertical fusion of chains and
// horizontal fusion of independent loops over the same range alike), else opens one. Any other node is an extern (an eager kernel through the dispatcher). An
// extern that reads none of the open group's values and has no side effects is scheduled before
// the group's kernel (so a view or a matmul between two pointwise ops does not split them);
// otherwise the group is closed first. A closed group becomes one kernel whose inputs are the
// tensors it reads from outside and whose outputs are the values used after it (or returned);
// values used only inside stay in registers. Several groups may be open at once, one per
// iteration space (a [64, 33] chain next to ops on its broadcast [33] row): a node that reads a
// value of another open group closes that group first, so kernels run in dependency order. Views are not lowered: an eager view costs no copy,
// and the kernel reads its result through the view's strides.

namespace {

std::string op_key(const jit::Node* n) {
  std::string k(n->op()->schema().name);
  if (!n->op()->schema().overload.empty()) k += "." + std::string(n->op()->schema().overload);
  return k;
}

bool lowerable_dtype(ScalarType t) {
  return t == kFloat || t == kDouble || t == kBFloat16 || t == kHalf || t == kBool || t == kLong;
}

// The C++ type values of dtype t are computed in (float accumulation for 16-bit floats).
std::string compute_ctype(ScalarType t) {
  switch (t) {
    case kDouble: return "double";
    case kBool: return "bool";
    case kLong: return "int64_t";
    default: return "float";
  }
}

const jit::TensorInfo* complete_tensor(const jit::Value* v) {
  const jit::Type& t = *v->type();
  if (!t.is_complete_tensor()) return nullptr;
  const jit::TensorInfo& info = t.tensor();
  if (!lowerable_dtype(*info.dtype) || !info.device->is_cpu()) return nullptr;
  return &info;
}

std::vector<int64_t> sizes_of(const jit::TensorInfo& info) {
  std::vector<int64_t> s;
  for (const auto& d : *info.sizes) s.push_back(*d);
  return s;
}

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

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(sizes.size(), 1);
  for (size_t i = sizes.size(); i-- > 1;) s[i - 1] = s[i] * std::max<int64_t>(sizes[i], 1);
  return s;
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

// A reduction the compiler lowers: sum/mean (dim list, no dtype) or amax over the trailing dims
// of a floating tensor, with at least one dim kept (full reductions stay eager: one row leaves
// no outer loop to parallelize, and eager's reduction already runs at memory speed).
struct ReductionInfo {
  std::string kind;  // "sum", "mean", "max"
  size_t dims = 0;   // trailing dims reduced
};

std::optional<ReductionInfo> as_reduction(const jit::Node* n) {
  if (n->op() == nullptr || n->outputs().size() != 1 || n->inputs().empty()) return std::nullopt;
  std::string k = op_key(n);
  ReductionInfo r;
  if (k == "sum.dim_IntList") r.kind = "sum";
  else if (k == "mean.dim") r.kind = "mean";
  else if (k == "amax") r.kind = "max";
  else return std::nullopt;
  const jit::TensorInfo* in = complete_tensor(n->input(0));
  const jit::TensorInfo* out = complete_tensor(n->output());
  if (!in || !out || !is_floating_type(*in->dtype) || *out->dtype != *in->dtype)
    return std::nullopt;
  for (size_t i = 1; i < n->inputs().size(); ++i)
    if (!jit::to_constant(n->input(i))) return std::nullopt;
  if (k != "amax" && n->inputs().size() > 3 && !jit::to_constant(n->input(3))->is_none())
    return std::nullopt;  // an explicit dtype
  IValue dims = *jit::to_constant(n->input(1));
  if (!dims.is_int_list() || dims.to_int_list().empty()) return std::nullopt;
  const int64_t rank = int64_t(in->sizes->size());
  std::set<int64_t> ds;
  for (int64_t d : dims.to_int_list()) ds.insert(d < 0 ? d + rank : d);
  if (ds.empty() || *ds.begin() < 0 || *ds.rbegin() != rank - 1 ||
      *ds.begin() != rank - int64_t(ds.size()) || int64_t(ds.size()) >= rank)
    return std::nullopt;
  for (int64_t d : ds)
    if ((*in->sizes)[size_t(d)] == 0) return std::nullopt;  // eager raises for amax; keep it
  r.dims = ds.size();
  return r;
}

struct Group {
  std::vector<const jit::Node*> nodes;
  std::unordered_set<const jit::Value*> produced;
  std::vector<int64_t> sizes;  // the shape new nodes must have to join (a reduction's output)
  const jit::Node* reduction = nullptr;
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
      groups_.push_back(std::move(*open[i]));
      order_.push_back({nullptr, groups_.size() - 1});
      open.erase(open.begin() + std::ptrdiff_t(i));
    };
    auto reads = [](const jit::Node* n, const Group& g) {
      for (const jit::Value* v : n->inputs())
        if (g.produced.count(v)) return true;
      return false;
    };
    for (const jit::Node* n : g_.nodes()) {
      if (as_reduction(n)) {
        // The producer's group becomes the prologue when the reduced value is its only way out.
        const jit::Value* v = n->input(0);
        std::vector<int64_t> out = sizes_of(n->output()->type()->tensor());
        Group* home = nullptr;
        for (size_t i = open.size(); i-- > 0;) {
          if (!open[i]->produced.count(v)) {
            if (reads(n, *open[i])) close(i);
            continue;
          }
          Group& g = *open[i];
          bool only_way_out = g.reduction == nullptr && g.nodes.size() < opts_.max_fusion_size;
          for (const jit::Value* p : g.produced)
            for (const jit::Use& u : p->uses())
              only_way_out &= (p == v && u.user == n) ||
                              std::find(g.nodes.begin(), g.nodes.end(), u.user) != g.nodes.end();
          for (const jit::Value* p : g_.outputs()) only_way_out &= !g.produced.count(p);
          if (only_way_out) home = &g;
          else close(i);
        }
        if (!home) {
          open.push_back(std::make_unique<Group>());
          home = open.back().get();
        }
        home->nodes.push_back(n);
        home->produced.insert(n->output());
        home->reduction = n;
        home->sizes = out;
        continue;
      }
      if (lowerable(n)) {
        std::vector<int64_t> sz = sizes_of(n->output()->type()->tensor());
        Group* home = nullptr;
        // A value of another shape's open group is read: that group's kernel runs first.
        for (size_t i = open.size(); i-- > 0;) {
          if (open[i]->sizes == sz && home == nullptr) {  // the newest group of this shape
            home = open[i].get();
            bool full = home->nodes.size() >= opts_.max_fusion_size;
            if (full || (!opts_.horizontal && !reads(n, *home))) {
              close(i);
              home = nullptr;
            }
          } else if (reads(n, *open[i])) {
            close(i);
          }
        }
        if (!home) {
          open.push_back(std::make_unique<Group>());
          home = open.back().get();
          home->sizes = sz;
        }
        home->nodes.push_back(n);
        home->produced.insert(n->output());
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
    if (grp.reduction) {
      k.out_sizes = grp.sizes;
      k.sizes = sizes_of(grp.reduction->input(0)->type()->tensor());
      k.reduce_dims = as_reduction(grp.reduction)->dims;
    }
    kernel_inputs_.clear();
    kernel_outputs_.clear();
    std::unordered_set<const jit::Node*> in_group(grp.nodes.begin(), grp.nodes.end());
    // Tensors in registers (loads, temps), per phase: 0 prologue/pointwise, 1 epilogue.
    std::unordered_map<const jit::Value*, Operand> vals[2];
    bool epilogue = false;
    std::set<std::string> names;
    for (const jit::Node* n : grp.nodes) {
      std::ostringstream os;
      os << *n;
      std::string line = os.str();
      while (!line.empty() && line.back() == '\n') line.pop_back();
      k.origins.push_back(line);
      names.insert(std::string(n->op()->schema().name));
      const int ph = epilogue ? 1 : 0;
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
        auto it = vals[ph].find(v);
        if (it == vals[ph].end()) {  // a new kernel input
          const jit::TensorInfo& info = v->type()->tensor();
          size_t i = k.inputs.size();
          k.inputs.push_back({*info.dtype, sizes_of(info), *info.strides});
          k.input_ctypes.push_back(compute_ctype(*info.dtype));
          k.input_outer.push_back(epilogue);
          kernel_inputs_.push_back(v);
          it = vals[ph].emplace(v, Operand{true, "l" + std::to_string(i), k.input_ctypes.back(),
                                           *info.dtype, IValue()})
                   .first;
        }
        args.push_back(it->second);
      }
      ScalarType out_dt = *n->output()->type()->tensor().dtype;
      if (n == grp.reduction) {
        ReductionInfo ri = *as_reduction(n);
        const Operand& x = args[0];
        std::string ct = compute_ctype(out_dt);
        if (x.expr[0] == 'l' || x.ctype != ct)  // reduce a statement of the prologue
          k.body.push_back({ct, as_ctype(x, ct)});
        Reduction r;
        r.kind = ri.kind == "max" ? "max" : "sum";
        r.ctype = ct;
        r.value = k.body.size() - 1;
        int64_t count = 1;
        for (size_t d = k.sizes.size() - ri.dims; d < k.sizes.size(); ++d) count *= k.sizes[d];
        if (ri.kind == "mean") r.scale = 1.0 / double(count);
        k.reduction = r;
        k.prologue_size = k.body.size();
        epilogue = true;
        std::string e = r.scale == 1 ? "r0" : "r0 * " + literal(r.scale, ct);
        k.body.push_back({ct, e});
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
        k.body.push_back(
            {result_ct, ct == result_ct ? *e : "static_cast<" + result_ct + ">(" + *e + ")"});
      }
      const std::string& rct = k.body.back().ctype;
      vals[epilogue ? 1 : 0][n->output()] =
          Operand{true, "t" + std::to_string(k.body.size() - 1), rct, out_dt, IValue()};
      // A value used after the group (or returned) is a kernel output.
      bool escapes = false;
      for (const jit::Use& u : n->output()->uses()) escapes |= !in_group.count(u.user);
      if (escapes) {
        const jit::TensorInfo& info = n->output()->type()->tensor();
        std::vector<int64_t> osz = sizes_of(info), st = *info.strides;
        if (!dense_strides(osz, st)) st = contiguous_strides(osz);
        k.outputs.push_back({out_dt, osz, st});
        k.stores.push_back(k.body.size() - 1);
        kernel_outputs_.push_back(n->output());
      }
    }
    k.name = "cpp_fused";
    size_t shown = 0;
    for (const std::string& nm : names)
      if (shown++ < 6) k.name += "_" + nm;
    k.name += "_" + std::to_string(index);
    k.fallback = fallback_graph(grp);
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
    os << k.name << " over [" << join(k.sizes) << "]\n";
    for (size_t i = 0; i < k.inputs.size(); ++i)
      os << "  l" << i << " = load(in" << i << " : " << dtype_name(k.inputs[i].dtype) << "["
         << join(k.inputs[i].sizes) << "], strides=[" << join(k.inputs[i].strides) << "])\n";
    for (size_t i = 0; i < k.body.size(); ++i)
      os << "  t" << i << " : " << k.body[i].ctype << " = " << k.body[i].expr << "\n";
    for (size_t i = 0; i < k.outputs.size(); ++i)
      os << "  store(out" << i << " : " << dtype_name(k.outputs[i].dtype) << ", strides=["
         << join(k.outputs[i].strides) << "], t" << k.stores[i] << ")\n";
  }
  os << "wrapper:\n" << lg.graph->str(false);
  return os.str();
}

}  // namespace retorch::compiler
