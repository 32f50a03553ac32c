// JIT parser tests: parse(print(g)) prints g, PyTorch-style text, typed constants, and errors
// that name the line for malformed text.
#include <gtest/gtest.h>

#include <cmath>

#include "retorch/jit/IR.h"
#include "retorch/jit/Parser.h"
#include "retorch/jit/PassRegistry.h"
#include "retorch/jit/Schema.h"
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::jit;
using retorch::testing::op;

namespace {

// Parses g's text, checks that it prints the same and lints, and returns the parsed graph.
std::unique_ptr<Graph> round_trip(const Graph& g, const std::vector<Tensor>* consts = nullptr) {
  const std::string text = g.str();
  auto p = parse_ir(text, consts);
  EXPECT_EQ(p->str(), text);
  p->lint();
  // Printing without locations reads back too.
  const std::string bare = g.str(false);
  EXPECT_EQ(parse_ir(bare, consts)->str(false), bare);
  return p;
}

// The error message of parse_ir(text), or "(no error)".
std::string parse_error(std::string_view text, const std::vector<Tensor>* consts = nullptr) {
  try {
    parse_ir(text, consts);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

Value* constant(Graph& g, const IValue& v) {
  return g.insert_constant(v);
}

}  // namespace

TEST(JitParser, RoundTripsStraightLineGraphWithLocations) {
  Graph g;
  Value* x = g.add_input("x", Type::of_tensor(retorch::zeros({20, 20})));
  Value* y = g.add_input("y");
  Value* z = g.insert_node(g.create_op(op("mul.Tensor"), {x, y}, 1))->output();
  Node* add = g.insert_node(g.create_op(op("add.Tensor"), {z, x, constant(g, IValue(1))}, 1));
  add->set_source_location("model.py:3:0");
  z->node()->set_source_location("test_jit_parser.cpp:58");
  g.register_output(add->output());
  g.register_output(z);
  auto p = round_trip(g);
  // aten:: nodes get the same overloads back.
  std::vector<const OperatorHandle*> ops;
  for (Node* n : p->nodes()) ops.push_back(n->op());
  EXPECT_EQ(ops[0], &op("mul.Tensor"));
  EXPECT_EQ(ops[1], nullptr);  // prim::Constant
  EXPECT_EQ(ops[2], &op("add.Tensor"));
  EXPECT_EQ(p->inputs()[0]->debug_name(), "x");
  EXPECT_TRUE(p->inputs()[0]->type()->equals(*x->type()));
  EXPECT_EQ(p->outputs()[0]->node()->source_location(), "model.py:3:0");
}

TEST(JitParser, RoundTripsMultiOutputAndNoOutputNodes) {
  Graph g;
  Value* x = g.add_input("x");
  Node* mx = g.insert_node(
      g.create_op(op("max.dim"), {x, constant(g, IValue(1)), constant(g, IValue(false))}, 2));
  mx->output(1)->set_type(Type::tensor_with(TensorInfo{kLong, {}, {}, {}, {}}));
  g.insert_node(g.create("prim::Print", {mx->output(0), mx->output(1)}, 0));
  Node* tup = g.insert_node(g.create("prim::TupleConstruct", {mx->output(0), mx->output(1)}, 1));
  tup->output()->set_type(Type::tuple_of({Type::tensor_type(), mx->output(1)->type()}));
  Node* un = g.insert_node(g.create("prim::TupleUnpack", {tup->output()}, 2));
  un->output(0)->set_debug_name("values");
  g.register_output(un->output(1));
  g.register_output(un->output(0));
  EXPECT_EQ(g.str(),
            "graph(%x : Tensor):\n"
            "  %1 : int = prim::Constant[value=1]()\n"
            "  %2 : bool = prim::Constant[value=0]()\n"
            "  %3 : Tensor, %4 : Long() = aten::max(%x, %1, %2)\n"
            "   = prim::Print(%3, %4)\n"
            "  %5 : (Tensor, Long()) = prim::TupleConstruct(%3, %4)\n"
            "  %values : Tensor, %7 : Tensor = prim::TupleUnpack(%5)\n"
            "  return (%7, %values)\n");
  auto p = round_trip(g);
  Node* pmax = p->outputs()[0]->node()->input(0)->node()->input(0)->node();
  EXPECT_EQ(pmax->kind(), "aten::max");
  EXPECT_EQ(pmax->op(), &op("max.dim"));
  // `bool` + 0 reads back as false, not the int 0.
  auto c = to_constant(pmax->input(2));
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(c->is_bool());
  EXPECT_FALSE(c->to_bool());
}

TEST(JitParser, RoundTripsIfAndLoopBlocks) {
  Graph g;
  Value* c = g.add_input("c", Type::bool_type());
  Value* x = g.add_input("x");
  Value* n = g.add_input("n", Type::int_type());
  Node* iff = g.insert_node(g.create("prim::If", {c}, 1));
  iff->set_source_location("model.py:7:4");
  Block* then_b = iff->add_block();
  Block* else_b = iff->add_block();
  g.set_insert_point(then_b);
  Value* r = g.insert_node(g.create_op(op("relu"), {x}, 1))->output();
  then_b->register_output(r);
  else_b->register_output(x);
  g.set_insert_point(g.block());
  // prim::Loop(max_trip_count, initial condition, carried...): block(%i, %carried) -> (cond, ...)
  Value* t = constant(g, IValue(true));
  Node* loop = g.insert_node(g.create("prim::Loop", {n, t, iff->output()}, 1));
  Block* body = loop->add_block();
  body->add_input("i", Type::int_type());
  Value* acc = body->add_input("acc.1");
  g.set_insert_point(body);
  Value* doubled = g.insert_node(g.create_op(op("add.Tensor"), {acc, acc, constant(g, 1)}, 1))
                       ->set_source_location("model.py:9:8")
                       ->output();
  body->register_output(t);
  body->register_output(doubled);
  g.set_insert_point(g.block());
  g.register_output(loop->output());
  const std::string text =
      "graph(%c : bool,\n"
      "      %x : Tensor,\n"
      "      %n : int):\n"
      "  %3 : Tensor = prim::If(%c) # model.py:7:4\n"
      "    block0():\n"
      "      %4 : Tensor = aten::relu(%x)\n"
      "      -> (%4)\n"
      "    block1():\n"
      "      -> (%x)\n"
      "  %5 : bool = prim::Constant[value=1]()\n"
      "  %6 : Tensor = prim::Loop(%n, %5, %3)\n"
      "    block0(%i : int, %acc.1 : Tensor):\n"
      "      %9 : int = prim::Constant[value=1]()\n"
      "      %10 : Tensor = aten::add(%acc.1, %acc.1, %9) # model.py:9:8\n"
      "      -> (%5, %10)\n"
      "  return (%6)\n";
  ASSERT_EQ(g.str(), text);
  auto p = round_trip(g);
  EXPECT_EQ(p->num_nodes(), g.num_nodes());
  EXPECT_EQ(p->copy()->str(), text);
}

TEST(JitParser, NumbersSurviveOutOfOrderAndGaps) {
  // A pass inserted a node before older ones and deleted another: %6 comes before %2, and %4
  // is gone. The parser must give each value its printed number, not its position.
  Graph g;
  Value* x = g.add_input("x");
  Value* a = g.insert_node(g.create_op(op("relu"), {x}, 1))->output();           // %1
  Value* b = g.insert_node(g.create_op(op("neg"), {a}, 1))->output();            // %2
  Node* dead = g.insert_node(g.create_op(op("relu"), {x}, 1));                   // %3
  Value* c = g.insert_node(g.create_op(op("mul.Tensor"), {a, b}, 1))->output();  // %4
  dead->destroy();
  g.register_output(c);
  g.set_insert_point(a->node());
  Value* early = constant(g, IValue(2.5));                                 // %5, printed first
  Value* d = g.insert_node(g.create_op(op("sigmoid"), {x}, 1))->output();  // %6
  g.register_output(d);
  g.register_output(early);
  const std::string text =
      "graph(%x : Tensor):\n"
      "  %5 : float = prim::Constant[value=2.5]()\n"
      "  %6 : Tensor = aten::sigmoid(%x)\n"
      "  %1 : Tensor = aten::relu(%x)\n"
      "  %2 : Tensor = aten::neg(%1)\n"
      "  %4 : Tensor = aten::mul(%1, %2)\n"
      "  return (%4, %6, %5)\n";
  ASSERT_EQ(g.str(), text);
  auto p = round_trip(g);
  // New values in the parsed graph never reuse a printed number.
  Value* fresh = p->insert_constant(IValue(int64_t(7)));
  EXPECT_GT(fresh->unique(), 6u);
  // Names that are not numbers never collide with numbers either.
  auto q = parse_ir("graph(%a : Tensor):\n  %0 : Tensor = aten::relu(%a)\n  return (%0)\n");
  EXPECT_EQ(q->str(), "graph(%a : Tensor):\n  %0 : Tensor = aten::relu(%a)\n  return (%0)\n");
  EXPECT_NE(q->inputs()[0]->unique(), q->outputs()[0]->unique());
}

TEST(JitParser, ConstantsTakeTheirKindFromTheOutputType) {
  Graph g;
  Value* x = g.add_input("x");
  std::vector<Value*> cs = {
      constant(g, IValue(1.0)),
      constant(g, IValue(1e-5)),
      constant(g, IValue(-0.1)),
      constant(g, IValue(std::numeric_limits<double>::infinity())),
      constant(g, IValue(-std::numeric_limits<double>::infinity())),
      constant(g, IValue(std::numeric_limits<double>::quiet_NaN())),
      constant(g, IValue(int64_t(-9223372036854775807LL - 1))),
      constant(g, IValue(true)),
      constant(g, IValue(std::string("a \"quoted\"\\ line\nand\ttab"))),
      constant(g, IValue(std::vector<int64_t>{3, -1})),
      constant(g, IValue(std::vector<double>{0.5, 2.0})),
      constant(g, IValue(std::vector<int64_t>{})),
      constant(g, IValue(Device("cuda:1"))),
      constant(g, IValue(retorch::full({}, 2.5, kDouble))),
      constant(g, IValue(retorch::full({}, 3, kLong))),
      constant(g, IValue(retorch::arange(6).reshape({2, 3}))),
      constant(g, IValue()),
  };
  Node* list = g.insert_node(g.create("prim::ListConstruct", cs, 1));
  list->output()->set_type(Type::list_of(Type::any()));
  g.register_output(list->output());
  g.register_output(x);
  std::vector<Tensor> consts = {retorch::arange(6).reshape({2, 3})};
  auto p = round_trip(g, &consts);
  EXPECT_NE(g.str().find("[value=\"a \\\"quoted\\\"\\\\ line\\nand\\ttab\"]"), std::string::npos);
  EXPECT_NE(g.str().find("%14 : Double(requires_grad=0, device=cpu) = "
                         "prim::Constant[value={2.5}]()"),
            std::string::npos)
      << g.str();
  const auto& ins = p->outputs()[0]->node()->inputs();
  ASSERT_EQ(ins.size(), cs.size());
  auto val = [&](size_t i) { return *to_constant(ins[i]); };
  EXPECT_EQ(val(0).to_double(), 1.0);
  EXPECT_EQ(val(1).to_double(), 1e-5);
  EXPECT_EQ(val(2).to_double(), -0.1);
  EXPECT_TRUE(std::isinf(val(3).to_double()) && val(3).to_double() > 0);
  EXPECT_TRUE(std::isinf(val(4).to_double()) && val(4).to_double() < 0);
  EXPECT_TRUE(std::isnan(val(5).to_double()));
  EXPECT_EQ(val(6).to_int(), std::numeric_limits<int64_t>::min());
  EXPECT_TRUE(val(7).is_bool() && val(7).to_bool());
  EXPECT_EQ(val(8).to_string(), "a \"quoted\"\\ line\nand\ttab");
  EXPECT_EQ(val(9).to_int_list(), (std::vector<int64_t>{3, -1}));
  EXPECT_EQ(val(10).to_double_list(), (std::vector<double>{0.5, 2.0}));
  EXPECT_TRUE(val(11).is_int_list() && val(11).to_int_list().empty());
  EXPECT_EQ(val(12).to_device(), Device("cuda:1"));
  EXPECT_EQ(val(13).to_tensor().dtype(), kDouble);
  EXPECT_EQ(val(13).to_tensor().dim(), 0);
  EXPECT_EQ(val(13).to_tensor().item().to_double(), 2.5);
  EXPECT_EQ(val(14).to_tensor().dtype(), kLong);
  EXPECT_EQ(val(14).to_tensor().item().to_long(), 3);
  EXPECT_TRUE(val(15).to_tensor().is_same(consts[0]));
  EXPECT_TRUE(val(16).is_none());
  // A {scalar} under a plain Tensor type takes the literal's own dtype; a typed one the type's.
  auto q = parse_ir(
      "graph():\n"
      "  %0 : Tensor = prim::Constant[value={2.5}]()\n"
      "  %1 : Tensor = prim::Constant[value={2}]()\n"
      "  %2 : Float(requires_grad=0, device=cpu) = prim::Constant[value={2}]()\n"
      "  %3 : Bool() = prim::Constant[value={1}]()\n"
      "  return (%0, %1, %2, %3)\n");
  std::vector<ScalarType> dtypes;
  for (Value* v : q->outputs()) dtypes.push_back(to_constant(v)->to_tensor().dtype());
  EXPECT_EQ(dtypes, (std::vector<ScalarType>{kDouble, kLong, kFloat, kBool}));
  EXPECT_EQ(q->str().find("{2}]()\n  %3"), std::string::npos);  // Float prints {2.}
  EXPECT_NE(q->str().find("%2 : Float(requires_grad=0, device=cpu) = prim::Constant[value={2.}]()"),
            std::string::npos)
      << q->str();
}

TEST(JitParser, AttributesOfOtherNodesKeepTheirLiteralKind) {
  const std::string text =
      "graph(%x : Tensor):\n"
      "  %1 : Tensor = prim::FusionGroup[name=\"fg\", dims=[1, 2], scale=0.5, n=-3, "
      "w=[1., 2.5], t={1.}, none=None](%x)\n"
      "  return (%1)\n";
  auto g = parse_ir(text);
  EXPECT_EQ(g->str(), text);
  Node* n = g->outputs()[0]->node();
  EXPECT_EQ(n->attr("name").to_string(), "fg");
  EXPECT_EQ(n->attr("dims").to_int_list(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(n->attr("scale").to_double(), 0.5);
  EXPECT_EQ(n->attr("n").to_int(), -3);
  EXPECT_EQ(n->attr("w").to_double_list(), (std::vector<double>{1.0, 2.5}));
  EXPECT_EQ(n->attr("t").to_tensor().dtype(), kDouble);
  EXPECT_TRUE(n->attr("none").is_none());
}

TEST(JitParser, ParsesEveryTypeSpelling) {
  std::vector<TypePtr> types = {
      Type::of_tensor(retorch::zeros({20, 20})),
      Type::of_tensor(retorch::zeros({2, 3}).t()),
      Type::of_tensor(retorch::zeros({}, kDouble)),
      Type::tensor_with(
          TensorInfo{kLong, std::vector<std::optional<int64_t>>{std::nullopt, 4}, {}, {}, {}}),
      Type::tensor_with(
          TensorInfo{{}, std::vector<std::optional<int64_t>>{2}, {}, true, Device("cuda:0")}),
      Type::tensor_with(TensorInfo{kBFloat16, {}, {}, false, {}}),
      Type::tensor_type(),
      Type::int_type(),
      Type::float_type(),
      Type::bool_type(),
      Type::str_type(),
      Type::none_type(),
      Type::device_type(),
      Type::number_type(),
      Type::any(),
      Type::generator_type(),
      Type::list_of(Type::int_type()),
      Type::optional_of(Type::tensor_type()),
      Type::list_of(Type::optional_of(Type::tensor_type())),
      Type::optional_of(Type::list_of(Type::float_type())),
      Type::tuple_of({Type::tensor_type(), Type::float_type()}),
      Type::tuple_of({}),
      Type::tuple_of({Type::tuple_of({Type::int_type()}), Type::list_of(Type::bool_type())}),
      Type::class_type("__torch__.LinearMod"),
      Type::list_of(Type::class_type("__torch__.a.B")),
  };
  for (const TypePtr& t : types) {
    TypePtr p = parse_type(t->str());
    EXPECT_TRUE(p->equals(*t)) << t->str() << " read back as " << p->str();
    EXPECT_EQ(p->str(), t->str());
  }
  EXPECT_EQ(parse_type("Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)")->str(),
            "Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)");
  EXPECT_TRUE(
      parse_type("Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)")->is_complete_tensor());
  EXPECT_TRUE(parse_type("Double(strides=[], requires_grad=0, device=cpu)")->is_complete_tensor());
  EXPECT_TRUE(parse_type("Double(requires_grad=0, device=cpu)")->is_complete_tensor());
  EXPECT_EQ(parse_type("Float")->str(), "Float()");
  EXPECT_EQ(parse_type(" int [ ] ?")->str(), "int[]?");
  EXPECT_THROW(parse_type("Flaot(2)"), Error);
  EXPECT_THROW(parse_type("Float(2, strides=[1, 1])"), Error);
  EXPECT_THROW(parse_type("Float(requires_grad=2)"), Error);
  EXPECT_THROW(parse_type("Float(device=tpu)"), Error);
  EXPECT_THROW(parse_type("Float(device=cuda:300)"), Error);
  EXPECT_THROW(parse_type("Float(device=cpu, 2)"), Error);
  EXPECT_THROW(parse_type("int[] x"), Error);
  EXPECT_THROW(parse_type(std::string(100000, '(')), Error);
  EXPECT_THROW(parse_type("int" +
                          [] {
                            std::string s;
                            for (int i = 0; i < 100000; ++i) s += "[]";
                            return s;
                          }()),
               Error);
}

TEST(JitParser, ReadsPyTorchsLinearModGraph) {
  // As torch.jit.trace(LinearMod(), torch.rand(20, 20)).graph prints it.
  const std::string text =
      "graph(%self : __torch__.LinearMod,\n"
      "      %input : Float(20, 20, strides=[20, 1], requires_grad=0, device=cpu)):\n"
      "  %weight : Tensor = prim::GetAttr[name=\"weight\"](%self)\n"
      "  %bias : Tensor = prim::GetAttr[name=\"bias\"](%self)\n"
      "  %4 : Float(20, 20, strides=[20, 1], requires_grad=1, device=cpu) = "
      "aten::linear(%input, %weight, %bias) # /usr/lib/python3/dist-packages/torch/nn/modules/"
      "linear.py:114:0\n"
      "  return (%4)\n";
  auto g = parse_ir(text);
  g->lint();
  EXPECT_EQ(g->str(), text);
  EXPECT_EQ(g->inputs()[0]->type()->kind(), TypeKind::kClass);
  EXPECT_EQ(g->inputs()[0]->type()->name(), "__torch__.LinearMod");
  Node* lin = g->outputs()[0]->node();
  EXPECT_EQ(lin->op(), &op("linear"));
  EXPECT_EQ(lin->source_location(),
            "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py:114:0");
  EXPECT_EQ(lin->input(1)->node()->attr("name").to_string(), "weight");
  EXPECT_TRUE(lin->output()->type()->is_complete_tensor());
  // The printed text is what PyTorch prints, apart from where PyTorch says `Tensor` for the
  // attributes; extra whitespace and comments are fine.
  auto loose = parse_ir(
      "# a comment\n"
      "graph( %self : __torch__.LinearMod , %input : Tensor ) :\n"
      "  # another\n"
      "  %weight : Tensor = prim::GetAttr [ name = \"weight\" ] ( %self )\n"
      "  %b : NoneType = prim::Constant()\n"
      "  %4 : Tensor = aten::linear(%input, %weight, %b)\n"
      "  return ( %4 )\n");
  EXPECT_EQ(loose->outputs()[0]->node()->op(), &op("linear"));
}

TEST(JitParser, ParsedGraphsLintAndRejectBadScoping) {
  const std::string use_before_def =
      "graph(%x : Tensor):\n"
      "  %2 : Tensor = aten::mul(%x, %1)\n"
      "  %1 : Tensor = aten::relu(%x)\n"
      "  return (%2)\n";
  std::string e = parse_error(use_before_def);
  EXPECT_NE(e.find("line 2, column 31"), std::string::npos) << e;
  EXPECT_NE(e.find("%1 is used before it is defined"), std::string::npos) << e;

  const std::string outside_block =
      "graph(%c : bool, %x : Tensor):\n"
      "  %2 : Tensor = prim::If(%c)\n"
      "    block0():\n"
      "      %3 : Tensor = aten::relu(%x)\n"
      "      -> (%3)\n"
      "    block1():\n"
      "      -> (%x)\n"
      "  return (%3)\n";
  e = parse_error(outside_block);
  EXPECT_NE(e.find("line 8"), std::string::npos) << e;
  EXPECT_NE(e.find("outside the block"), std::string::npos) << e;

  // A node's blocks cannot use the node's own outputs (found by the fuzzer).
  e = parse_error(
      "graph(%c : bool, %x : Tensor):\n"
      "  %2 : Tensor = prim::If(%c)\n"
      "    block0():\n"
      "      -> (%2)\n"
      "    block1():\n"
      "      -> (%x)\n"
      "  return (%2)\n");
  EXPECT_NE(e.find("line 4, column 11: value %2 is used before it is defined"), std::string::npos)
      << e;

  e = parse_error("graph(%x : Tensor, %x : Tensor):\n  return (%x)\n");
  EXPECT_NE(e.find("line 1, column 20: value %x is defined twice"), std::string::npos) << e;
  e = parse_error("graph(%x : Tensor):\n  %x : Tensor = aten::relu(%x)\n  return (%x)\n");
  EXPECT_NE(e.find("line 2"), std::string::npos) << e;
  // A self-use is a use before definition.
  e = parse_error("graph():\n  %1 : Tensor = aten::relu(%1)\n  return (%1)\n");
  EXPECT_NE(e.find("line 2, column 28: value %1 is used before"), std::string::npos) << e;
}

TEST(JitParser, MalformedTextNamesTheLine) {
  struct Case {
    std::string text;
    std::string where;  // "line L" (and column) expected in the message
    std::string what;   // a fragment of the message
  };
  const std::string head = "graph(%x : Tensor):\n";
  const std::vector<Case> cases = {
      {"", "line 1, column 1", "expected 'graph('"},
      {"grph(%x : Tensor):\n  return (%x)\n", "line 1, column 1", "expected 'graph('"},
      {"graph(%x Tensor):\n  return (%x)\n", "line 1, column 10", "expected ':'"},
      {"graph(%x : Tensr):\n  return (%x)\n", "line 1, column 12", "unknown type 'Tensr'"},
      {"graph(%x : Tensor)\n  return (%x)\n", "line 2, column 3", "expected ':'"},
      {head + "  return (%x)\n  %1 : int = prim::Constant[value=1]()\n", "line 3",
       "expected the end of the text"},
      {head + "  %1 : int = prim::Constant[value=1]()\n", "line 3", "'return (...)'"},
      {head + "  %1 : Tensor = aten::no_such_op(%x)\n  return (%1)\n", "line 2, column 17",
       "unknown operator aten::no_such_op"},
      {head + "  %1 : Tensor = aten::add(%x)\n  return (%1)\n", "line 2, column 17",
       "no overload of aten::add takes arguments (Tensor)"},
      {head + "  %1 : Tensor, %2 : Tensor = aten::relu(%x)\n  return (%1)\n", "line 2",
       "aten::relu returns 1 values but the node has 2 outputs"},
      {head + "  %1 : Tensor = relu(%x)\n  return (%1)\n", "line 2, column 17",
       "expected a node kind"},
      {head + "  %1 : Tensor = aten::relu(%x\n  return (%1)\n", "line 3, column 3",
       "expected ')' closing the inputs of aten::relu"},
      {head + "  %1 : int = prim::Constant[value=]()\n  return (%1)\n", "line 2, column 35",
       "expected an attribute value"},
      {head + "  %1 : int = prim::Constant[value=\"abc]()\n  return (%1)\n", "line 2, column 35",
       "unterminated string"},
      {head + "  %1 : str = prim::Constant[value=\"a\\qb\"]()\n  return (%1)\n",
       "line 2, column 37", "unknown escape"},
      {head + "  %1 : int = prim::Constant[value=99999999999999999999]()\n  return (%1)\n",
       "line 2, column 35", "integer out of range"},
      {head + "  %1 : int = prim::Constant[value=1e]()\n  return (%1)\n", "line 2, column 36",
       "exponent"},
      {head + "  %1 : bool = prim::Constant[value=2]()\n  return (%1)\n", "line 2, column 36",
       "does not fit its type bool"},
      {head + "  %1 : int = prim::Constant[value=\"a\"]()\n  return (%1)\n", "line 2",
       "does not fit its type int"},
      {head + "  %1 : Device = prim::Constant[value=\"tpu\"]()\n  return (%1)\n", "line 2",
       "'tpu' is not a device"},
      {head + "  %1 : Long() = prim::Constant[value={2.5}]()\n  return (%1)\n", "line 2",
       "is not an integer"},
      {head + "  %1 : Tensor = prim::Constant[value=<Tensor>]()\n  return (%1)\n", "line 2",
       "no tensor constants were given"},
      {head + "  %1 : int = prim::Constant[value=1, value=2]()\n  return (%1)\n",
       "line 2, column 38", "attribute 'value' given twice"},
      {head + "  %1 : Tensor = prim::If(%x)\n    block1():\n      -> (%x)\n  return (%1)\n",
       "line 3, column 5", "expected block0"},
      {head + "  %1 : Tensor = prim::If(%x)\n    block0():\n", "line 4, column 1",
       "'-> (...)' closing the block, found the end of the text"},
      {head + "  %1 : Tensor = prim::If(%x)\n    block0():\n      return (%x)\n",
       "line 4, column 7", "'-> (...)' closing the block"},
      {head + "  -> (%x)\n", "line 2, column 3", "'return (...)'"},
      {head + "  return (%x, )\n", "line 2, column 15", "expected a value name"},
      {head + "  return (%99999999999999)\n", "line 2, column 11", "too large"},
      {head + "  %1 : Float(2, 3, strides=[1]) = aten::relu(%x)\n  return (%1)\n", "line 2",
       "2 sizes but 1 strides"},
      {head + "  return (%x) # trailing\nextra", "line 3, column 1", "expected the end"},
  };
  for (const Case& c : cases) {
    std::string e = parse_error(c.text);
    EXPECT_NE(e.find(c.where), std::string::npos) << "text:\n" << c.text << "error: " << e;
    EXPECT_NE(e.find(c.what), std::string::npos) << "text:\n" << c.text << "error: " << e;
  }
  // Running out of tensor constants is an error too.
  std::vector<Tensor> one = {retorch::ones({2})};
  std::string two_consts = head +
                           "  %1 : Tensor = prim::Constant[value=<Tensor>]()\n"
                           "  %2 : Tensor = prim::Constant[value=<Tensor>]()\n"
                           "  return (%1, %2)\n";
  std::string e = parse_error(two_consts, &one);
  EXPECT_NE(e.find("line 3"), std::string::npos) << e;
  EXPECT_NE(e.find("only 1 tensor constants were given"), std::string::npos) << e;
}

TEST(JitParser, DeepNestingIsAnErrorNotACrash) {
  std::string text = "graph(%c : bool):\n";
  for (int i = 0; i < 200; ++i)
    text += "  %" + std::to_string(i + 1) + " : int = prim::If(%c)\n    block0():\n";
  std::string e = parse_error(text);
  EXPECT_NE(e.find("blocks nested too deeply"), std::string::npos) << e;
  // 60 levels are fine.
  std::string ok = "graph(%c : bool):\n";
  std::string close;
  for (int i = 0; i < 60; ++i) {
    ok += "   = prim::If(%c)\n    block0():\n";
    close += "      -> ()\n";
  }
  ok += close + "  return ()\n";
  auto g = parse_ir(ok);
  g->lint();
  EXPECT_EQ(parse_ir(g->str())->str(), g->str());
}

TEST(JitPassRegistry, FindsRegisteredPasses) {
  EXPECT_NE(find_pass("lint"), nullptr);
  EXPECT_EQ(find_pass("no_such_pass"), nullptr);
  register_pass("test_rename_inputs", [](Graph& g) { g.inputs()[0]->set_debug_name("renamed"); });
  auto names = pass_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "lint"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "test_rename_inputs"), names.end());
  auto g = parse_ir("graph(%x : Tensor):\n  return (%x)\n");
  find_pass("test_rename_inputs")(*g);
  find_pass("lint")(*g);
  EXPECT_EQ(g->str(), "graph(%renamed : Tensor):\n  return (%renamed)\n");
  EXPECT_THROW(register_pass("", nullptr), Error);
}
