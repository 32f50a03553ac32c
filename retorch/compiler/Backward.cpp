// Compiled backward: reverse-mode differentiation of a pointwise kernel's statements into a
// generated backward kernel, and the autograd node that calls it.
#include "retorch/compiler/Backward.h"

#include <cctype>

#include "retorch/autograd/FunctionsManual.h"
#include "retorch/autograd/GeneratedHelpers.h"
#include "retorch/autograd/GradMode.h"
#include "retorch/autograd/Node.h"
#include "retorch/autograd/SavedVariable.h"
#include "retorch/compiler/RowOps.h"
#include "retorch/device/CudaBridge.h"
#include "retorch/device/ElementAddress.h"
#include "retorch/generated/Functions.h"

namespace retorch::compiler {

// Note [Compiled backward]
// A kernel whose floating statements all have partials (PointwiseGrads.cpp for pointwise ops,
// expand_row_op for row ops) gets a backward kernel, generated into the same source. It reads
// the forward kernel's inputs (the only tensors the autograd node saves: the forward's
// intermediates are registers, so recomputing them costs less than saving them) and the
// gradients of the floating outputs; recomputes the forward statements (and reductions); then
// walks them in reverse, each statement's adjoint being the sum of what its users contribute
// (adjoint * partial), seeded by the outputs' gradients. A row value's adjoint reduces its
// element contributions over the row: a new reduction of the backward kernel, after the
// forward's, so a backward row kernel makes one more pass per row value it differentiates
// (layer_norm: the forward's two, then two more). Through a reduction, a sum passes its row
// adjoint to every element, a max to the elements equal to it, split between ties; softmax's
// max is only a shift of the row, and passes nothing. The kernel stores one gradient per
// floating input over the whole iteration space, except, on CPU, an input broadcast over a row
// kernel's rows, whose gradient it sums over the rows itself (KernelArg::column_sum); the node
// sums any other broadcast input's gradient down to its shape (eager's sum_to) and returns
// nothing for inputs that do not require grad.
// Inputs read once per row (epilogue operands) are not differentiated: such a kernel runs its
// nodes eagerly under grad. The backward kernel records no autograd itself, so a graph built by
// backward(create_graph=True) through it raises, as torch.compile's does.

namespace {

// The loads and temps an expression reads: its identifiers of the form l<k> or t<k>.
std::vector<Operand> reads_of(const std::string& e) {
  std::vector<Operand> out;
  for (size_t i = 0; i < e.size();) {
    if (!std::isalpha(static_cast<unsigned char>(e[i])) && e[i] != '_') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < e.size() && (std::isalnum(static_cast<unsigned char>(e[j])) || e[j] == '_')) ++j;
    const std::string id = e.substr(i, j - i);
    if (id.size() > 1 && (id[0] == 'l' || id[0] == 't') &&
        id.find_first_not_of("0123456789", 1) == std::string::npos)
      out.push_back(Operand{true, id, "", kFloat, IValue()});
    i = j;
  }
  return out;
}

// Whether a row kernel's input is one row broadcast over all rows (a layer_norm weight): its
// gradient is then summed over the rows by the backward kernel itself on CPU (Note [Column
// gradients in the kernel] in CppCodegen.cpp), for rows of up to 16K elements.
bool broadcast_over_rows(const Kernel& k, const KernelArg& in) {
  const size_t nout = k.sizes.size() - k.reduce_dims;
  if (k.reductions.empty() || in.row || nout == 0) return false;
  int64_t inner = 1, n = 1;
  for (size_t d = nout; d < k.sizes.size(); ++d) inner *= k.sizes[d];
  for (int64_t s : in.sizes) n *= s;
  for (size_t d = 0; d < nout; ++d)
    if (in.loop_strides[d] != 0) return false;
  return n == inner && inner <= 16384;
}

}  // namespace

std::shared_ptr<Kernel> make_backward(const Kernel& k) {
  if (!k.differentiable) return nullptr;
  auto b = std::make_shared<Kernel>();
  b->name = k.name + "_backward";
  b->origins = k.origins;
  b->sizes = k.sizes;
  b->reduce_dims = k.reduce_dims;
  b->inputs = k.inputs;
  b->input_ctypes = k.input_ctypes;
  b->body = k.body;  // the forward, recomputed (its reductions too)
  b->reductions = k.reductions;
  BodyBuilder bb(*b);
  const size_t ni = k.inputs.size(), nout = k.sizes.size() - k.reduce_dims;
  // A contribution to an adjoint: adjoint * partial, per element or (row) once per row.
  struct Term {
    std::string expr;
    std::vector<Operand> reads;
    bool element;
  };
  std::vector<std::vector<Term>> adj_t(k.body.size()), adj_l(ni);
  auto temp = [&](size_t s) { return Operand{true, "t" + std::to_string(s), k.body[s].ctype, kFloat, IValue()}; };
  auto load = [&](size_t i) { return Operand{true, "l" + std::to_string(i), b->input_ctypes[i], kFloat, IValue()}; };
  auto dense = [&](ScalarType dt, const std::vector<int64_t>& sizes, bool row) {
    KernelArg a{dt, sizes, contiguous_strides(sizes), {}, row};
    a.loop_strides = aligned_strides(a.sizes, a.strides, row ? sizes : k.sizes);
    a.loop_strides.resize(row ? nout : k.sizes.size());
    return a;
  };
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const KernelArg& out = k.outputs[o];
    if (!is_floating_type(out.dtype)) continue;
    b->grad_of_outputs.push_back(o);
    b->inputs.push_back(dense(out.dtype, out.sizes, out.row));
    b->input_ctypes.push_back(compute_ctype(out.dtype));
    Operand g = load(b->inputs.size() - 1);
    adj_t[k.stores[o]].push_back({g.expr, {g}, !out.row});
  }
  std::vector<std::optional<size_t>> reduced_by(k.body.size());  // row statement r<j> -> j
  for (size_t j = 0; j < k.reductions.size(); ++j) reduced_by[k.reductions[j].result] = j;
  auto join = [](const std::string& x, const std::string& y) {
    return x.empty() ? y : y.empty() ? x : x + " + " + y;
  };
  // The terms of one kind (element or row) summed, their reads appended to `reads`.
  auto sum = [](const std::vector<Term>& terms, bool element, std::vector<Operand>& reads) {
    std::string e;
    for (const Term& t : terms) {
      if (t.element != element) continue;
      e += (e.empty() ? "" : " + ") + t.expr;
      reads.insert(reads.end(), t.reads.begin(), t.reads.end());
    }
    return e;
  };
  for (size_t s = k.body.size(); s-- > 0;) {
    const Stmt& st = k.body[s];
    if (adj_t[s].empty() || (st.ctype != "float" && st.ctype != "double")) continue;
    // The adjoint of s: an element's sums every term (row terms broadcast over the row); a row
    // value's reduces its element terms over the row first.
    std::vector<Operand> er, rr;
    const std::string elem_terms = sum(adj_t[s], true, er), row_terms = sum(adj_t[s], false, rr);
    Operand a;
    if (!st.row) {
      er.insert(er.end(), rr.begin(), rr.end());
      a = bb.push(st.ctype, join(elem_terms, row_terms), false, er, kFloat);
    } else {
      std::string total = row_terms;
      if (!elem_terms.empty()) {
        Operand red = bb.reduce("sum", bb.push(st.ctype, elem_terms, false, er, kFloat), st.ctype);
        total = join(total, red.expr);
        rr.push_back(red);
      }
      a = bb.push(st.ctype, total, true, rr, kFloat);
    }
    // Through s's partials to its operands.
    for (const auto& [operand, d] : st.partials) {
      const size_t i = std::stoul(operand.substr(1));
      std::vector<Operand> reads = reads_of(d);
      reads.push_back(a);
      (operand[0] == 'l' ? adj_l[i] : adj_t[i]).push_back({a.expr + " * " + d, reads, !st.row});
    }
    // Through a reduction to the value reduced: a sum passes its adjoint to every element, a
    // max to the elements equal to it, split evenly between ties (as eager's amax).
    if (!reduced_by[s] || !k.reductions[*reduced_by[s]].differentiable) continue;
    const Reduction& red = k.reductions[*reduced_by[s]];
    if (red.kind == "sum") {
      adj_t[red.value].push_back({a.expr, {a}, false});
    } else {
      Operand v = temp(red.value);
      Operand hit = bb.push(st.ctype, "(" + v.expr + " == " + temp(s).expr + " ? " +
                                          literal(1, st.ctype) + " : " + literal(0, st.ctype) + ")",
                            false, {v, temp(s)}, kFloat);
      Operand ties = bb.reduce("sum", hit, st.ctype);
      adj_t[red.value].push_back(
          {a.expr + " * " + hit.expr + " / " + ties.expr, {a, hit, ties}, true});
    }
  }
  for (size_t i = 0; i < ni; ++i) {
    if (!is_floating_type(k.inputs[i].dtype) || adj_l[i].empty()) continue;
    if (k.inputs[i].row) return nullptr;  // read once per row: its eager nodes differentiate it
    std::vector<Operand> reads;
    const std::string e = sum(adj_l[i], true, reads), r = sum(adj_l[i], false, reads);
    Operand g = bb.push(b->input_ctypes[i], join(e, r), false, reads, kFloat);
    b->grad_for_inputs.push_back(i);
    b->outputs.push_back(dense(k.inputs[i].dtype, k.sizes, false));
    b->outputs.back().column_sum = broadcast_over_rows(k, k.inputs[i]);
    b->stores.push_back(std::stoul(g.expr.substr(1)));
  }
  if (b->outputs.empty()) return nullptr;
  return b;
}

namespace {

// Owns what it runs: the backward kernel's loop IR and the loaded library holding its code, so
// a gradient outlives the compiled function that made it.
struct CompiledKernelBackward final : autograd::Node {
  CompiledKernelBackward(std::shared_ptr<const Kernel> b, KernelCall fn,
                         std::shared_ptr<const void> library)
      : b_(std::move(b)), fn_(fn), library_(std::move(library)) {}
  std::string name() const override { return "CompiledKernelBackward"; }

  autograd::variable_list apply(autograd::variable_list&& grads) override {
    const Kernel& b = *b_;
    const size_t ni = b.inputs.size() - b.grad_of_outputs.size();  // the forward's inputs
    RT_CHECK(!GradMode::is_enabled(), "compile: ", b.name, " cannot be differentiated again "
             "(backward with create_graph=True through a compiled kernel); call the function "
             "uncompiled for higher-order gradients");
    RT_CHECK(inputs_.size() == ni, "compile: ", b.name, ": trying to backward through the graph "
             "a second time (or directly access saved tensors after they have already been "
             "freed); specify retain_graph=True the first time");
    std::vector<Tensor> keep;
    for (const autograd::SavedVariable& v : inputs_) keep.push_back(v.unpack());
    const Device device = keep.empty() ? Device(kCPU) : keep[0].device();
    for (size_t j = 0; j < b.grad_of_outputs.size(); ++j) {
      const KernelArg& a = b.inputs[ni + j];
      Tensor g = grads.at(b.grad_of_outputs[j]);
      if (!g.defined()) g = zeros(a.sizes, TensorOptions(a.dtype).device(device));
      else if (g.dtype() != a.dtype || !g.is_contiguous()) g = g.to(a.dtype).contiguous();
      keep.push_back(g);
    }
    std::vector<void*> args;
    for (const Tensor& t : keep) args.push_back(element_address(t));
    std::vector<Tensor> outs;
    for (const KernelArg& a : b.outputs) {
      // a column sum is one row on CPU, in the input's own (row) shape: see KernelArg
      const bool row_only = a.column_sum && device.is_cpu();
      const size_t j = outs.size();
      outs.push_back(row_only ? empty(b.inputs[b.grad_for_inputs[j]].sizes,
                                      TensorOptions(a.dtype).device(device))
                              : empty_strided(a.sizes, a.strides,
                                              TensorOptions(a.dtype).device(device)));
      args.push_back(element_address(outs.back()));
    }
    fn_(args);
    autograd::variable_list result(ni);
    for (size_t j = 0; j < b.grad_for_inputs.size(); ++j) {
      const size_t i = b.grad_for_inputs[j];
      if (!should_compute_output(i)) continue;
      const std::vector<int64_t>& shape = b.inputs[i].sizes;
      result[i] = outs[j].sizes() == IntArrayRef(shape) ? outs[j] : sum_to(outs[j], shape);
    }
    return result;
  }
  void release_variables() override { inputs_.clear(); }

  std::shared_ptr<const Kernel> b_;
  KernelCall fn_;
  std::shared_ptr<const void> library_;
  std::vector<autograd::SavedVariable> inputs_;
};

}  // namespace

void KernelCall::operator()(std::vector<void*>& args) const {
  if (host) return host(args.data());
  // cudaLaunchKernel takes the address of each parameter.
  std::vector<void*> params(args.size());
  for (size_t i = 0; i < args.size(); ++i) params[i] = &args[i];
  detail::cuda_backend_launch(cuda, work, block, params.data());
}

void attach_backward(std::shared_ptr<const Kernel> backward, KernelCall backward_fn,
                     std::shared_ptr<const void> library, const std::vector<Tensor>& inputs,
                     const std::vector<Tensor>& outputs) {
  auto node = std::make_shared<CompiledKernelBackward>(std::move(backward), backward_fn,
                                                       std::move(library));
  std::vector<autograd::Edge> edges;
  for (const Tensor& t : inputs) {
    node->inputs_.emplace_back(t, false);
    edges.push_back(t.requires_grad() ? autograd::gradient_edge(t) : autograd::Edge());
  }
  node->set_next_edges(std::move(edges));
  for (const Tensor& t : outputs) autograd::generated::set_history(t, node, 0, nullptr);
}

}  // namespace retorch::compiler
