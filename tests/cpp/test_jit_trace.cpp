// JIT tracer, interpreter and ScriptModule tests: exact traced graphs, replay on new inputs,
// gradients through traced modules, in-place ops, warnings, threads, hand-built If/Loop graphs.
#include <gtest/gtest.h>

#include <thread>

#include "retorch/jit/Interpreter.h"
#include "retorch/jit/Tracer.h"
#include "retorch/nn/nn.h"
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::jit;
using retorch::testing::op;
using retorch::testing::all_close;
using retorch::testing::catch_error;
using retorch::testing::values;

namespace {

std::vector<Tensor> mul_add_relu(const std::vector<Tensor>& in) {
  return {(in[0] * 2 + in[1]).relu()};
}

// The node kinds of the top block, in order.
std::vector<std::string> kinds(const Graph& g) {
  std::vector<std::string> r;
  for (Node* n : g.nodes()) r.push_back(n->kind());
  return r;
}

bool has_kind(const Graph& g, const std::string& k) {
  for (Node* n : g.nodes())
    if (n->kind() == k) return true;
  return false;
}

// Parameter gradients after backward of sum(out^2) for each output.
std::vector<Tensor> grads_of(nn::Module& m, const std::vector<Tensor>& outs) {
  m.zero_grad();
  Tensor loss = zeros({});
  for (const Tensor& o : outs) loss = loss + (o * o).sum();
  loss.backward();
  std::vector<Tensor> g;
  for (const Tensor& p : m.parameters())
    g.push_back(p.grad().defined() ? p.grad().clone() : Tensor());
  return g;
}

std::vector<Tensor> tensors(const std::vector<IValue>& vs) {
  std::vector<Tensor> r;
  for (const IValue& v : vs) r.push_back(v.to_tensor());
  return r;
}

// Eager vs traced outputs and parameter gradients on a fresh input.
void expect_same_as_eager(nn::Module& m, const TracedFunction& fwd, const ScriptModule& sm,
                          const Tensor& x, double tol = 1e-5) {
  std::vector<Tensor> eager = fwd({x});
  std::vector<Tensor> ge = grads_of(m, eager);
  std::vector<Tensor> traced = tensors(sm.forward({IValue(x)}));
  ASSERT_EQ(traced.size(), eager.size());
  for (size_t i = 0; i < eager.size(); ++i) EXPECT_TRUE(all_close(traced[i], eager[i], tol, tol));
  std::vector<Tensor> gt = grads_of(m, traced);
  ASSERT_EQ(gt.size(), ge.size());
  for (size_t i = 0; i < ge.size(); ++i) {
    ASSERT_EQ(gt[i].defined(), ge[i].defined()) << "parameter " << i;
    if (ge[i].defined()) {
      EXPECT_TRUE(all_close(gt[i], ge[i], tol, tol)) << "parameter " << i;
    }
  }
}

}  // namespace

TEST(JitTrace, RecordsPointwiseFunctionExactly) {
  Tensor x = randn({2, 3}), y = randn({2, 3});
  ScriptFunction f = jit::trace(mul_add_relu, {x, y});
  const std::string t = "Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)";
  EXPECT_EQ(f.graph().str(),
            "graph(%0 : " + t + ",\n      %1 : " + t + "):\n" +
                "  %2 : Long(requires_grad=0, device=cpu) = prim::Constant[value={2}]()\n" +
                "  %3 : " + t + " = aten::mul(%0, %2)\n" +
                "  %4 : int = prim::Constant[value=1]()\n" + "  %5 : " + t +
                " = aten::add(%3, %1, %4)\n" + "  %6 : " + t + " = aten::relu(%5)\n" +
                "  return (%6)\n");
  EXPECT_EQ(f.code(), f.graph().str());
  // New inputs of the same shape give the eager result.
  Tensor a = randn({2, 3}), b = randn({2, 3});
  std::vector<IValue> out = f({IValue(a), IValue(b)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(all_close(out[0].to_tensor(), mul_add_relu({a, b})[0]));
  // Input names and source locations.
  TraceOptions o;
  o.input_names = {"x", "y"};
  int line = 0;
  auto g = trace_graph(
      [&](const std::vector<Tensor>& in) {
        SourceLocationGuard loc("model.cpp", line = __LINE__);
        return mul_add_relu(in);
      },
      {x, y}, o);
  std::string s = g->str();
  EXPECT_NE(s.find("aten::mul(%x, %2) # model.cpp:" + std::to_string(line) + "\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("aten::add(%3, %y, %4) # model.cpp:"), std::string::npos) << s;
}

TEST(JitTrace, CompositeOpsAreRecordedOnce) {
  nn::Linear fc(4, 3);
  Tensor x = randn({5, 4});
  ScriptModule sm = jit::trace(*fc, {x});
  const Graph& g = sm.graph();
  EXPECT_TRUE(has_kind(g, "aten::linear"));
  for (const char* k : {"aten::mm", "aten::addmm", "aten::matmul", "aten::t", "aten::add"})
    EXPECT_FALSE(has_kind(g, k)) << k << " in\n" << g.str();
  EXPECT_EQ(kinds(g), (std::vector<std::string>{"prim::GetAttr", "prim::GetAttr", "aten::linear"}));
  std::string s = g.str();
  EXPECT_NE(s.find("graph(%self : __torch__."), std::string::npos) << s;
  EXPECT_NE(s.find("%weight : Float(3, 4, strides=[4, 1], requires_grad=1, device=cpu) = "
                   "prim::GetAttr[name=\"weight\"](%self)"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("= aten::linear(%1, %weight, %bias)"), std::string::npos) << s;
  // The ScriptModule shares the module's tensors.
  ASSERT_EQ(sm.named_parameters().size(), 2u);
  EXPECT_EQ(sm.named_parameters()[0].first, "weight");
  EXPECT_EQ(sm.named_parameters()[0].second.impl(), fc->weight.impl());
  expect_same_as_eager(
      *fc, [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{fc(in[0])}; }, sm,
      randn({5, 4}));
}

TEST(JitTrace, MlpAndConvNetMatchEagerWithGradients) {
  nn::Sequential mlp(nn::Flatten(), nn::Linear(12, 8), nn::ReLU(), nn::Linear(8, 3));
  auto mlp_fwd = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{mlp(in[0])}; };
  ScriptModule smlp = jit::trace(*mlp, mlp_fwd, {randn({4, 3, 4})});
  EXPECT_NE(smlp.code().find("prim::GetAttr[name=\"1.weight\"](%self)"), std::string::npos)
      << smlp.code();
  expect_same_as_eager(*mlp, mlp_fwd, smlp, randn({4, 3, 4}));

  nn::Sequential conv(nn::Conv2d(nn::Conv2dOptions(2, 4, 3).padding(1)), nn::BatchNorm2d(4),
                      nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(), nn::Linear(4 * 3 * 3, 5));
  auto conv_fwd = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{conv(in[0])}; };
  ScriptModule sconv = jit::trace(*conv, conv_fwd, {randn({3, 2, 6, 6})});
  for (const char* k : {"aten::conv2d", "aten::batch_norm", "aten::relu", "aten::max_pool2d",
                        "aten::flatten", "aten::linear"})
    EXPECT_TRUE(has_kind(sconv.graph(), k)) << k << " missing in\n" << sconv.code();
  EXPECT_FALSE(has_kind(sconv.graph(), "aten::convolution"));
  expect_same_as_eager(*conv, conv_fwd, sconv, randn({3, 2, 6, 6}), 1e-4);
  // Eval mode (running statistics) traces and replays too.
  conv->eval();
  ScriptModule seval = jit::trace(*conv, conv_fwd, {randn({3, 2, 6, 6})});
  Tensor x = randn({3, 2, 6, 6});
  EXPECT_TRUE(all_close(seval.forward({IValue(x)})[0].to_tensor(), conv(x), 1e-5, 1e-5));
}

TEST(JitTrace, LstmMatchesEagerWithGradients) {
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).batch_first(true));
  auto fwd = [&](const std::vector<Tensor>& in) {
    auto [out, state] = lstm(in[0]);
    return std::vector<Tensor>{out, std::get<0>(state), std::get<1>(state)};
  };
  ScriptModule sm = jit::trace(*lstm, fwd, {randn({2, 5, 3})});
  ASSERT_EQ(sm.graph().outputs().size(), 3u);
  expect_same_as_eager(*lstm, fwd, sm, randn({2, 5, 3}), 1e-5);
}

TEST(JitTrace, InPlaceOpsAndViewsAreRecordedInOrder) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor y = in[0] * 2;
    y.add_(1);
    Tensor v = y.view({-1});
    return std::vector<Tensor>{v.relu_(), y};
  };
  Tensor x = randn({2, 3});
  ScriptFunction f = jit::trace(fn, {x});
  const Graph& g = f.graph();
  std::vector<Node*> ops;
  for (Node* n : g.nodes())
    if (n->kind().rfind("aten::", 0) == 0) ops.push_back(n);
  ASSERT_EQ(ops.size(), 4u) << g.str();
  EXPECT_EQ(ops[0]->kind(), "aten::mul");
  EXPECT_EQ(ops[1]->kind(), "aten::add_");
  EXPECT_EQ(ops[2]->kind(), "aten::view");
  EXPECT_EQ(ops[3]->kind(), "aten::relu_");
  EXPECT_EQ(ops[1]->input(0), ops[0]->output());  // add_ mutates mul's result
  EXPECT_EQ(ops[2]->input(0), ops[1]->output());  // later uses see the mutated value
  EXPECT_EQ(ops[3]->input(0), ops[2]->output());
  EXPECT_EQ(g.outputs()[0], ops[3]->output());
  EXPECT_EQ(g.outputs()[1], ops[1]->output());
  EXPECT_TRUE(ops[1]->has_side_effects());
  EXPECT_NE(g.str().find("prim::Constant[value=[-1]]()"), std::string::npos) << g.str();
  Tensor a = randn({2, 3});
  auto out = f({IValue(a)});
  auto want = fn({a});
  EXPECT_TRUE(all_close(out[0].to_tensor(), want[0]));
  EXPECT_TRUE(all_close(out[1].to_tensor(), want[1]));
}

TEST(JitTrace, TensorListsUseListConstructAndUnpack) {
  auto fn = [](const std::vector<Tensor>& in) {
    std::vector<Tensor> parts = in[0].unbind(0);
    return std::vector<Tensor>{cat({parts[1], parts[0] * 3}, 0)};
  };
  Tensor x = randn({2, 3});
  ScriptFunction f = jit::trace(fn, {x});
  EXPECT_TRUE(has_kind(f.graph(), "aten::unbind"));
  EXPECT_TRUE(has_kind(f.graph(), "prim::ListUnpack"));
  EXPECT_TRUE(has_kind(f.graph(), "prim::ListConstruct"));
  EXPECT_NE(f.code().find(": Tensor[] = prim::ListConstruct("), std::string::npos) << f.code();
  Tensor a = randn({2, 3});
  EXPECT_TRUE(all_close(f({IValue(a)})[0].to_tensor(), fn({a})[0]));
}

TEST(JitTrace, ItemWarnsOncePerTraceAndFreezesTheValue) {
  std::vector<std::string> warnings;
  TraceOptions o;
  o.warn = [&](const std::string& w) { warnings.push_back(w); };
  Tensor unrelated = ones({});
  auto fn = [&](const std::vector<Tensor>& in) {
    double u = unrelated.item<double>();  // not part of the trace: no warning
    EXPECT_TRUE(warnings.empty());
    double s = in[0].sum().item<double>();
    double m = in[0].max().item<double>();
    return std::vector<Tensor>{in[0] * (s + m + u)};
  };
  Tensor x = ones({3});
  auto g = trace_graph(fn, {x}, o);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("might cause the trace to be incorrect"), std::string::npos);
  // s + m + u = 3 + 1 + 1 is frozen: the replay multiplies by 5 whatever the input.
  Interpreter interp(*g);
  Tensor out = interp.run({IValue(full({3}, 2.0))})[0].to_tensor();
  EXPECT_EQ(values(out), (std::vector<double>{10, 10, 10}));
  EXPECT_FALSE(is_tracing());
}

TEST(JitTrace, TracingErrors) {
  Tensor w = randn({3}, TensorOptions().requires_grad(true));
  Error e = catch_error([&] {
    jit::trace([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * w}; },
               {randn({3})});
  });
  EXPECT_NE(std::string(e.what()).find("mul uses a tensor that requires grad"), std::string::npos)
      << e.what();
  EXPECT_FALSE(is_tracing());  // the failed trace was torn down
  // Nested traces are refused.
  e = catch_error([&] {
    jit::trace(
        [&](const std::vector<Tensor>& in) {
          jit::trace(mul_add_relu, {in[0], in[0]});
          return in;
        },
        {randn({3})});
  });
  EXPECT_NE(std::string(e.what()).find("already tracing"), std::string::npos) << e.what();
  // Wrong arity at run time.
  ScriptFunction f = jit::trace(mul_add_relu, {randn({2}), randn({2})});
  e = catch_error([&] { f({IValue(randn({2}))}); });
  EXPECT_NE(std::string(e.what()).find("takes 2 inputs but 1 were given"), std::string::npos);
}

TEST(JitTrace, ConcurrentRunsOfOneCompiledGraph) {
  nn::Sequential mlp(nn::Linear(6, 16), nn::Tanh(), nn::Linear(16, 2));
  auto fwd = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{mlp(in[0])}; };
  ScriptModule sm = jit::trace(*mlp, fwd, {randn({3, 6})});
  constexpr int kThreads = 8, kIters = 40;
  std::vector<Tensor> inputs, expected;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(randn({3, 6}));
    NoGradGuard ng;
    expected.push_back(mlp(inputs.back()));
  }
  std::vector<int> ok(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      NoGradGuard ng;
      for (int i = 0; i < kIters; ++i) {
        Tensor out = sm.forward({IValue(inputs[size_t(t)])})[0].to_tensor();
        if (values(out) == values(expected[size_t(t)])) ++ok[size_t(t)];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(ok[size_t(t)], kIters) << "thread " << t;
}

// graph(%x, %n : int): a prim::Loop that adds i * x for i < n, and one that never runs.
TEST(JitInterpreter, LoopSumsWithTheTripCount) {
  Graph g;
  Value* x = g.add_input("x");
  Value* n = g.add_input("n", Type::int_type());
  Value* t = g.insert_constant(IValue(true));
  Node* loop = g.insert_node(g.create(std::string(kind::kLoop), {n, t, x}, 1));
  Block* body = loop->add_block();
  Value* i = body->add_input("i", Type::int_type());
  Value* acc = body->add_input("acc");
  g.set_insert_point(body);
  Value* next = g.insert_node(g.create_op(op("add.Tensor"), {acc, x, i}, 1))->output();
  body->register_output(t);
  body->register_output(next);
  g.set_insert_point(g.block());
  g.register_output(loop->output());
  g.register_output(x);
  g.lint();
  Interpreter interp(g);
  Tensor xv = tensor({1.0, 2.0});
  for (int64_t trips : {0, 1, 4}) {
    auto out = interp.run({IValue(xv), IValue(trips)});
    double k = 1 + double(trips * (trips - 1) / 2);  // x + sum_{i<n} i * x
    EXPECT_EQ(values(out[0].to_tensor()), (std::vector<double>{k, 2 * k})) << trips;
    EXPECT_EQ(values(out[1].to_tensor()), (std::vector<double>{1, 2}));
  }
  EXPECT_NE(interp.dump().find("LOOPTEST"), std::string::npos);

  // A while-style loop: the body's condition (sum(acc) < 10, a bool tensor) stops it.
  Graph w;
  Value* wx = w.add_input("x");
  Value* max = w.insert_constant(IValue(int64_t(100)));
  Value* yes = w.insert_constant(IValue(true));
  Node* wl = w.insert_node(w.create(std::string(kind::kLoop), {max, yes, wx}, 1));
  Block* wb = wl->add_block();
  wb->add_input("i", Type::int_type());
  Value* wacc = wb->add_input("acc");
  w.set_insert_point(wb);
  Value* one = w.insert_constant(IValue(int64_t(1)));
  Value* wnext = w.insert_node(w.create_op(op("add.Tensor"), {wacc, wx, one}, 1))->output();
  Value* none = w.insert_constant(IValue());
  Value* sum = w.insert_node(w.create_op(op("sum"), {wnext, none}, 1))->output();
  Value* ten = w.insert_constant(IValue(full({}, 10.0)));
  Value* cond = w.insert_node(w.create_op(op("lt.Tensor"), {sum, ten}, 1))->output();
  wb->register_output(cond);
  wb->register_output(wnext);
  w.set_insert_point(w.block());
  w.register_output(wl->output());
  w.lint();
  auto wout = Interpreter(w).run({IValue(tensor({1.0, 2.0}))});
  EXPECT_EQ(values(wout[0].to_tensor()), (std::vector<double>{4, 8}));
}

// graph(%x, %c : bool): prim::If choosing relu or neg.
TEST(JitInterpreter, IfChoosesABranch) {
  Graph g;
  Value* x = g.add_input("x");
  Value* c = g.add_input("c", Type::bool_type());
  Node* n = g.insert_node(g.create(std::string(kind::kIf), {c}, 1));
  Block* then_b = n->add_block();
  Block* else_b = n->add_block();
  g.set_insert_point(then_b);
  then_b->register_output(g.insert_node(g.create_op(op("relu"), {x}, 1))->output());
  g.set_insert_point(else_b);
  else_b->register_output(g.insert_node(g.create_op(op("neg"), {x}, 1))->output());
  g.set_insert_point(g.block());
  g.register_output(n->output());
  g.lint();
  Interpreter interp(g);
  Tensor xv = tensor({-1.0, 2.0});
  EXPECT_EQ(values(interp.run({IValue(xv), IValue(true)})[0].to_tensor()),
            (std::vector<double>{0, 2}));
  EXPECT_EQ(values(interp.run({IValue(xv), IValue(false)})[0].to_tensor()),
            (std::vector<double>{1, -2}));
  // %x is used in both branches: it is dropped after the If, not moved inside it.
  std::string d = interp.dump();
  EXPECT_NE(d.find("DROP"), std::string::npos) << d;
  EXPECT_EQ(d.find("CALL aten::relu mv"), std::string::npos) << d;
}

TEST(JitInterpreter, LastUseMovesAndListsAndErrors) {
  Graph g;
  Value* x = g.add_input("x");
  Value* y = g.insert_node(g.create_op(op("mul.Tensor"), {x, x}, 1))->output();
  Value* z = g.insert_node(g.create_op(op("neg"), {y}, 1))->output();
  Node* lc = g.insert_node(g.create(std::string(kind::kListConstruct), {y, z}, 1));
  lc->output()->set_type(Type::list_of(Type::tensor_type()));
  Value* zero = g.insert_constant(IValue(int64_t(0)));
  Value* s = g.insert_node(g.create_op(op("stack"), {lc->output(), zero}, 1))->output();
  g.register_output(s);
  Interpreter interp(g);
  std::string d = interp.dump();
  // mul reads %x twice: the first is a copy, the last use moves.
  EXPECT_NE(d.find("CALL aten::mul.Tensor r0 mv r0"), std::string::npos) << d;
  Tensor out = interp.run({IValue(tensor({2.0, 3.0}))})[0].to_tensor();
  EXPECT_EQ(values(out), (std::vector<double>{4, 9, -4, -9}));

  // Unknown kinds fail at compile time, naming the node.
  Graph bad;
  Value* a = bad.add_input("a");
  Node* foo = bad.insert_node(bad.create("prim::Frobnicate", {a}, 1));
  foo->set_source_location("m.py:7:0");
  bad.register_output(foo->output());
  Error e = catch_error([&] { Interpreter i(bad); });
  EXPECT_NE(std::string(e.what()).find("prim::Frobnicate (m.py:7:0): unknown node kind"),
            std::string::npos)
      << e.what();
  // GetAttr of a missing attribute, and a RaiseException node.
  Graph ga;
  Value* self = ga.add_input("self", Type::class_type("__torch__.M"));
  Node* get = ga.insert_node(ga.create(std::string(kind::kGetAttr), {self}, 1));
  get->set_attr("name", IValue("fc.weight"));
  ga.register_output(get->output());
  e = catch_error([&] { Interpreter i(ga); });
  EXPECT_NE(std::string(e.what()).find("no attribute 'fc.weight'"), std::string::npos);
  Tensor w = ones({2});
  Interpreter with_attr(ga, {{"fc.weight", IValue(w)}});
  EXPECT_EQ(with_attr.run({IValue()})[0].to_tensor().impl(), w.impl());

  Graph gr;
  Value* msg = gr.insert_constant(IValue("boom"));
  gr.insert_node(gr.create(std::string(kind::kRaiseException), {msg}, 0));
  e = catch_error([&] { Interpreter(gr).run({}); });
  EXPECT_NE(std::string(e.what()).find("boom"), std::string::npos);
  // An op error names the node that failed.
  Graph go;
  Value* p = go.add_input("p");
  Value* q = go.add_input("q");
  Node* mm = go.insert_node(go.create_op(op("mm"), {p, q}, 1));
  mm->set_source_location("net.py:3:0");
  go.register_output(mm->output());
  e = catch_error([&] { Interpreter(go).run({IValue(ones({2, 3})), IValue(ones({2, 3}))}); });
  EXPECT_NE(std::string(e.what()).find("while running aten::mm (net.py:3:0)"), std::string::npos)
      << e.what();
}
