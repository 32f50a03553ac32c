// JIT IR tests: building graphs by hand, uses and replacement, blocks, printing, copy, lint.
#include <gtest/gtest.h>

#include "retorch/jit/IR.h"
#include "retorch/jit/Schema.h"
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::jit;
using retorch::testing::op;

namespace {

// graph(%x, %y): %z = aten::mul(%x, %y); %w = aten::add(%z, %x, 1); return (%w)
struct MulAdd {
  Graph g;
  Value *x, *y, *z, *w;
  MulAdd() {
    x = g.add_input("x");
    y = g.add_input("y");
    z = g.insert_node(g.create_op(op("mul.Tensor"), {x, y}, 1))->output();
    Value* one = g.insert_constant(IValue(int64_t(1)));
    w = g.insert_node(g.create_op(op("add.Tensor"), {z, x, one}, 1))->output();
    g.register_output(w);
  }
};

}  // namespace

TEST(JitIR, PrintsPyTorchTextForm) {
  MulAdd m;
  m.w->node()->set_source_location("model.py:3:0");
  EXPECT_EQ(m.g.str(),
            "graph(%x : Tensor,\n"
            "      %y : Tensor):\n"
            "  %2 : Tensor = aten::mul(%x, %y)\n"
            "  %3 : int = prim::Constant[value=1]()\n"
            "  %4 : Tensor = aten::add(%2, %x, %3) # model.py:3:0\n"
            "  return (%4)\n");
  EXPECT_EQ(m.g.str(/*print_source_locations=*/false).find("#"), std::string::npos);
  m.g.lint();
}

TEST(JitIR, TypesPrintLikePyTorch) {
  Tensor t = retorch::zeros({20, 20});
  EXPECT_EQ(Type::of_tensor(t)->str(),
            "Float(20, 20, strides=[20, 1], requires_grad=0, device=cpu)");
  EXPECT_EQ(Type::of_tensor(t.t())->str(),
            "Float(20, 20, strides=[1, 20], requires_grad=0, device=cpu)");
  TensorInfo partial;
  partial.dtype = kLong;
  partial.sizes = std::vector<std::optional<int64_t>>{std::nullopt, 4};
  EXPECT_EQ(Type::tensor_with(partial)->str(), "Long(*, 4)");
  EXPECT_EQ(Type::list_of(Type::int_type())->str(), "int[]");
  EXPECT_EQ(Type::optional_of(Type::tensor_type())->str(), "Tensor?");
  EXPECT_EQ(Type::tuple_of({Type::tensor_type(), Type::float_type()})->str(), "(Tensor, float)");
  EXPECT_EQ(Type::class_type("__torch__.LinearMod")->str(), "__torch__.LinearMod");
  EXPECT_TRUE(Type::of_tensor(t)->is_subtype_of(*Type::tensor_type()));
  EXPECT_FALSE(Type::tensor_type()->is_subtype_of(*Type::of_tensor(t)));
  EXPECT_TRUE(Type::none_type()->is_subtype_of(*Type::optional_of(Type::int_type())));
  EXPECT_TRUE(Type::int_type()->is_subtype_of(*Type::number_type()));
  EXPECT_FALSE(Type::str_type()->is_subtype_of(*Type::number_type()));
  EXPECT_EQ(dtype_from_type_name("BFloat16"), kBFloat16);
  EXPECT_EQ(dtype_from_type_name("Quux"), std::nullopt);
}

TEST(JitIR, ConstantsPrintLikePyTorch) {
  EXPECT_EQ(constant_str(IValue(1.0)), "1.");
  EXPECT_EQ(constant_str(IValue(0.1)), "0.1");
  EXPECT_EQ(constant_str(IValue(1e-5)), "1e-05");
  EXPECT_EQ(constant_str(IValue(true)), "1");
  EXPECT_EQ(constant_str(IValue(std::string("a\"b"))), "\"a\\\"b\"");
  EXPECT_EQ(constant_str(IValue(std::vector<int64_t>{1, 2})), "[1, 2]");
  EXPECT_EQ(constant_str(IValue(retorch::full({}, 2.5))), "{2.5}");
  EXPECT_EQ(constant_str(IValue(retorch::ones({2}))), "<Tensor>");
  EXPECT_EQ(constant_str(IValue(Device("cpu"))), "\"cpu\"");
}

TEST(JitIR, UsesFollowEdits) {
  MulAdd m;
  ASSERT_EQ(m.x->uses().size(), 2u);
  EXPECT_EQ(m.z->uses().size(), 1u);
  // Replace %z (x*y) by %y everywhere: add now reads %y, mul becomes dead.
  m.z->replace_all_uses_with(m.y);
  EXPECT_FALSE(m.z->has_uses());
  EXPECT_EQ(m.w->node()->input(0), m.y);
  m.z->node()->destroy();
  m.g.lint();
  EXPECT_EQ(m.x->uses().size(), 1u);
  EXPECT_EQ(m.x->uses()[0].offset, 1u);
  // Removing the first input shifts the recorded offsets of the others.
  Node* add = m.w->node();
  add->remove_input(0);
  EXPECT_EQ(m.x->uses()[0].offset, 0u);
  m.g.lint();
  add->insert_input(0, m.y);
  EXPECT_EQ(m.x->uses()[0].offset, 1u);
  m.g.lint();
}

TEST(JitIR, DestroyRefusesLiveOutputs) {
  MulAdd m;
  EXPECT_THROW(m.z->node()->destroy(), Error);
  m.g.lint();
}

TEST(JitIR, DebugNamesStayUnique) {
  Graph g;
  Value* a = g.add_input("x");
  Value* b = g.add_input("x");
  EXPECT_EQ(b->debug_name(), "x");
  EXPECT_EQ(a->debug_name(), "x.1");
  EXPECT_THROW(a->set_debug_name("12"), Error);
}

TEST(JitIR, BlocksOfIfPrintAndCopy) {
  Graph g;
  Value* c = g.add_input("c", Type::bool_type());
  Value* x = g.add_input("x");
  Node* n = g.insert_node(g.create("prim::If", {c}, 1));
  Block* then_b = n->add_block();
  Block* else_b = n->add_block();
  g.set_insert_point(then_b);
  Value* r = g.insert_node(g.create_op(op("relu"), {x}, 1))->output();
  then_b->register_output(r);
  else_b->register_output(x);
  g.set_insert_point(g.block());
  g.register_output(n->output());
  const std::string text =
      "graph(%c : bool,\n"
      "      %x : Tensor):\n"
      "  %2 : Tensor = prim::If(%c)\n"
      "    block0():\n"
      "      %3 : Tensor = aten::relu(%x)\n"
      "      -> (%3)\n"
      "    block1():\n"
      "      -> (%x)\n"
      "  return (%2)\n";
  EXPECT_EQ(g.str(), text);
  g.lint();
  auto g2 = g.copy();
  g2->lint();
  EXPECT_EQ(g2->num_nodes(), g.num_nodes());
  // The copy numbers its values afresh but in the same order, so it prints the same.
  EXPECT_EQ(g2->str(), text);
  // Destroying the If frees its blocks' nodes.
  g.block()->erase_output(0);
  size_t before = g.num_nodes();
  n->destroy();
  EXPECT_EQ(g.num_nodes(), before - 6);  // If, relu, and two sentinels per block
  g.lint();
}

TEST(JitIR, LintCatchesUseBeforeDefinition) {
  MulAdd m;
  // Move the add before the mul that defines its input.
  m.w->node()->move_before(m.z->node());
  EXPECT_THROW(m.g.lint(), Error);
}

TEST(JitIR, InsertGraphInlines) {
  MulAdd callee;
  Graph g;
  Value* a = g.add_input("a");
  Value* b = g.add_input("b");
  auto outs = g.insert_graph(callee.g, {a, b});
  g.register_output(outs.at(0));
  g.lint();
  EXPECT_EQ(g.str(),
            "graph(%a : Tensor,\n"
            "      %b : Tensor):\n"
            "  %2 : Tensor = aten::mul(%a, %b)\n"
            "  %3 : int = prim::Constant[value=1]()\n"
            "  %4 : Tensor = aten::add(%2, %a, %3)\n"
            "  return (%4)\n");
}

TEST(JitIR, SideEffects) {
  Graph g;
  Value* x = g.add_input("x");
  Node* relu = g.insert_node(g.create_op(op("relu"), {x}, 1));
  Node* relu_ = g.insert_node(g.create_op(op("relu_"), {x}, 1));
  Node* drop = g.insert_node(
      g.create_op(op("dropout"), {x, g.insert_constant(0.5), g.insert_constant(true)}, 1));
  Node* print = g.insert_node(g.create("prim::Print", {x}, 0));
  EXPECT_FALSE(relu->has_side_effects());
  EXPECT_TRUE(relu_->has_side_effects());
  EXPECT_TRUE(relu_->is_mutating());
  EXPECT_TRUE(drop->has_side_effects());
  EXPECT_TRUE(print->has_side_effects());
  EXPECT_NE(g.str().find("   = prim::Print(%x)"), std::string::npos);
}

TEST(JitSchema, ParsesArgumentsAndReturns) {
  FunctionSchema s =
      parse_schema("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  EXPECT_EQ(s.name, "add");
  EXPECT_EQ(s.overload, "Tensor");
  ASSERT_EQ(s.args.size(), 3u);
  EXPECT_EQ(s.args[2].name, "alpha");
  EXPECT_TRUE(s.args[2].kwarg_only);
  EXPECT_FALSE(s.args[1].kwarg_only);
  EXPECT_EQ(s.args[2].type->str(), "Scalar");
  EXPECT_EQ(default_value(s.args[2]).to_int(), 1);
  ASSERT_EQ(s.returns.size(), 1u);

  FunctionSchema m = parse_schema(
      "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  ASSERT_EQ(m.returns.size(), 2u);
  EXPECT_EQ(m.returns[1].name, "indices");
  EXPECT_FALSE(default_value(m.args[2]).to_bool());

  FunctionSchema c =
      parse_schema("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  EXPECT_TRUE(c.args[0].mutated);
  FunctionSchema p = parse_schema(
      "f(int[2] padding=[0, 1], float? eps=1e-05, int[] k=3, ScalarType? dtype=None) -> Tensor");
  EXPECT_EQ(p.args[0].type->str(), "int[]");
  EXPECT_EQ(default_value(p.args[0]).to_int_list(), (std::vector<int64_t>{0, 1}));
  EXPECT_DOUBLE_EQ(default_value(p.args[1]).to_double(), 1e-5);
  EXPECT_EQ(default_value(p.args[2]).to_int_list(), (std::vector<int64_t>{3}));
  EXPECT_TRUE(default_value(p.args[3]).is_none());
  EXPECT_THROW(parse_schema("nonsense"), Error);
  EXPECT_THROW(parse_schema("f(Quux x) -> Tensor"), Error);
}

TEST(JitSchema, EveryRegisteredSchemaParses) {
  for (OperatorHandle* h : Dispatcher::singleton().ops()) {
    const FunctionSchema& s = schema_of(*h);
    EXPECT_EQ(int(s.args.size()), h->schema().num_args) << h->schema().schema;
    EXPECT_EQ(int(s.returns.size()), h->schema().num_returns) << h->schema().schema;
    for (const auto& a : s.args)
      if (a.default_value) EXPECT_NO_THROW(default_value(a)) << h->schema().schema << " " << a.name;
  }
}

TEST(JitSchema, ResolvesOverloadsByType) {
  auto T = Type::tensor_type();
  auto I = Type::int_type();
  auto F = Type::float_type();
  EXPECT_EQ(resolve_overload("aten::add", {T, T, I}).schema().overload, "Tensor");
  EXPECT_EQ(resolve_overload("aten::masked_fill", {T, T, F}).schema().overload, "Scalar");
  EXPECT_EQ(resolve_overload("aten::masked_fill", {T, T, T}).schema().overload, "Tensor");
  EXPECT_EQ(resolve_overload("aten::to",
                             {T, Type::scalar_type_type(), Type::bool_type(), Type::bool_type()})
                .schema()
                .overload,
            "dtype");
  EXPECT_EQ(resolve_overload("aten::linear", {T, T, Type::none_type()}).schema().name, "linear");
  EXPECT_EQ(resolve_overload("aten::masked_fill.Tensor", {}).schema().overload, "Tensor");
  EXPECT_THROW(resolve_overload("aten::no_such_op", {T}), Error);
  try {
    resolve_overload("aten::add", {Type::str_type(), T, I});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("no overload of aten::add takes arguments (str, Tensor, int)"),
        std::string::npos)
        << e.what();
  }
}
