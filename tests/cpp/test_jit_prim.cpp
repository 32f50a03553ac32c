// Primitive number ops of scripted graphs (prim::add on ints, comparisons, conversions), run by
// the interpreter on parsed graph text.
#include <gtest/gtest.h>

#include "retorch/jit/Interpreter.h"
#include "retorch/jit/Parser.h"
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::jit;

namespace {

std::vector<IValue> run_text(const std::string& text, const std::vector<IValue>& inputs) {
  auto g = parse_ir(text);
  return Interpreter(*g).run(inputs);
}

// graph(%a, %b) returning a `op` b for a binary prim op on the given types.
std::string binary(const std::string& op, const std::string& ta, const std::string& tb,
                   const std::string& tr) {
  return "graph(%a : " + ta + ", %b : " + tb + "):\n  %r : " + tr + " = prim::" + op +
         "(%a, %b)\n  return (%r)\n";
}

}  // namespace

TEST(JitPrim, IntegerArithmeticFollowsPython) {
  auto ii = [](const std::string& op, int64_t a, int64_t b) {
    return run_text(binary(op, "int", "int", "int"), {IValue(a), IValue(b)})[0];
  };
  EXPECT_EQ(ii("add", 2, 3).to_int(), 5);
  EXPECT_EQ(ii("sub", 2, 3).to_int(), -1);
  EXPECT_EQ(ii("mul", -4, 3).to_int(), -12);
  EXPECT_EQ(ii("floor_divide", -7, 2).to_int(), -4);  // Python: -7 // 2 == -4
  EXPECT_EQ(ii("remainder", -7, 2).to_int(), 1);      // Python: -7 % 2 == 1
  EXPECT_EQ(ii("remainder", 7, -2).to_int(), -1);     // Python: 7 % -2 == -1
  EXPECT_EQ(ii("pow", 3, 4).to_int(), 81);
  EXPECT_TRUE(ii("lt", 2, 3).to_bool());
  EXPECT_FALSE(ii("ge", 2, 3).to_bool());
  // int / int is a float, as in Python 3.
  IValue d =
      run_text(binary("div", "int", "int", "float"), {IValue(int64_t(7)), IValue(int64_t(2))})[0];
  EXPECT_DOUBLE_EQ(d.to_double(), 3.5);
  IValue f = run_text(binary("add", "int", "float", "float"), {IValue(int64_t(1)), IValue(0.5)})[0];
  EXPECT_DOUBLE_EQ(f.to_double(), 1.5);
}

TEST(JitPrim, DivisionByZeroIsAnErrorNamingTheNode) {
  try {
    run_text(binary("floor_divide", "int", "int", "int"), {IValue(int64_t(1)), IValue(int64_t(0))});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("integer division or modulo by zero"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("prim::floor_divide"), std::string::npos) << e.what();
  }
}

TEST(JitPrim, ConversionsBetweenTensorsAndNumbers) {
  const std::string text =
      "graph(%x : Tensor, %k : int):\n"
      "  %s : Tensor = aten::sum(%x)\n"
      "  %b : bool = prim::Bool(%s)\n"
      "  %f : float = prim::Float(%s)\n"
      "  %i : int = prim::Int(%f)\n"
      "  %t : Tensor = prim::NumToTensor(%k)\n"
      "  %one : int = prim::Constant[value=1]()\n"
      "  %y : Tensor = aten::add(%x, %t, %one)\n"
      "  return (%b, %f, %i, %y)\n";
  Tensor x = retorch::full({3}, 0.75);
  auto out = run_text(text, {IValue(x), IValue(int64_t(2))});
  EXPECT_TRUE(out[0].to_bool());
  EXPECT_DOUBLE_EQ(out[1].to_double(), 2.25);
  EXPECT_EQ(out[2].to_int(), 2);
  // The wrapped number does not change x's dtype (float32 + int stays float32).
  EXPECT_EQ(out[3].to_tensor().dtype(), kFloat);
  EXPECT_TRUE(retorch::allclose(out[3].to_tensor(), retorch::full({3}, 2.75)));
  try {
    run_text("graph(%x : Tensor):\n  %b : bool = prim::Bool(%x)\n  return (%b)\n",
             {IValue(retorch::ones({2}))});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a Tensor with 2 elements cannot be converted"),
              std::string::npos)
        << e.what();
  }
}
