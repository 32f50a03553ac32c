// JIT pass tests, part 1: dead code, common subexpressions, constants and peepholes, on graphs
// built with the IR API; each pass is checked where it must fire, where it must not, and for
// unchanged values (the evaluator in jit_pass_helpers.h).
#include "jit_pass_helpers.h"
#include "retorch/jit/passes/Passes.h"

using namespace jit_test;

namespace {

Tensor randf(std::vector<int64_t> sizes) {
  return retorch::randn(sizes);
}

}  // namespace

// ---------------------------------------------------------------- dead code

TEST(JitPasses, DeadCodeRemovesUnusedPureNodes) {
  Graph g;
  Value* x = g.add_input("x");
  Value* y = g.add_input("y");
  Value* a = call(g, "mul.Tensor", {x, y});
  call(g, "exp", {a});  // dead, and makes a dead once removed
  Value* r = call(g, "relu", {x});
  g.register_output(r);
  eliminate_dead_code(g);
  g.lint();
  EXPECT_EQ(g.str(),
            "graph(%x : Tensor,\n"
            "      %y : Tensor):\n"
            "  %4 : Tensor = aten::relu(%x)\n"
            "  return (%4)\n");
}

TEST(JitPasses, DeadCodeKeepsSideEffects) {
  Graph g;
  Value* x = g.add_input("x");
  Value* v = call(g, "t", {x});
  call(g, "relu_", {v});  // mutates x through the view v: both nodes stay
  call(g, "add_.Tensor", {x, x, cst(g, IValue(int64_t(1)))});
  call(g, "dropout", {x, cst(g, IValue(0.5)), cst(g, IValue(true))});
  call(g, "rand_like", {x, cst(g, IValue()), cst(g, IValue())});
  g.insert_node(g.create("prim::Print", {x}, 0));
  g.insert_node(g.create("prim::SetAttr", {x}, 0));  // unknown kind: might do anything
  g.register_output(x);
  std::string before = g.str();
  eliminate_dead_code(g);
  EXPECT_EQ(g.str(), before);
  // The values: x after relu_(t(x)) then x += x.
  Tensor in = retorch::tensor({-1.0f, 2.0f, -3.0f, 4.0f}).reshape({2, 2});
  Graph h;  // the same without SetAttr, which the evaluator cannot run
  Value* hx = h.add_input("x");
  call(h, "relu_", {call(h, "t", {hx})});
  call(h, "add_.Tensor", {hx, hx, cst(h, IValue(int64_t(1)))});
  h.register_output(hx);
  auto h2 = check_equivalent(h, eliminate_dead_code, {IValue(in)});
  EXPECT_EQ(h2->str(), h.str());
  EXPECT_EQ(retorch::testing::values(eval_graph(h, {IValue(in)})[0].to_tensor()),
            (std::vector<double>{0, 4, 0, 8}));
}

TEST(JitPasses, DeadCodeRecursesIntoBlocksAndDropsUnusedIfOutputs) {
  Graph g;
  Value* c = g.add_input("c", Type::bool_type());
  Value* x = g.add_input("x");
  Node* n = g.insert_node(g.create("prim::If", {c}, 2));
  Block* t = n->add_block();
  Block* e = n->add_block();
  g.set_insert_point(t);
  call(g, "sigmoid", {x});  // dead inside the block
  Value* r = call(g, "relu", {x});
  Value* s = call(g, "neg", {x});
  t->register_output(r);
  t->register_output(s);
  g.set_insert_point(e);
  g.insert_node(g.create("prim::Print", {x}, 0));
  e->register_output(x);
  e->register_output(x);
  g.set_insert_point(g.block());
  g.register_output(n->output(0));  // output 1 (neg) is unused
  auto h = check_equivalent(g, eliminate_dead_code, {IValue(true), IValue(randf({3}))});
  EXPECT_EQ(h->str(),
            "graph(%c : bool,\n"
            "      %x : Tensor):\n"
            "  %2 : Tensor = prim::If(%c)\n"
            "    block0():\n"
            "      %5 : Tensor = aten::relu(%x)\n"
            "      -> (%5)\n"
            "    block1():\n"
            "       = prim::Print(%x)\n"
            "      -> (%x)\n"
            "  return (%2)\n");
  // The whole If goes when nothing reads it and neither branch has side effects.
  Graph g2;
  Value* c2 = g2.add_input("c", Type::bool_type());
  Value* x2 = g2.add_input("x");
  Node* n2 = g2.insert_node(g2.create("prim::If", {c2}, 1));
  n2->add_block()->register_output(x2);
  n2->add_block()->register_output(x2);
  g2.register_output(x2);
  eliminate_dead_code(g2);
  EXPECT_TRUE(check_not(g2.str(), "prim::If"));
}

// ---------------------------------------------------------------- CSE

TEST(JitPasses, CseMergesIdenticalPureNodes) {
  Graph g;
  Value* x = g.add_input("x");
  Value* y = g.add_input("y");
  Value* a = call(g, "mul.Tensor", {x, y});
  Value* b = call(g, "mul.Tensor", {x, y});
  Value* c = call(g, "mul.Tensor", {y, x});  // other order: not the same node
  Value* one = cst(g, IValue(int64_t(1)));
  Value* one2 = cst(g, IValue(int64_t(1)));
  Value* two = cst(g, IValue(int64_t(2)));
  Value* s1 = call(g, "add.Tensor", {a, c, one});
  Value* s2 = call(g, "add.Tensor", {b, c, one2});  // same as s1 once b = a and one2 = one
  Value* s3 = call(g, "add.Tensor", {b, c, two});
  g.register_output(s1);
  g.register_output(s2);
  g.register_output(s3);
  Stack in = {IValue(randf({2, 3})), IValue(randf({2, 3}))};
  auto h = check_equivalent(g, eliminate_common_subexpression, in);
  std::string text = h->str();
  EXPECT_EQ(count(text, "aten::mul"), 2u) << text;
  EXPECT_EQ(count(text, "aten::add"), 2u) << text;
  EXPECT_EQ(count(text, "prim::Constant[value=1]"), 1u) << text;
  EXPECT_TRUE(check_order(text, {"return (%8, %8, %10)"})) << text;
}

TEST(JitPasses, CseScopesBlocks) {
  Graph g;
  Value* c = g.add_input("c", Type::bool_type());
  Value* x = g.add_input("x");
  Value* outer = call(g, "exp", {x});
  Node* n = g.insert_node(g.create("prim::If", {c}, 1));
  Block* t = n->add_block();
  Block* e = n->add_block();
  g.set_insert_point(t);
  Value* inner = call(g, "exp", {x});       // reuses the enclosing block's exp
  Value* only_inner = call(g, "neg", {x});  // not visible after the If
  t->register_output(call(g, "add.Tensor", {inner, only_inner, cst(g, IValue(int64_t(1)))}));
  g.set_insert_point(e);
  e->register_output(outer);
  g.set_insert_point(g.block());
  Value* after = call(g, "neg", {x});
  g.register_output(call(g, "mul.Tensor", {n->output(), after}));
  auto h = check_equivalent(g, eliminate_common_subexpression, {IValue(true), IValue(randf({4}))});
  std::string text = h->str();
  EXPECT_EQ(count(text, "aten::exp"), 1u) << text;
  EXPECT_EQ(count(text, "aten::neg"), 2u) << text;
}

TEST(JitPasses, CseLeavesRandomAndMutatedValuesAlone) {
  Graph g;
  Value* x = g.add_input("x");
  Value* none = cst(g, IValue());
  Value* r1 = call(g, "rand_like", {x, none, none});
  Value* r2 = call(g, "rand_like", {x, none, none});
  Value* a = call(g, "exp", {x});
  call(g, "relu_", {x});
  Value* b = call(g, "exp", {x});  // x changed in between: must stay
  g.register_output(r1);
  g.register_output(r2);
  g.register_output(a);
  g.register_output(b);
  std::string before = g.str();
  eliminate_common_subexpression(g);
  EXPECT_EQ(g.str(), before);
  // The exps differ at run time, so merging them would have been wrong.
  Stack out = eval_graph(g, {IValue(retorch::tensor({-1.0f, 1.0f}))});
  EXPECT_EQ(retorch::testing::values(out[2].to_tensor())[0], std::exp(-1.0f));
  EXPECT_EQ(retorch::testing::values(out[3].to_tensor())[0], 1.0);
}

// ---------------------------------------------------------------- constant propagation

TEST(JitPasses, ConstantPropagationFoldsPureOps) {
  Graph g;
  Value* x = g.add_input("x");
  Value* a = cst(g, IValue(retorch::tensor({1.0f, 2.0f})));
  Value* b = cst(g, IValue(retorch::tensor({10.0f, 20.0f})));
  Value* s = call(g, "add.Tensor", {a, b, cst(g, IValue(int64_t(2)))});  // a + 2 * b
  Value* e = call(g, "neg", {s});
  Value* sizes = int_list(g, {cst(g, IValue(int64_t(2))), cst(g, IValue(int64_t(1)))});
  Value* v = call(g, "view", {e, sizes});
  g.register_output(call(g, "mul.Tensor", {x, v}));
  auto h = check_equivalent(g, constant_propagation, {IValue(randf({2, 2}))});
  eliminate_dead_code(*h);
  std::string text = h->str();
  EXPECT_TRUE(check_not(text, "aten::add")) << text;
  EXPECT_TRUE(check_not(text, "aten::neg")) << text;
  EXPECT_TRUE(check_not(text, "aten::view")) << text;
  EXPECT_TRUE(check_not(text, "prim::ListConstruct")) << text;
  EXPECT_TRUE(check_order(
      text,
      {"Float(2, 1, strides=[1, 1], requires_grad=0, device=cpu) = prim::Constant", "aten::mul"}))
      << text;
  Node* folded = h->outputs()[0]->node()->input(1)->node();
  ASSERT_EQ(folded->kind(), "prim::Constant");
  EXPECT_EQ(retorch::testing::values(constant_value(folded).to_tensor()),
            (std::vector<double>{-21, -42}));
}

TEST(JitPasses, ConstantPropagationFoldsIntListsAndIfs) {
  Graph g;
  Value* x = g.add_input("x");
  Value* list = int_list(g, {cst(g, IValue(int64_t(0))), cst(g, IValue(int64_t(1)))});
  Node* n = g.insert_node(g.create("prim::If", {cst(g, IValue(false))}, 1));
  Block* t = n->add_block();
  Block* e = n->add_block();
  g.set_insert_point(t);
  t->register_output(call(g, "relu", {x}));
  g.set_insert_point(e);
  e->register_output(call(g, "permute", {call(g, "neg", {x}), list}));
  g.set_insert_point(g.block());
  g.register_output(n->output());
  auto h = check_equivalent(g, constant_propagation, {IValue(randf({2, 3}))});
  eliminate_dead_code(*h);
  EXPECT_EQ(h->str(),
            "graph(%x : Tensor):\n"
            "  %9 : int[] = prim::Constant[value=[0, 1]]()\n"
            "  %7 : Tensor = aten::neg(%x)\n"
            "  %8 : Tensor = aten::permute(%7, %9)\n"
            "  return (%8)\n");
}

TEST(JitPasses, ConstantPropagationLeavesRandomMutatedAndFailingOps) {
  Graph g;
  Value* a = cst(g, IValue(retorch::ones({2, 2})));
  Value* none = cst(g, IValue());
  Value* r = call(g, "rand_like", {a, none, none});                        // random: not folded
  Value* bad = call(g, "mm", {a, cst(g, IValue(retorch::ones({3, 3})))});  // fails at run time
  Value* m = cst(g, IValue(retorch::ones({2})));
  Value* e = call(g, "exp", {m});  // m is mutated below: not folded
  call(g, "relu_", {m});
  Value* p = cst(g, IValue(retorch::ones({2}).set_requires_grad(true)));
  Value* q = call(g, "mul.Tensor", {p, p});  // would cut p out of autograd
  g.register_output(r);
  g.register_output(bad);
  g.register_output(e);
  g.register_output(q);
  std::string before = g.str();
  constant_propagation(g);
  EXPECT_EQ(g.str(), before);
}

TEST(JitPasses, ConstantPoolingMergesAndHoists) {
  Graph g;
  Value* c = g.add_input("c", Type::bool_type());
  Value* x = g.add_input("x");
  Value* a = call(g, "mul.Tensor", {x, scalar_cst(g, 2)});
  Node* n = g.insert_node(g.create("prim::If", {c}, 1));
  Block* t = n->add_block();
  Block* e = n->add_block();
  g.set_insert_point(t);
  t->register_output(call(g, "add.Tensor", {a, scalar_cst(g, 2), cst(g, IValue(int64_t(1)))}));
  g.set_insert_point(e);
  e->register_output(call(g, "add.Tensor", {a, scalar_cst(g, -0.0), cst(g, IValue(int64_t(1)))}));
  g.set_insert_point(g.block());
  g.register_output(
      call(g, "add.Tensor", {n->output(), scalar_cst(g, 0.0), cst(g, IValue(int64_t(1)))}));
  for (bool cond : {true, false})
    check_equivalent(g, constant_pooling, {IValue(cond), IValue(randf({3}))});
  constant_pooling(g);
  g.lint();
  EXPECT_EQ(g.str(),
            "graph(%c : bool,\n"
            "      %x : Tensor):\n"
            "  %2 : Float(requires_grad=0, device=cpu) = prim::Constant[value={2.}]()\n"
            "  %6 : int = prim::Constant[value=1]()\n"
            "  %8 : Float(requires_grad=0, device=cpu) = prim::Constant[value={-0.}]()\n"
            "  %11 : Float(requires_grad=0, device=cpu) = prim::Constant[value={0.}]()\n"
            "  %3 : Tensor = aten::mul(%x, %2)\n"
            "  %4 : Tensor = prim::If(%c)\n"
            "    block0():\n"
            "      %7 : Tensor = aten::add(%3, %2, %6)\n"
            "      -> (%7)\n"
            "    block1():\n"
            "      %10 : Tensor = aten::add(%3, %8, %6)\n"
            "      -> (%10)\n"
            "  %13 : Tensor = aten::add(%4, %11, %6)\n"
            "  return (%13)\n");
}

// ---------------------------------------------------------------- peephole

namespace {

// graph(%x : <type of sample>) with %x marked with its complete type.
Value* typed_input(Graph& g, const char* name, const Tensor& sample) {
  return g.add_input(name, Type::of_tensor(sample));
}

}  // namespace

TEST(JitPasses, PeepholeRemovesArithmeticIdentitiesWhenTypesAgree) {
  Tensor xs = randf({2, 3});
  for (const char* op_name : {"add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor"}) {
    Graph g;
    Value* x = typed_input(g, "x", xs);
    bool additive = std::string(op_name) == "add.Tensor" || std::string(op_name) == "sub.Tensor";
    Value* k = scalar_cst(g, additive ? 0 : 1);
    std::vector<Value*> ins = {x, k};
    if (additive) ins.push_back(cst(g, IValue(int64_t(1))));
    Value* r = call(g, op_name, ins);
    r->set_type(Type::of_tensor(xs));  // as propagate_shapes would find
    g.register_output(call(g, "exp", {r}));
    auto h = check_equivalent(g, peephole, {IValue(xs)});
    EXPECT_TRUE(check_not(h->str(), op_name == std::string("add.Tensor")   ? "aten::add"
                                    : op_name == std::string("sub.Tensor") ? "aten::sub"
                                    : op_name == std::string("mul.Tensor") ? "aten::mul"
                                                                           : "aten::div"))
        << op_name;
    EXPECT_TRUE(check_order(h->str(), {"aten::exp(%x)"})) << h->str();
  }
}

TEST(JitPasses, PeepholeKeepsArithmeticWhenUnsafe) {
  Tensor xs = randf({2, 3});
  Tensor ints = retorch::ones({2, 3}, dtype(kLong));
  auto keeps = [](Graph& g, const char* what) {
    std::string before = g.str();
    peephole(g);
    EXPECT_EQ(g.str(), before) << what;
  };
  {  // the result's type is unknown
    Graph g;
    Value* x = typed_input(g, "x", xs);
    g.register_output(call(g, "add.Tensor", {x, scalar_cst(g, 0), cst(g, IValue(int64_t(1)))}));
    keeps(g, "unknown result type");
  }
  {  // int x / 1 is a float tensor: types differ after shape propagation
    Graph g;
    Value* x = typed_input(g, "x", ints);
    g.register_output(call(g, "div.Tensor", {x, scalar_cst(g, 1, kLong)}));
    propagate_shapes(g);
    EXPECT_TRUE(check_order(g.str(), {"Float(2, 3, strides=[3, 1]", "aten::div"}));
    keeps(g, "int division");
  }
  {  // int x + 0.5 * 0: a Double 0-dim zero promotes Long to Float
    Graph g;
    Value* x = typed_input(g, "x", ints);
    g.register_output(
        call(g, "add.Tensor", {x, scalar_cst(g, 0, kDouble), cst(g, IValue(int64_t(1)))}));
    propagate_shapes(g);
    keeps(g, "promotion");
  }
  {  // alpha != 1 and a nonzero constant
    Graph g;
    Value* x = typed_input(g, "x", xs);
    Value* a = call(g, "sub.Tensor", {x, scalar_cst(g, 0), cst(g, IValue(int64_t(2)))});
    Value* b = call(g, "mul.Tensor", {x, scalar_cst(g, 2)});
    g.register_output(a);
    g.register_output(b);
    propagate_shapes(g);
    keeps(g, "alpha 2, x * 2");
  }
  {  // broadcasting: x + zeros(3, 2, 3) has another shape
    Graph g;
    Value* x = typed_input(g, "x", xs);
    g.register_output(
        call(g, "add.Tensor",
             {x, cst(g, IValue(retorch::zeros({3, 2, 3}))), cst(g, IValue(int64_t(1)))}));
    propagate_shapes(g);
    keeps(g, "broadcast");
  }
  {  // the result is mutated later: replacing it by x would mutate x
    Graph g;
    Value* x = typed_input(g, "x", xs);
    Value* r = call(g, "mul.Tensor", {x, scalar_cst(g, 1)});
    call(g, "relu_", {r});
    g.register_output(x);
    g.register_output(r);
    propagate_shapes(g);
    r->set_type(Type::of_tensor(xs));
    keeps(g, "mutated result");
  }
}

TEST(JitPasses, PeepholeRemovesDoubleTransposes) {
  Tensor xs = randf({2, 3, 4});
  Graph g;
  Value* x = g.add_input("x");
  Value* m = g.add_input("m");
  Value* tt = call(g, "t", {call(g, "t", {m})});
  auto tr = [&](Value* v, int64_t a, int64_t b) {
    return call(g, "transpose.int", {v, cst(g, IValue(a)), cst(g, IValue(b))});
  };
  Value* same = tr(tr(x, 0, 2), 2, 0);
  Value* other = tr(tr(x, 0, 1), 1, 2);  // a different permutation: stays
  g.register_output(tt);
  g.register_output(same);
  g.register_output(other);
  auto h = check_equivalent(g, peephole, {IValue(xs), IValue(randf({2, 5}))});
  eliminate_dead_code(*h);
  std::string text = h->str();
  EXPECT_TRUE(check_not(text, "aten::t(")) << text;
  EXPECT_EQ(count(text, "aten::transpose"), 2u) << text;
  EXPECT_TRUE(check_order(text, {"return (%m, %x, "})) << text;
  // With the rank known, -1 and 2 are the same dim.
  Graph g2;
  Value* x2 = typed_input(g2, "x", xs);
  Value* a =
      call(g2, "transpose.int", {x2, cst(g2, IValue(int64_t(0))), cst(g2, IValue(int64_t(-1)))});
  g2.register_output(
      call(g2, "transpose.int", {a, cst(g2, IValue(int64_t(2))), cst(g2, IValue(int64_t(0)))}));
  peephole(g2);
  EXPECT_TRUE(check_order(g2.str(), {"return (%x)"})) << g2.str();
}

TEST(JitPasses, PeepholeRemovesNoOpConversions) {
  Tensor xs = randf({2, 3});
  Graph g;
  Value* x = typed_input(g, "x", xs);
  Value* xt = typed_input(g, "xt", xs.t());
  Value* f = cst(g, IValue(false));
  Value* a = call(g, "to.dtype", {x, cst(g, IValue(kFloat)), f, f});
  Value* b = call(g, "to.dtype", {a, cst(g, IValue(kDouble)), f, f});  // a real conversion
  Value* c = call(g, "to.dtype", {x, cst(g, IValue(kFloat)), f, cst(g, IValue(true))});  // copy
  Value* d = call(g, "to.device", {x, cst(g, IValue(Device("cpu"))), cst(g, IValue()), f, f});
  Value* e = call(g, "contiguous", {x});
  Value* e2 = call(g, "contiguous", {xt});  // not contiguous: stays
  Value* h1 = call(g, "expand",
                   {x, int_list(g, {cst(g, IValue(int64_t(-1))), cst(g, IValue(int64_t(3)))}), f});
  Value* h2 = call(g, "expand",
                   {x,
                    int_list(g, {cst(g, IValue(int64_t(4))), cst(g, IValue(int64_t(2))),
                                 cst(g, IValue(int64_t(3)))}),
                    f});
  for (Value* v : {a, b, c, d, e, e2, h1, h2}) g.register_output(v);
  auto h = check_equivalent(g, peephole, {IValue(xs), IValue(xs.t())});
  eliminate_dead_code(*h);
  std::string text = h->str();
  EXPECT_EQ(count(text, "aten::to"), 2u) << text;  // the Double conversion and the copy
  EXPECT_EQ(count(text, "aten::contiguous(%xt)"), 1u) << text;
  EXPECT_EQ(count(text, "aten::contiguous"), 1u) << text;
  EXPECT_EQ(count(text, "aten::expand"), 1u) << text;
  EXPECT_TRUE(check_order(text, {"aten::to(%x, ", "return (%x, ", ", %x, %x, "})) << text;
  // Without complete types nothing fires.
  Graph u;
  Value* ux = u.add_input("x");
  u.register_output(call(u, "contiguous", {ux}));
  u.register_output(call(
      u, "to.dtype", {ux, cst(u, IValue(kFloat)), cst(u, IValue(false)), cst(u, IValue(false))}));
  std::string before = u.str();
  peephole(u);
  EXPECT_EQ(u.str(), before);
}
