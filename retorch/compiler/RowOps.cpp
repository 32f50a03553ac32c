// Row ops: recognizes the reductions and composite ops that lower into row kernels and expands
// each into reductions and element/row statements (Note [Row kernels] in CppCodegen.cpp).
#include "retorch/compiler/RowOps.h"
#include "retorch/device/DeviceApi.h"

#include <algorithm>
#include <limits>
#include <set>
#include <unordered_map>

namespace retorch::compiler {

std::string op_key(const jit::Node* n) {
  std::string k(n->op()->schema().name);
  if (!n->op()->schema().overload.empty()) k += "." + std::string(n->op()->schema().overload);
  return k;
}

namespace {
bool lowerable_dtype(ScalarType t) {
  return t == kFloat || t == kDouble || t == kBFloat16 || t == kHalf || t == kBool || t == kLong;
}
}  // namespace

const jit::TensorInfo* complete_tensor(const jit::Value* v) {
  const jit::Type& t = *v->type();
  if (!t.is_complete_tensor()) return nullptr;
  const jit::TensorInfo& info = t.tensor();
  // Host memory, or a CUDA device with the backend (the CUDA emitter's kernels); a device run
  // through the fallback stays eager.
  const bool here = info.device->is_cpu() || (info.device->is_cuda() && device_available(kCUDA));
  if (!lowerable_dtype(*info.dtype) || !here) return nullptr;
  return &info;
}

std::vector<int64_t> sizes_of(const jit::TensorInfo& info) {
  std::vector<int64_t> s;
  for (const auto& d : *info.sizes) s.push_back(*d);
  return s;
}

std::string compute_ctype(ScalarType t) {
  switch (t) {
    case kDouble: return "double";
    case kBool: return "bool";
    case kLong: return "int64_t";
    default: return "float";
  }
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(sizes.size(), 1);
  for (size_t i = sizes.size(); i-- > 1;) s[i - 1] = s[i] * std::max<int64_t>(sizes[i], 1);
  return s;
}

std::vector<int64_t> aligned_strides(const std::vector<int64_t>& sizes,
                                     const std::vector<int64_t>& strides,
                                     const std::vector<int64_t>& space) {
  std::vector<int64_t> st(space.size(), 0);
  size_t off = space.size() - sizes.size();
  for (size_t i = 0; i < sizes.size(); ++i) st[off + i] = sizes[i] == 1 ? 0 : strides[i];
  return st;
}

Operand BodyBuilder::push(const std::string& ctype, std::string expr, bool row,
                          const std::vector<Operand>& reads, ScalarType dtype) {
  Stmt s{ctype, std::move(expr), row, {}, {}};
  for (const Operand& o : reads) {
    if (!o.is_tensor) continue;
    size_t i = std::stoul(o.expr.substr(1));
    (o.expr[0] == 'l' ? s.loads : s.temps).push_back(i);
  }
  k_.body.push_back(std::move(s));
  return Operand{true, "t" + std::to_string(k_.body.size() - 1), ctype, dtype, IValue()};
}

Operand BodyBuilder::reduce(const std::string& kind, const Operand& v, const std::string& ct,
                            bool keep_nan, bool differentiable) {
  Operand val = v;
  if (v.expr[0] == 'l' || v.ctype != ct) {
    val = push(ct, as_ctype(v, ct), false, {v}, v.dtype);
    grad(val, v, literal(1, ct));
  }
  const size_t j = k_.reductions.size();
  k_.reductions.push_back({kind, std::stoul(val.expr.substr(1)), ct, keep_nan});
  Operand r = push(ct, "r" + std::to_string(j), true, {}, v.dtype);
  k_.reductions[j].result = k_.body.size() - 1;
  k_.reductions[j].differentiable = differentiable;
  return r;
}

void BodyBuilder::grad(const Operand& stmt, const Operand& wrt, std::string d) {
  if (!wrt.is_tensor || !is_floating_type(wrt.dtype)) return;
  k_.body.at(std::stoul(stmt.expr.substr(1))).partials.emplace_back(wrt.expr, "(" + d + ")");
}

namespace {

const std::unordered_map<std::string, std::string>& row_kinds() {
  static const std::unordered_map<std::string, std::string> m = {
      {"sum.dim_IntList", "sum"}, {"mean.dim", "mean"},       {"amax", "amax"},
      {"var.correction", "var"},  {"var", "var"},             {"softmax.int", "softmax"},
      {"log_softmax.int", "log_softmax"}, {"layer_norm", "layer_norm"}, {"rms_norm", "rms_norm"}};
  return m;
}

std::optional<IValue> constant(const jit::Node* n, size_t i) {
  if (i >= n->inputs().size()) return IValue();  // a trailing default: None
  return jit::to_constant(n->input(i));
}

}  // namespace

std::optional<RowOp> as_row_op(const jit::Node* n) {
  if (n->op() == nullptr || n->outputs().size() != 1 || n->inputs().empty() ||
      !n->blocks().empty())
    return std::nullopt;
  auto kind = row_kinds().find(op_key(n));
  if (kind == row_kinds().end()) return std::nullopt;
  RowOp op;
  op.kind = kind->second;
  const jit::TensorInfo* in = complete_tensor(n->input(0));
  const jit::TensorInfo* out = complete_tensor(n->output());
  if (!in || !out || !is_floating_type(*in->dtype) || *out->dtype != *in->dtype)
    return std::nullopt;
  const std::vector<int64_t> sizes = sizes_of(*in);
  const int64_t rank = int64_t(sizes.size());
  // Weights (layer_norm: inputs 2, 3; rms_norm: input 2) may be tensors; the rest constants.
  const bool norm = op.kind == "layer_norm" || op.kind == "rms_norm";
  for (size_t i = 1; i < n->inputs().size(); ++i) {
    const bool weight = norm && (i == 2 || (i == 3 && op.kind == "layer_norm"));
    std::optional<IValue> c = jit::to_constant(n->input(i));
    if (c && (!weight || c->is_none())) continue;
    const jit::TensorInfo* w = weight && !c ? complete_tensor(n->input(i)) : nullptr;
    if (!w || *w->dtype != *in->dtype) return std::nullopt;
  }
  std::vector<int64_t> dims;
  if (op.kind == "softmax" || op.kind == "log_softmax") {
    if (!constant(n, 1)->is_int() || !constant(n, 2)->is_none()) return std::nullopt;
    dims = {constant(n, 1)->to_int()};
  } else if (norm) {
    IValue shape = *constant(n, 1);
    if (!shape.is_int_list() || shape.to_int_list().empty()) return std::nullopt;
    for (size_t i = 0; i < shape.to_int_list().size(); ++i)
      dims.push_back(-1 - int64_t(i));
  } else {
    IValue d = *constant(n, 1);
    if (!d.is_int_list() || d.to_int_list().empty()) return std::nullopt;
    dims = d.to_int_list();
    if ((op.kind == "sum" || op.kind == "mean") && !constant(n, 3)->is_none())
      return std::nullopt;  // an explicit dtype
  }
  std::set<int64_t> ds;
  for (int64_t d : dims) ds.insert(d < 0 ? d + rank : d);
  if (ds.empty() || *ds.begin() < 0 || *ds.rbegin() != rank - 1 ||
      *ds.begin() != rank - int64_t(ds.size()) || int64_t(ds.size()) >= rank)
    return std::nullopt;
  op.dims = ds.size();
  op.count = 1;
  for (int64_t d : ds) op.count *= sizes[size_t(d)];
  // Empty rows keep eager's errors and conventions; one-element rows are not reductions.
  if (op.count <= 1) return std::nullopt;
  if (norm) {
    IValue shape = *constant(n, 1);
    for (size_t i = 0; i < op.dims; ++i)
      if (shape.to_int_list()[i] != sizes[size_t(rank) - op.dims + i]) return std::nullopt;
    for (size_t i = 2; i < (op.kind == "layer_norm" ? 4u : 3u) && i < n->inputs().size(); ++i)
      if (const jit::TensorInfo* w = complete_tensor(n->input(i)))
        if (sizes_of(*w) != shape.to_int_list()) return std::nullopt;  // eager raises
  }
  op.keeps_shape = op.kind == "softmax" || op.kind == "log_softmax" || norm;
  if (op.kind == "var") {
    IValue c = *constant(n, 2);
    if (op_key(n) == "var") op.correction = c.is_bool() && !c.to_bool() ? 0 : 1;
    else if (c.is_none()) op.correction = 1;
    else if (c.is_int()) op.correction = c.to_int();
    else return std::nullopt;
  }
  if (op.kind == "layer_norm") {
    IValue e = *constant(n, 4);
    if (!e.is_scalar()) return std::nullopt;
    op.eps = e.to_double();
  }
  if (op.kind == "rms_norm") {  // None: the epsilon of the compute type, like eager
    IValue e = *constant(n, 3);
    if (e.is_none())
      op.eps = *in->dtype == kDouble ? std::numeric_limits<double>::epsilon()
                                     : double(std::numeric_limits<float>::epsilon());
    else if (e.is_scalar()) op.eps = e.to_double();
    else return std::nullopt;
  }
  return op;
}

Operand expand_row_op(const RowOp& op, const std::vector<Operand>& args, const std::string& ct,
                      BodyBuilder& b) {
  const Operand& x = args[0];
  const ScalarType dt = x.dtype;
  auto lit = [&](double v) { return literal(v, ct); };
  // A statement and its partials (Note [Compiled backward]): {operand, d stmt / d operand}.
  using Partials = std::vector<std::pair<Operand, std::string>>;
  auto stmt = [&](bool row, std::string e, std::vector<Operand> reads, Partials partials) {
    Operand t = b.push(ct, std::move(e), row, reads, dt);
    for (auto& [wrt, d] : partials) b.grad(t, wrt, d == "self" ? t.expr : d);
    return t;
  };
  auto elem = [&](std::string e, std::vector<Operand> reads, Partials partials) {
    return stmt(false, std::move(e), std::move(reads), std::move(partials));
  };
  auto row = [&](std::string e, std::vector<Operand> reads, Partials partials) {
    return stmt(true, std::move(e), std::move(reads), std::move(partials));
  };
  const std::string xs = as_ctype(x, ct);
  const std::string inv_n = lit(1.0 / double(op.count));
  if (op.kind == "sum") return b.reduce("sum", x, ct);
  if (op.kind == "amax") return b.reduce("max", x, ct);
  if (op.kind == "mean") {
    Operand s = b.reduce("sum", x, ct);
    return row(s.expr + " * " + inv_n, {s}, {{s, inv_n}});
  }
  if (op.kind == "softmax" || op.kind == "log_softmax") {
    // A NaN in the row needs no flag: exp(NaN - max) makes the sum, and so every output, NaN.
    // The max only shifts the row (the result does not depend on it): no gradient flows to it.
    Operand m = b.reduce("max", x, ct, false, false);
    Operand e = elem("rt_exp_shifted(" + xs + " - " + m.expr + ")", {x, m}, {{x, "self"}});
    Operand s = b.reduce("sum", e, ct);
    if (op.kind == "log_softmax") {
      Operand c = row(m.expr + " + rt_log(" + s.expr + ")", {m, s}, {{s, lit(1) + " / " + s.expr}});
      return elem("(" + xs + " - " + c.expr + ")", {x, c}, {{x, lit(1)}, {c, lit(-1)}});
    }
    Operand inv = row(lit(1) + " / " + s.expr, {s}, {});
    b.grad(inv, s, "-" + inv.expr + " * " + inv.expr);
    return elem(e.expr + " * " + inv.expr, {e, inv}, {{e, inv.expr}, {inv, e.expr}});
  }
  // y * w and y + b for a norm's optional weight and bias.
  auto affine = [&](Operand y, size_t w, size_t bias) {
    if (w < args.size() && args[w].is_tensor) {
      const std::string ws = as_ctype(args[w], ct);
      y = elem(y.expr + " * " + ws, {y, args[w]}, {{y, ws}, {args[w], y.expr}});
    }
    if (bias < args.size() && args[bias].is_tensor)
      y = elem(y.expr + " + " + as_ctype(args[bias], ct), {y, args[bias]},
               {{y, lit(1)}, {args[bias], lit(1)}});
    return y;
  };
  if (op.kind == "rms_norm") {
    Operand sq = elem(xs + " * " + xs, {x}, {{x, lit(2) + " * " + xs}});
    Operand s = b.reduce("sum", sq, ct);
    Operand r = row("rt_rsqrt(" + s.expr + " * " + inv_n + " + " + lit(op.eps) + ")", {s}, {});
    b.grad(r, s, lit(-0.5) + " * " + r.expr + " * " + r.expr + " * " + r.expr + " * " + inv_n);
    return affine(elem(xs + " * " + r.expr, {x, r}, {{x, r.expr}, {r, xs}}), 2, args.size());
  }
  // var and layer_norm: the mean, then the centered sum of squares (two passes over a row that
  // stays in cache: as accurate as Welford's update and cheaper per element).
  Operand s = b.reduce("sum", x, ct);
  Operand m = row(s.expr + " * " + inv_n, {s}, {{s, inv_n}});
  Operand d = elem("(" + xs + " - " + m.expr + ")", {x, m}, {{x, lit(1)}, {m, lit(-1)}});
  Operand dd = elem(d.expr + " * " + d.expr, {d}, {{d, lit(2) + " * " + d.expr}});
  Operand ss = b.reduce("sum", dd, ct);
  if (op.kind == "var") {
    const int64_t dof = std::max<int64_t>(op.count - op.correction, 0);
    const std::string inv_dof =
        lit(dof == 0 ? std::numeric_limits<double>::infinity() : 1.0 / double(dof));
    return row(ss.expr + " * " + inv_dof, {ss}, {{ss, inv_dof}});
  }
  Operand rstd = row("rt_rsqrt(" + ss.expr + " * " + inv_n + " + " + lit(op.eps) + ")", {ss}, {});
  b.grad(rstd, ss,
         lit(-0.5) + " * " + rstd.expr + " * " + rstd.expr + " * " + rstd.expr + " * " + inv_n);
  Operand y = elem(d.expr + " * " + rstd.expr, {d, rstd}, {{d, rstd.expr}, {rstd, d.expr}});
  return affine(y, 2, 3);
}

}  // namespace retorch::compiler
