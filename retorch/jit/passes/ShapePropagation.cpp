// Shape propagation: complete tensor types (dtype, sizes, strides, device, requires_grad) for
// node outputs, found by running each op once on stand-in tensors of its input types.
#include "retorch/generated/Functions.h"
#include "retorch/jit/passes/PassUtils.h"
#include "retorch/jit/passes/Passes.h"

namespace retorch::jit {

// Note [Shape propagation by execution]
// Rather than a shape rule per op, each pure op runs once on stand-ins of the input types
// (empty_strided with the recorded strides, so layouts propagate too), with grad mode on and
// stand-ins requiring grad where the type says so (so requires_grad propagates through
// autograd's own rules). Where the op has a meta kernel the stand-ins are meta tensors: the
// kernel's own shape logic runs, nothing is allocated or computed (Note [Meta through CPU
// kernels]), and the outputs get the inputs' device back. Elsewhere they are zero-filled
// tensors on the recorded device: one eager execution per node at full size, paid once per
// graph, not per call. Ops whose output shape depends on tensor values (nonzero,
// masked_select, unique, ...) are skipped, as is any node with an input of unknown type or a
// non-constant non-tensor argument.

namespace {

bool data_dependent_shape(const Node* n) {
  const OpSchema& s = n->op()->schema();
  static const std::unordered_set<std::string_view> kNames = {
      "nonzero",    "masked_select", "bincount", "unique",  "unique_consecutive",
      "unique_dim", "_unique",       "_unique2", "argwhere"};
  if (kNames.count(s.name)) return true;
  if (s.name == "where" && s.overload.empty()) return true;
  return s.name == "repeat_interleave" && s.overload != "self_int";
}

// A tensor of a complete type: on meta (no data) or zero-filled on its device.
Tensor stand_in(const Type& t, bool meta) {
  const TensorInfo& info = t.tensor();
  std::vector<int64_t> sizes;
  for (const auto& s : *info.sizes) sizes.push_back(*s);
  Tensor r = empty_strided(sizes, *info.strides,
                           dtype(*info.dtype).device(meta ? Device(kMeta) : *info.device));
  if (!meta) r.zero_();
  if (*info.requires_grad && is_floating_type(*info.dtype)) r.set_requires_grad(true);
  return r;
}

// Meta stand-ins work when the op has a meta kernel and every tensor input is on one device
// (constants included: they become meta too).
std::optional<Device> meta_device_for(const Node* n) {
  if (!n->op()->has_kernel(DispatchKey::Meta)) return std::nullopt;
  std::optional<Device> dev;
  for (const Value* v : n->inputs()) {
    if (!v->type()->is_tensor()) continue;
    const auto& d = v->type()->tensor().device;
    if (!d || (dev && *dev != *d)) return std::nullopt;
    dev = *d;
  }
  return dev;
}

// Runs n on stand-ins (meta ones when `meta`); nullopt when an input is unknown or the op fails.
std::optional<Stack> run_on_stand_ins(Node* n, bool meta) {
  Stack args;
  try {
    for (const Value* v : n->inputs()) {
      if (auto c = detail::constant_input(v)) {
        if (meta && c->is_tensor() && c->to_tensor().defined())
          *c = IValue(c->to_tensor().to(Device(kMeta)));
        args.push_back(std::move(*c));
      } else if (v->type()->is_complete_tensor()) {
        args.push_back(IValue(stand_in(*v->type(), meta)));
      } else {
        return std::nullopt;  // unknown: the outputs stay unknown
      }
    }
  } catch (const Error&) {
    return std::nullopt;  // a stand-in that cannot be made here (a device this build lacks)
  }
  return detail::run_node_op(n, std::move(args), /*record_grad=*/true);
}

void propagate_node(Node* n) {
  if (n->op() == nullptr || n->has_side_effects() || data_dependent_shape(n)) return;
  const std::optional<Device> meta_for = meta_device_for(n);
  std::optional<Stack> results;
  if (meta_for) results = run_on_stand_ins(n, true);
  const bool on_meta = results.has_value();
  if (!results) results = run_on_stand_ins(n, false);  // no meta kernel, or it refused
  if (!results) return;
  for (size_t i = 0; i < results->size(); ++i) {
    if (!(*results)[i].is_tensor() || !n->output(i)->type()->is_tensor()) continue;
    const Tensor& r = (*results)[i].to_tensor();
    TypePtr type = Type::of_tensor(r);
    if (on_meta && r.defined() && r.device().is_meta()) {  // back to the inputs' device
      TensorInfo info = type->tensor();
      info.device = *meta_for;
      type = Type::tensor_with(std::move(info));
    }
    n->output(i)->set_type(type);
  }
}

void propagate_block(Block* b);

// A block whose inputs are the node's inputs (FusionGroup, CallFunction): types flow in and out.
void propagate_subgraph(Node* n) {
  Block* body = n->blocks()[0];
  if (body->inputs().size() != n->inputs().size() || body->outputs().size() != n->outputs().size())
    return;
  for (size_t i = 0; i < n->inputs().size(); ++i) body->inputs()[i]->set_type(n->input(i)->type());
  propagate_block(body);
  for (size_t i = 0; i < n->outputs().size(); ++i)
    if (body->outputs()[i]->type()->is_complete_tensor())
      n->output(i)->set_type(body->outputs()[i]->type());
}

void propagate_if(Node* n) {
  for (Block* b : n->blocks()) propagate_block(b);
  if (n->blocks().size() != 2) return;
  const auto& then_out = n->blocks()[0]->outputs();
  const auto& else_out = n->blocks()[1]->outputs();
  if (then_out.size() != n->outputs().size() || else_out.size() != n->outputs().size()) return;
  for (size_t i = 0; i < n->outputs().size(); ++i) {
    const TypePtr& a = then_out[i]->type();
    const TypePtr& b = else_out[i]->type();
    if (a->is_complete_tensor() && a->equals(*b)) n->output(i)->set_type(a);
  }
}

void propagate_block(Block* b) {
  for (Node* n : b->nodes()) {
    if (n->kind() == kind::kIf) {
      propagate_if(n);
    } else if ((n->kind() == kind::kFusionGroup || n->kind() == "prim::CallFunction") &&
               n->blocks().size() == 1) {
      propagate_subgraph(n);
    } else if (!n->blocks().empty()) {
      // prim::Loop: types may change across iterations; only the body's nodes are typed,
      // from what is known on entry (loop-carried values stay as they are).
      for (Block* sub : n->blocks()) propagate_block(sub);
    } else {
      propagate_node(n);
    }
  }
}

}  // namespace

void propagate_shapes(Graph& g) {
  propagate_block(g.block());
}

}  // namespace retorch::jit
