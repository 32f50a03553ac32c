// Helpers for the JIT pass tests: building graphs with the IR API, a small evaluator that runs
// a graph op by op through the dispatcher, and FileCheck-style text checks.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "retorch/jit/IR.h"
#include "retorch/jit/Schema.h"
#include "test_helpers.h"

namespace jit_test {

using namespace retorch;
using namespace retorch::jit;

inline const OperatorHandle& op(const char* name) {
  OperatorHandle* h = Dispatcher::singleton().find(name);
  RT_CHECK(h != nullptr, "test: no operator ", name);
  return *h;
}

/// Inserts a node calling `name` at the graph's insertion point; returns the node.
inline Node* call_node(Graph& g, const char* name, const std::vector<Value*>& ins,
                       size_t outs = 1) {
  return g.insert_node(g.create_op(op(name), ins, outs));
}
/// Same, returning the first output.
inline Value* call(Graph& g, const char* name, const std::vector<Value*>& ins) {
  return call_node(g, name, ins)->output(0);
}
inline Value* cst(Graph& g, const IValue& v) {
  return g.insert_constant(v);
}
/// A 0-dim tensor constant.
inline Value* scalar_cst(Graph& g, double v, ScalarType dt = kFloat) {
  return g.insert_constant(IValue(full({}, v, dtype(dt))));
}
inline Value* int_list(Graph& g, const std::vector<Value*>& elems) {
  Node* n = g.insert_node(g.create(std::string(kind::kListConstruct), elems, 1));
  n->output()->set_type(Type::list_of(Type::int_type()));
  return n->output();
}

// ---------------------------------------------------------------- the evaluator

inline IValue make_list(const std::vector<IValue>& elems, const TypePtr& type) {
  bool ints = true, doubles = true, tensors = true;
  for (const IValue& e : elems) {
    ints &= e.is_int();
    doubles &= e.is_double();
    tensors &= e.is_tensor();
  }
  TypeKind k = type->kind() == TypeKind::kList ? type->elem()->kind() : TypeKind::kAny;
  if (ints && (!elems.empty() || k == TypeKind::kInt)) {
    std::vector<int64_t> r;
    for (const IValue& e : elems) r.push_back(e.to_int());
    return IValue(r);
  }
  if (doubles && (!elems.empty() || k == TypeKind::kFloat)) {
    std::vector<double> r;
    for (const IValue& e : elems) r.push_back(e.to_double());
    return IValue(r);
  }
  RT_CHECK(tensors, "test evaluator: unsupported list");
  std::vector<Tensor> r;
  for (const IValue& e : elems) r.push_back(e.to_tensor());
  return IValue(r);
}

using Env = std::unordered_map<const Value*, IValue>;

inline Stack eval_block(const Block* b, const Stack& inputs, Env& env);

/// Runs one node: constants, lists, If, blocks taking the node's inputs (FusionGroup,
/// CallFunction), prints (ignored) and "aten::" ops through the dispatcher (defaults filled in).
inline void eval_node(const Node* n, Env& env) {
  std::vector<IValue> ins;
  for (const Value* v : n->inputs()) ins.push_back(env.at(v));
  Stack outs;
  const std::string& k = n->kind();
  if (k == kind::kConstant) {
    outs.push_back(constant_value(n));
  } else if (k == kind::kListConstruct) {
    outs.push_back(make_list(ins, n->output()->type()));
  } else if (k == kind::kPrint) {
  } else if (k == kind::kIf) {
    outs = eval_block(n->blocks().at(ins.at(0).to_bool() ? 0 : 1), {}, env);
  } else if (k == kind::kFusionGroup || k == "prim::CallFunction") {
    outs = eval_block(n->blocks().at(0), ins, env);
  } else {
    RT_CHECK(n->op() != nullptr, "test evaluator: cannot run ", k);
    const FunctionSchema& s = schema_of(*n->op());
    Stack st = ins;
    for (size_t i = st.size(); i < s.args.size(); ++i) st.push_back(default_value(s.args[i]));
    n->op()->call_boxed(&st);
    outs = st;
  }
  RT_CHECK(outs.size() == n->outputs().size(), "test evaluator: ", k, " gave ", outs.size(),
           " results");
  for (size_t i = 0; i < outs.size(); ++i) env[n->output(i)] = outs[i];
}

inline Stack eval_block(const Block* b, const Stack& inputs, Env& env) {
  RT_CHECK(inputs.size() == b->inputs().size(), "test evaluator: block arity");
  for (size_t i = 0; i < inputs.size(); ++i) env[b->inputs()[i]] = inputs[i];
  for (const Node* n : b->nodes()) eval_node(n, env);
  Stack outs;
  for (const Value* v : b->outputs()) outs.push_back(env.at(v));
  return outs;
}

/// Runs g on copies of the inputs (so in-place ops do not leak between runs).
inline Stack eval_graph(const Graph& g, const Stack& inputs) {
  Stack copies;
  for (const IValue& v : inputs)
    copies.push_back(v.is_tensor() ? IValue(v.to_tensor().clone()) : v);
  Env env;
  return eval_block(g.block(), copies, env);
}

/// Expects equal results: tensors close in value with equal shape and dtype, others equal.
inline void expect_same(const Stack& a, const Stack& b, double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].is_tensor(), b[i].is_tensor()) << "result " << i;
    if (a[i].is_tensor()) {
      EXPECT_EQ(a[i].to_tensor().scalar_type(), b[i].to_tensor().scalar_type()) << "result " << i;
      EXPECT_TRUE(retorch::testing::all_close(a[i].to_tensor(), b[i].to_tensor(), rtol, atol))
          << "result " << i;
    } else {
      EXPECT_EQ(a[i].type_name(), b[i].type_name()) << "result " << i;
    }
  }
}

/// Runs `pass` on a copy of g and checks the copy computes what g computes on `inputs`;
/// returns the rewritten copy.
template <typename Pass>
std::unique_ptr<Graph> check_equivalent(const Graph& g, Pass pass, const Stack& inputs,
                                        double rtol = 1e-5, double atol = 1e-6) {
  auto h = g.copy();
  pass(*h);
  h->lint();
  expect_same(eval_graph(g, inputs), eval_graph(*h, inputs), rtol, atol);
  return h;
}

// ---------------------------------------------------------------- FileCheck-style checks

/// The patterns occur in `text` in this order (each after the previous match).
inline ::testing::AssertionResult check_order(const std::string& text,
                                              const std::vector<std::string>& patterns) {
  size_t pos = 0;
  for (const std::string& p : patterns) {
    size_t at = text.find(p, pos);
    if (at == std::string::npos)
      return ::testing::AssertionFailure() << "'" << p << "' not found in order in:\n" << text;
    pos = at + p.size();
  }
  return ::testing::AssertionSuccess();
}

/// `pattern` does not occur in `text`.
inline ::testing::AssertionResult check_not(const std::string& text, const std::string& pattern) {
  if (text.find(pattern) == std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << pattern << "' found in:\n" << text;
}

/// How many times `pattern` occurs in `text`.
inline size_t count(const std::string& text, const std::string& pattern) {
  size_t n = 0;
  for (size_t at = text.find(pattern); at != std::string::npos; at = text.find(pattern, at + 1))
    ++n;
  return n;
}

}  // namespace jit_test
