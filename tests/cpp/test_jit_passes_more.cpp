// JIT pass tests, part 2: decomposition, shape propagation, fusion groups, call inlining and the
// pass manager (pipelines, RETORCH_JIT_LOG output).
#include <cstdlib>

#include "jit_pass_helpers.h"
#include "retorch/jit/passes/PassManager.h"

using namespace jit_test;

namespace {

Tensor randf(std::vector<int64_t> sizes) {
  return retorch::randn(sizes);
}
Value* i64(Graph& g, int64_t v) {
  return cst(g, IValue(v));
}

// Sets RETORCH_JIT_LOG for a scope.
struct JitLog {
  explicit JitLog(const char* spec) { setenv("RETORCH_JIT_LOG", spec, 1); }
  ~JitLog() { unsetenv("RETORCH_JIT_LOG"); }
};

}  // namespace

// ---------------------------------------------------------------- decompose

TEST(JitPasses, DecomposeAddmm) {
  Graph g;
  Value* self = g.add_input("self");
  Value* m1 = g.add_input("m1");
  Value* m2 = g.add_input("m2");
  g.register_output(call(g, "addmm", {self, m1, m2, cst(g, IValue(0.5)), i64(g, 2)}));
  g.register_output(call(g, "addmm", {self, m1, m2}));  // beta and alpha omitted: 1
  g.register_output(call(g, "addmm", {self, m1, m2, i64(g, 0), i64(g, 1)}));  // self ignored
  Stack in = {IValue(randf({4})), IValue(randf({3, 5})), IValue(randf({5, 4}))};
  auto h = check_equivalent(g, decompose, in);
  std::string text = h->str();
  EXPECT_TRUE(check_not(text, "aten::addmm")) << text;
  EXPECT_EQ(count(text, "aten::mm"), 3u) << text;
  EXPECT_EQ(count(text, "aten::mul"), 2u) << text;
  EXPECT_EQ(count(text, "aten::add"), 2u) << text;
  EXPECT_TRUE(check_order(text, {"aten::mm(%m1, %m2)", "aten::mul", "aten::mul(%self", "aten::add",
                                 "aten::mm(%m1, %m2)", "aten::add(", ", %self, "}))
      << text;
  // A non-constant alpha is left alone.
  Graph k;
  Value* kx = k.add_input("x");
  Value* alpha = k.add_input("alpha", Type::float_type());
  k.register_output(call(k, "addmm", {kx, kx, kx, i64(k, 1), alpha}));
  std::string before = k.str();
  decompose(k);
  EXPECT_EQ(k.str(), before);
}

TEST(JitPasses, DecomposeLinear) {
  Graph g;
  Value* x = g.add_input("x");
  Value* w = g.add_input("w");
  Value* b = g.add_input("b");
  g.register_output(call(g, "linear", {x, w, b}));
  g.register_output(call(g, "linear", {x, w, cst(g, IValue())}));
  Value* maybe = g.add_input("maybe", Type::optional_of(Type::tensor_type()));
  g.register_output(call(g, "linear", {x, w, maybe}));  // bias may be None: stays
  auto h = decompose;
  auto copy = g.copy();
  h(*copy);
  std::string text = copy->str();
  EXPECT_EQ(count(text, "aten::linear"), 1u) << text;
  EXPECT_TRUE(check_order(text, {"aten::t(%w)", "aten::matmul(%x", "aten::add(", ", %b, ",
                                 "aten::t(%w)", "aten::matmul(%x", "aten::linear(%x, %w, %maybe)"}))
      << text;
  // Values, on the graph without the optional bias.
  Graph v;
  Value* vx = v.add_input("x");
  Value* vw = v.add_input("w");
  Value* vb = v.add_input("b");
  v.register_output(call(v, "linear", {vx, vw, vb}));
  v.register_output(call(v, "linear", {vx, vw}));
  check_equivalent(v, decompose,
                   {IValue(randf({2, 7, 3})), IValue(randf({5, 3})), IValue(randf({5}))});
}

TEST(JitPasses, DecomposeLayerNorm) {
  Graph g;
  Value* x = g.add_input("x");
  Value* w = g.add_input("w");
  Value* b = g.add_input("b");
  Value* shape = int_list(g, {i64(g, 3), i64(g, 4)});
  Value* eps = cst(g, IValue(1e-5));
  Value* on = cst(g, IValue(true));
  g.register_output(call(g, "layer_norm", {x, shape, w, b, eps, on}));
  g.register_output(call(g, "layer_norm", {x, shape}));  // no affine, default eps
  Stack in = {IValue(randf({2, 3, 4}) * 3 + 1), IValue(randf({3, 4})), IValue(randf({3, 4}))};
  auto h = check_equivalent(g, decompose, in, 1e-4, 1e-5);
  std::string text = h->str();
  EXPECT_TRUE(check_not(text, "aten::layer_norm")) << text;
  EXPECT_TRUE(check_order(text, {"aten::mean", "aten::var", "aten::add", "aten::sqrt", "aten::sub",
                                 "aten::div", "aten::mul(", ", %w)", "aten::add(", ", %b, ",
                                 "aten::mean", "aten::var", "aten::div"}))
      << text;
  EXPECT_TRUE(check_order(text, {"prim::Constant[value=[-2, -1]]()"})) << text;
}

TEST(JitPasses, DecomposeSoftmax) {
  Graph g;
  Value* x = g.add_input("x");
  g.register_output(call(g, "softmax.int", {x, i64(g, 1), cst(g, IValue())}));
  g.register_output(call(g, "softmax.int", {x, i64(g, 0), cst(g, IValue(kDouble))}));  // stays
  Value* d = g.add_input("d", Type::int_type());
  g.register_output(call(g, "softmax.int", {x, d, cst(g, IValue())}));  // unknown dim: stays
  auto copy = g.copy();
  decompose(*copy);
  std::string text = copy->str();
  EXPECT_EQ(count(text, "aten::softmax"), 2u) << text;
  EXPECT_TRUE(check_order(text, {"aten::amax(%x", "aten::sub(%x", "aten::exp", "aten::sum",
                                 "aten::div", "aten::softmax"}))
      << text;
  // Values stay finite for large logits thanks to the max subtraction.
  Graph v;
  Value* vx = v.add_input("x");
  v.register_output(call(v, "softmax.int", {vx, i64(v, -1), cst(v, IValue())}));
  Tensor big = randf({3, 5}) * 100;
  auto h = check_equivalent(v, decompose, {IValue(big)});
  Tensor out = eval_graph(*h, {IValue(big)})[0].to_tensor();
  for (double e : retorch::testing::values(out)) EXPECT_TRUE(std::isfinite(e));
}

// ---------------------------------------------------------------- shapes

TEST(JitPasses, ShapePropagationFillsCompleteTypes) {
  Tensor xs = randf({2, 3}).set_requires_grad(true);
  Graph g;
  Value* x = g.add_input("x", Type::of_tensor(xs));
  Value* u = g.add_input("u");  // unknown type
  Value* y = call(g, "t", {x});
  Value* e = call(g, "eq.Tensor", {x, x});
  Value* s = call(g, "sum.dim_IntList",
                  {y, int_list(g, {i64(g, 0)}), cst(g, IValue(true)), cst(g, IValue())});
  Value* d = call(g, "to.dtype",
                  {s, cst(g, IValue(kDouble)), cst(g, IValue(false)), cst(g, IValue(false))});
  Value* m = call(g, "mm", {y, u});     // unknown input: unknown output
  Value* nz = call(g, "nonzero", {x});  // data-dependent shape
  Value* ex = call(g, "expand",
                   {call(g, "view", {x, int_list(g, {i64(g, 2), i64(g, 1), i64(g, 3)})}),
                    int_list(g, {i64(g, 2), i64(g, 4), i64(g, 3)}), cst(g, IValue(false))});
  for (Value* v : {y, e, s, d, m, nz, ex}) g.register_output(v);
  propagate_shapes(g);
  EXPECT_EQ(y->type()->str(), "Float(3, 2, strides=[1, 3], requires_grad=1, device=cpu)");
  EXPECT_EQ(e->type()->str(), "Bool(2, 3, strides=[3, 1], requires_grad=0, device=cpu)");
  EXPECT_EQ(s->type()->str(), "Float(1, 2, strides=[2, 1], requires_grad=1, device=cpu)");
  EXPECT_EQ(d->type()->str(), "Double(1, 2, strides=[2, 1], requires_grad=1, device=cpu)");
  EXPECT_EQ(m->type()->str(), "Tensor");
  EXPECT_EQ(nz->type()->str(), "Tensor");
  EXPECT_EQ(ex->type()->str(), "Float(2, 4, 3, strides=[3, 0, 1], requires_grad=1, device=cpu)");
  // The types are those of an eager run.
  Stack out = eval_graph(g, {IValue(xs), IValue(randf({2, 2}))});
  for (size_t i : {0, 1, 2, 3, 6})
    EXPECT_TRUE(Type::of_tensor(out[i].to_tensor())->equals(*g.outputs()[i]->type())) << i;
}

TEST(JitPasses, ShapePropagationThroughIf) {
  Tensor xs = randf({2, 3});
  Graph g;
  Value* c = g.add_input("c", Type::bool_type());
  Value* x = g.add_input("x", Type::of_tensor(xs));
  Node* n = g.insert_node(g.create("prim::If", {c}, 2));
  Block* t = n->add_block();
  Block* e = n->add_block();
  g.set_insert_point(t);
  t->register_output(call(g, "relu", {x}));
  t->register_output(call(g, "relu", {x}));
  g.set_insert_point(e);
  e->register_output(call(g, "neg", {x}));
  e->register_output(call(g, "t", {x}));  // another shape: the If output stays unknown
  g.set_insert_point(g.block());
  g.register_output(n->output(0));
  g.register_output(n->output(1));
  propagate_shapes(g);
  EXPECT_EQ(n->output(0)->type()->str(),
            "Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)");
  EXPECT_EQ(n->output(1)->type()->str(), "Tensor");
}

// ---------------------------------------------------------------- fusion

TEST(JitPasses, FusionGroupsPointwiseRuns) {
  Graph g;
  Value* x = g.add_input("x");
  Value* y = g.add_input("y");
  Value* w = g.add_input("w");
  Value* a = call(g, "mul.Tensor", {x, y});
  Value* b = call(g, "add.Tensor", {a, x, i64(g, 1)});
  Value* s =
      call(g, "sum.dim_IntList",
           {b, cst(g, IValue(std::vector<int64_t>{1})), cst(g, IValue(false)), cst(g, IValue())});
  Value* m = call(g, "mm", {x, w});  // not pointwise: ends the run
  Value* e = call(g, "exp", {m});
  Value* f = call(g, "neg", {e});
  g.insert_node(g.create("prim::Print", {f}, 0));  // side effect: ends the run
  Value* r = call(g, "relu", {f});                 // alone: not a group
  g.register_output(s);
  g.register_output(b);
  g.register_output(r);
  Stack in = {IValue(randf({3, 3})), IValue(randf({3, 3})), IValue(randf({3, 3}))};
  auto h = check_equivalent(g, create_fusion_groups, in);
  EXPECT_EQ(h->str(),
            "graph(%x : Tensor,\n"
            "      %y : Tensor,\n"
            "      %w : Tensor):\n"
            "  %4 : int = prim::Constant[value=1]()\n"
            "  %6 : int[] = prim::Constant[value=[1]]()\n"
            "  %7 : bool = prim::Constant[value=0]()\n"
            "  %8 : NoneType = prim::Constant()\n"
            "  %23 : Tensor, %24 : Tensor = prim::FusionGroup(%x, %y)\n"
            "    block0(%14 : Tensor, %15 : Tensor):\n"
            "      %16 : Tensor = aten::mul(%14, %15)\n"
            "      %17 : int = prim::Constant[value=1]()\n"
            "      %18 : Tensor = aten::add(%16, %14, %17)\n"
            "      %19 : int[] = prim::Constant[value=[1]]()\n"
            "      %20 : bool = prim::Constant[value=0]()\n"
            "      %21 : NoneType = prim::Constant()\n"
            "      %22 : Tensor = aten::sum(%18, %19, %20, %21)\n"
            "      -> (%18, %22)\n"
            "  %10 : Tensor = aten::mm(%x, %w)\n"
            "  %28 : Tensor = prim::FusionGroup(%10)\n"
            "    block0(%25 : Tensor):\n"
            "      %26 : Tensor = aten::exp(%25)\n"
            "      %27 : Tensor = aten::neg(%26)\n"
            "      -> (%27)\n"
            "   = prim::Print(%28)\n"
            "  %13 : Tensor = aten::relu(%28)\n"
            "  return (%24, %23, %13)\n");
  // Inlining the groups back gives the original nodes.
  auto back = check_equivalent(*h, inline_fusion_groups, in);
  std::string text = back->str();
  EXPECT_TRUE(check_not(text, "prim::FusionGroup")) << text;
  EXPECT_TRUE(check_order(text, {"aten::mul(%x, %y)", "aten::add", "aten::sum", "aten::mm",
                                 "aten::exp", "aten::neg", "prim::Print", "aten::relu"}))
      << text;
  EXPECT_TRUE(is_fusible_pointwise("aten::add.Tensor"));
  EXPECT_FALSE(is_fusible_pointwise("aten::mm"));
}

TEST(JitPasses, FusibleOpsAreRegistered) {
  // Every name the fuser knows is a registered operator (a renamed op would silently fall out).
  for (const char* name : {"exp", "add.Tensor", "where.self", "clamp", "masked_fill.Scalar",
                           "pow.Tensor_Scalar", "hardswish", "nan_to_num"}) {
    EXPECT_TRUE(is_fusible_pointwise(name)) << name;
    EXPECT_NE(Dispatcher::singleton().find(name), nullptr) << name;
  }
  size_t fusible = 0;
  for (OperatorHandle* h : Dispatcher::singleton().ops()) {
    std::string k(h->schema().name);
    if (!h->schema().overload.empty()) k += "." + std::string(h->schema().overload);
    if (is_fusible_pointwise(k)) ++fusible;
  }
  EXPECT_EQ(fusible, 100u);  // the size of the list: every entry names a registered op
}

TEST(JitPasses, FusionLeavesInPlaceAndBlocksApart) {
  Graph g;
  Value* c = g.add_input("c", Type::bool_type());
  Value* x = g.add_input("x");
  Value* a = call(g, "exp", {x});
  call(g, "relu_", {a});  // in-place: not fusible, splits exp | neg
  Value* b = call(g, "neg", {a});
  Node* n = g.insert_node(g.create("prim::If", {c}, 1));
  Block* t = n->add_block();
  Block* e = n->add_block();
  g.set_insert_point(t);
  t->register_output(call(g, "sigmoid", {call(g, "tanh", {b})}));  // fused inside the block
  g.set_insert_point(e);
  e->register_output(b);
  g.set_insert_point(g.block());
  g.register_output(n->output());
  auto h = check_equivalent(g, create_fusion_groups, {IValue(true), IValue(randf({4}))});
  std::string text = h->str();
  EXPECT_EQ(count(text, "prim::FusionGroup"), 1u) << text;
  EXPECT_TRUE(check_order(text, {"aten::exp", "aten::relu_", "aten::neg", "prim::If",
                                 "prim::FusionGroup", "aten::tanh", "aten::sigmoid"}))
      << text;
}

// ---------------------------------------------------------------- inlining

TEST(JitPasses, InlineCallsReplacesCallsByBodies) {
  Graph g;
  Value* x = g.add_input("x");
  Value* y = g.add_input("y");
  Node* outer = g.insert_node(g.create("prim::CallFunction", {x, y}, 1));
  Block* body = outer->add_block();
  Value* a = body->add_input("a");
  Value* b = body->add_input("b");
  g.set_insert_point(body);
  Value* m = call(g, "mul.Tensor", {a, b});
  Node* inner = g.insert_node(g.create("prim::CallFunction", {m}, 1));
  Block* ib = inner->add_block();
  Value* p = ib->add_input("p");
  g.set_insert_point(ib);
  ib->register_output(call(g, "relu", {p}));
  body->register_output(inner->output());
  g.set_insert_point(g.block());
  g.register_output(call(g, "add.Tensor", {outer->output(), x, i64(g, 1)}));
  auto h = check_equivalent(g, inline_calls, {IValue(randf({5})), IValue(randf({5}))});
  EXPECT_EQ(h->str(),
            "graph(%x : Tensor,\n"
            "      %y : Tensor):\n"
            "  %11 : Tensor = aten::mul(%x, %y)\n"
            "  %15 : Tensor = aten::relu(%11)\n"
            "  %9 : int = prim::Constant[value=1]()\n"
            "  %10 : Tensor = aten::add(%15, %x, %9)\n"
            "  return (%10)\n");
  // A call whose body does not match its arguments is an error, not a crash.
  Graph bad;
  Value* bx = bad.add_input("x");
  Node* c = bad.insert_node(bad.create("prim::CallFunction", {bx}, 1));
  c->add_block()->register_output(bx);  // the body takes no parameter
  bad.register_output(c->output());
  try {
    inline_calls(bad);
    FAIL();
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("prim::CallFunction passes 1 arguments"),
              std::string::npos)
        << err.what();
  }
}

// ---------------------------------------------------------------- pass manager

TEST(JitPasses, RegistryNamesThePasses) {
  std::vector<std::string> names;
  for (const auto& [name, pass] : all_passes()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"inline", "dce", "cse", "constprop", "pool",
                                             "peephole", "decompose", "shapes", "fuse", "unfuse"}));
  EXPECT_EQ(graph_pass("dce"), &eliminate_dead_code);
  EXPECT_EQ(graph_pass("eliminate_dead_code"), &eliminate_dead_code);
  Graph g;
  try {
    run_pipeline(g, {"dce", "dec"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown pass 'dec' (known passes: inline, dce, cse"),
              std::string::npos)
        << e.what();
  }
}

TEST(JitPasses, DefaultPipeline) {
  Graph g;
  Value* x = g.add_input("x");
  Node* callf = g.insert_node(g.create("prim::CallFunction", {x}, 1));
  Block* body = callf->add_block();
  Value* a = body->add_input("a");
  g.set_insert_point(body);
  Value* two = call(g, "add.Tensor", {scalar_cst(g, 1), scalar_cst(g, 1), i64(g, 1)});  // folds
  body->register_output(call(g, "mul.Tensor", {a, two}));
  g.set_insert_point(g.block());
  Value* u = call(g, "t", {call(g, "t", {callf->output()})});
  Value* v = call(g, "exp", {u});
  Value* w = call(g, "exp", {u});
  call(g, "neg", {x});  // dead
  g.register_output(call(g, "add.Tensor", {v, w, i64(g, 1)}));
  auto h = check_equivalent(g, run_default_pipeline, {IValue(randf({3, 2}))});
  EXPECT_EQ(h->str(),
            "graph(%x : Tensor):\n"
            "  %17 : int = prim::Constant[value=1]()\n"
            "  %20 : Float(requires_grad=0, device=cpu) = prim::Constant[value={2.}]()\n"
            "  %19 : Tensor = aten::mul(%x, %20)\n"
            "  %10 : Tensor = aten::exp(%19)\n"
            "  %14 : Tensor = aten::add(%10, %10, %17)\n"
            "  return (%14)\n");
}

TEST(JitPasses, LogPrintsGraphsAroundPasses) {
  auto make = [](Graph& g) {
    Value* x = g.add_input("x");
    call(g, "exp", {x});
    call(g, "exp", {x});
    g.register_output(x);
  };
  {
    Graph g;
    make(g);
    auto after_cse = g.copy();
    eliminate_common_subexpression(*after_cse);
    std::string before = after_cse->str();  // what dce sees
    JitLog log("dce");
    ::testing::internal::CaptureStderr();
    run_pipeline(g, {"cse", "dce"});
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(err, "[jit] before dce:\n" + before + "[jit] after dce:\n" +
                       "graph(%x : Tensor):\n  return (%x)\n");
  }
  {
    Graph g;
    make(g);
    std::string before = g.str();
    JitLog log(" >>peephole, >>cse ");  // peephole changes nothing: silent
    ::testing::internal::CaptureStderr();
    run_pipeline(g, {"peephole", "cse"});
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(err, "[jit] before cse:\n" + before + "[jit] after cse:\n" + g.str());
    EXPECT_EQ(count(g.str(), "aten::exp"), 1u);
  }
  {
    Graph g;
    make(g);
    ::testing::internal::CaptureStderr();
    run_pipeline(g, {"cse", "dce"});  // RETORCH_JIT_LOG unset: silent
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  }
}

TEST(JitPasses, MalformedGraphsGiveErrorsNotCrashes) {
  // Nodes with too few inputs for their schema are left alone by every rewrite.
  Graph g;
  Value* x = g.add_input("x");
  Value* t0 = g.insert_node(g.create_op(op("t"), {}, 1))->output();
  g.register_output(call(g, "t", {t0}));
  g.register_output(g.insert_node(g.create_op(op("addmm"), {x}, 1))->output());
  g.register_output(g.insert_node(g.create_op(op("relu"), {}, 1))->output());
  std::string before = g.str();
  for (const auto& [name, pass] : all_passes())
    if (name != "fuse") {
      EXPECT_NO_THROW(pass(g)) << name;
    }
  EXPECT_EQ(g.str(), before);
  // An If on a constant whose branch returns too few values.
  Graph h;
  Node* n = h.insert_node(h.create("prim::If", {cst(h, IValue(true))}, 1));
  n->add_block();
  n->add_block();
  h.register_output(n->output());
  EXPECT_THROW(constant_propagation(h), Error);
  EXPECT_NO_THROW(propagate_shapes(h));
  h.block()->erase_output(0);  // now unused: dce drops it from branches that lack it
  EXPECT_THROW(eliminate_dead_code(h), Error);
}
