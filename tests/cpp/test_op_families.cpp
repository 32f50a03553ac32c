// The issue-3 operator families through the C++ API: identities each kernel must satisfy, gradcheck
// of their backward formulas, and bad input as retorch::Error (also run under ASan/UBSan).
#include "test_helpers.h"

using namespace retorch;
using namespace retorch::testing;
using autograd::gradcheck;
using autograd::variable_list;

namespace {

Tensor rnd(std::vector<int64_t> shape, ScalarType t = kDouble) {
  return randn(shape, std::nullopt, TensorOptions(t));
}

Tensor ids(std::initializer_list<int64_t> v) { return tensor(std::vector<int64_t>(v)); }

// Population variance over dim, kept: the definition batch/layer norm normalise by.
Tensor pop_var(const Tensor& x, std::vector<int64_t> dims) {
  Tensor mu = x.mean(dims, true);
  return ((x - mu) * (x - mu)).mean(dims, true);
}

// A symmetric positive definite batch: A A^T + n I.
Tensor spd(int64_t b, int64_t n) {
  Tensor a = rnd({b, n, n});
  return a.matmul(a.transpose(1, 2)) + eye(n, std::nullopt, TensorOptions(kDouble)) * n;
}

}  // namespace

TEST(OpFamilies, Conv2dEqualsIm2colTimesWeight) {
  manual_seed(1);
  Tensor x = rnd({2, 3, 7, 6}), w = rnd({4, 3, 3, 2}), b = rnd({4});
  Tensor y = conv2d(x, w, b, {2, 1}, {1, 0});
  // im2col gives [N, C*kh*kw, L]; the convolution is W[O, C*kh*kw] @ cols + bias.
  Tensor cols = im2col(x, {3, 2}, {1, 1}, {1, 0}, {2, 1});
  Tensor ref = w.reshape({4, -1}).matmul(cols) + b.reshape({1, 4, 1});
  EXPECT_TRUE(all_close(y.reshape({2, 4, -1}), ref, 1e-10, 1e-10));
  EXPECT_TRUE(gradcheck(
      [](const variable_list& v) { return variable_list{conv2d(v[0], v[1], v[2], 1, 1, 1, 1)}; },
      {x.requires_grad_(), w.requires_grad_(), b.requires_grad_()}));
}

// Float32 stride-1 convolutions with >= 16 output channels take the direct kernel (Note [Direct
// convolution]); float64 takes im2col + GEMM, so each checks the other. The shapes cover one
// and several images, groups, dilation, several position chunks, a partial channel tile and the
// transposed convolution run as a direct one.
TEST(OpFamilies, DirectConvMatchesGemmPath) {
  manual_seed(7);
  struct Case {
    std::vector<int64_t> x, w;
    std::vector<int64_t> pad, dil;
    int64_t groups;
  };
  for (const Case& c : std::vector<Case>{{{3, 8, 12, 11}, {16, 8, 3, 3}, {1, 1}, {1, 1}, 1},
                                         {{1, 3, 40, 37}, {32, 3, 5, 5}, {2, 3}, {2, 1}, 1},
                                         {{2, 8, 9, 10}, {32, 4, 3, 3}, {0, 1}, {1, 1}, 2},
                                         {{1, 5, 7, 30}, {12, 5, 2, 3}, {3, 0}, {1, 2}, 1}}) {
    Tensor x = rnd(c.x), w = rnd(c.w), b = rnd({c.w[0]});
    Tensor ref = conv2d(x, w, b, 1, c.pad, c.dil, c.groups);
    Tensor y = conv2d(x.to(kFloat), w.to(kFloat), b.to(kFloat), 1, c.pad, c.dil, c.groups);
    EXPECT_TRUE(all_close(y.to(kDouble), ref, 1e-4, 1e-4)) << "x " << IntArrayRef(c.x);
    // The transposed convolution with the same weight, as the input gradient uses it.
    if (c.groups == 1) {
      Tensor xt = rnd({c.x[0], c.x[1], 6, 7}), wt = w.transpose(0, 1).contiguous();
      std::vector<int64_t> out_pad{c.dil[0] - 1, c.dil[1] - 1};
      Tensor tref = conv_transpose2d(xt, wt, b, 1, 1, out_pad, 1, c.dil);
      Tensor ty = conv_transpose2d(xt.to(kFloat), wt.to(kFloat), b.to(kFloat), 1, 1, out_pad, 1,
                                   c.dil);
      EXPECT_TRUE(all_close(ty.to(kDouble), tref, 1e-4, 1e-4)) << "transposed " << wt.sizes();
    }
  }
}

TEST(OpFamilies, ConvErrorsNameShapes) {
  Error e = catch_error([] { conv2d(ones({1, 3, 5, 5}), ones({2, 4, 3, 3})); });
  EXPECT_TRUE(contains(e.what(), {"[1, 3, 5, 5]"}));
  catch_error([] { conv2d(ones({3, 5}), ones({2, 3, 3, 3})); });
  catch_error([] { conv2d(ones({1, 2, 2, 2}), ones({1, 2, 3, 3})); });
}

TEST(OpFamilies, MaxPoolIndicesPointAtTheMaxima) {
  manual_seed(2);
  Tensor x = rnd({2, 3, 9, 8}, kFloat);
  auto [v, idx] = max_pool2d_with_indices(x, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true);
  Tensor flat = x.reshape({2, 3, -1});
  EXPECT_TRUE(all_close(v.reshape({2, 3, -1}), flat.gather(2, idx.reshape({2, 3, -1})), 0, 0));
  // Without padding, each output is the max of its unfolded window.
  Tensor win = im2col(x.reshape({6, 1, 9, 8}), {3, 3}, {1, 1}, {0, 0}, {2, 2});
  Tensor v0 = max_pool2d(x, {3, 3}, {2, 2}, {0, 0}, {1, 1}, false);
  EXPECT_TRUE(all_close(v0.reshape({6, -1}), win.amax(std::vector<int64_t>{1}), 0, 0));
  catch_error([] { max_pool2d(ones({1, 1, 2, 2}), {3, 3}); });
}

TEST(OpFamilies, NormsMatchTheirDefinitions) {
  manual_seed(3);
  Tensor x = rnd({4, 6, 5}), w = rnd({5}), b = rnd({5});
  Tensor y = layer_norm(x, {5}, w, b, 1e-5);
  Tensor mu = x.mean(std::vector<int64_t>{-1}, true), var = pop_var(x, {-1});
  EXPECT_TRUE(all_close(y, (x - mu) / (var + 1e-5).sqrt() * w + b, 1e-10, 1e-10));
  Tensor rm = zeros({6}, TensorOptions(kDouble)), rv = ones({6}, TensorOptions(kDouble));
  Tensor z = batch_norm(x, std::nullopt, std::nullopt, rm, rv, true, 0.1, 1e-5, false);
  Tensor m = x.mean(std::vector<int64_t>{0, 2}, true), v = pop_var(x, {0, 2});
  EXPECT_TRUE(all_close(z, (x - m) / (v + 1e-5).sqrt(), 1e-10, 1e-10));
  EXPECT_TRUE(all_close(rm, m.reshape({6}) * 0.1, 1e-12, 1e-12));  // running mean moved 10%
  EXPECT_TRUE(gradcheck(
      [](const variable_list& v) { return variable_list{group_norm(v[0], 2, v[1], v[2])}; },
      {rnd({2, 4, 3}).requires_grad_(), rnd({4}).requires_grad_(), rnd({4}).requires_grad_()}));
}

TEST(OpFamilies, CrossEntropyIsNegatedLogSoftmaxAtTheTarget) {
  manual_seed(4);
  Tensor x = rnd({5, 7}).requires_grad_();
  Tensor t = ids({0, 6, 3, 3, 1});
  Tensor ce = cross_entropy(x, t, std::nullopt, -100, "none");
  Tensor ref = -log_softmax(x, 1).gather(1, t.unsqueeze(1)).squeeze(1);
  EXPECT_TRUE(all_close(ce, ref, 1e-12, 1e-12));
  EXPECT_TRUE(gradcheck([&](const variable_list& v) { return variable_list{cross_entropy(v[0], t)}; },
                        {x}));
  catch_error([&] { cross_entropy(x, ids({0, 7, 1, 1, 1})); });  // class 7 of 7
  catch_error([&] { nll_loss(x, ids({0, 1})); });                  // batch mismatch
}

TEST(OpFamilies, EmbeddingGathersRowsAndRejectsBadIds) {
  Tensor w = arange(Scalar(12), TensorOptions(kFloat)).reshape({4, 3});
  Tensor e = embedding(w, ids({3, 0, 3}));
  EXPECT_TRUE(all_close(e, w.index_select(0, ids({3, 0, 3})), 0, 0));
  catch_error([&] { embedding(w, ids({4})); });
  catch_error([&] { embedding(w, ids({-1})); });
}

TEST(OpFamilies, IndexingSortingAgree) {
  manual_seed(5);
  Tensor x = rnd({6, 5}, kFloat);
  auto [v, i] = sort(x, 1, true);
  EXPECT_TRUE(all_close(v, x.gather(1, i), 0, 0));
  auto vv = values(v);
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c + 1 < 5; ++c) EXPECT_GE(vv[r * 5 + c], vv[r * 5 + c + 1]);
  Tensor rows = ids({4, 1, 4});
  std::vector<std::optional<Tensor>> idx{rows};
  EXPECT_TRUE(all_close(index(x, idx), x.index_select(0, rows), 0, 0));
  Tensor acc = index_put(zeros({6, 5}), idx, ones({3, 5}), true);
  EXPECT_EQ(values(acc.sum(std::vector<int64_t>{1}))[4], 10.0);  // row 4 written twice, accumulated
  std::vector<std::optional<Tensor>> bad{ids({6})};
  catch_error([&] { index(x, bad); });
}

TEST(OpFamilies, LapackFactorizationsReconstruct) {
  manual_seed(6);
  Tensor a = spd(3, 4), b = rnd({3, 4, 2});
  EXPECT_TRUE(all_close(a.matmul(linalg_solve(a, b)), b, 1e-9, 1e-9));
  Tensor eye4 = eye(4, std::nullopt, TensorOptions(kDouble)).expand({3, 4, 4});
  EXPECT_TRUE(all_close(a.matmul(linalg_inv(a)), eye4, 1e-9, 1e-9));
  Tensor l = linalg_cholesky(a);
  EXPECT_TRUE(all_close(l.matmul(l.transpose(1, 2)), a, 1e-9, 1e-9));
  auto [q, r] = linalg_qr(a);
  EXPECT_TRUE(all_close(q.matmul(r), a, 1e-9, 1e-9));
  auto [ev, vec] = linalg_eigh(a);
  EXPECT_TRUE(all_close(a.matmul(vec), vec * ev.unsqueeze(1), 1e-9, 1e-9));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return variable_list{linalg_det(v[0])}; },
                        {rnd({3, 3}).requires_grad_()}));
  catch_error([] { linalg_inv(ones({2, 3}, TensorOptions(kDouble))); });
  catch_error([] { linalg_cholesky(-eye(3, std::nullopt, TensorOptions(kDouble))); });
}

// _addmm_activation equals the unfused relu/gelu of addmm (Note [GEMM epilogue]): one block,
// per-thread row and column blocks, row chunks of a large block, broadcast and transposed
// operands, and the backward against the unfused graph's.
TEST(OpFamilies, AddmmActivationEqualsActivationOfAddmm) {
  manual_seed(8);
  struct Case {
    int64_t m, k, n;
  };
  for (const Case& c : std::vector<Case>{{1, 1, 1},
                                         {3, 4, 5},
                                         {64, 128, 128},
                                         {300, 40, 20},
                                         {9, 300, 900},
                                         {1100, 64, 300},
                                         {2, 0, 3}}) {
    for (ScalarType dt : {kFloat, kDouble}) {
      const double tol = dt == kFloat ? 1e-4 : 1e-10;
      Tensor a = rnd({c.m, c.k}, dt), b = rnd({c.n, c.k}, dt).t();
      for (const Tensor& bias : {rnd({c.n}, dt), rnd({c.m, c.n}, dt), rnd({c.m, 1}, dt)}) {
        Tensor pre = addmm(bias, a, b, 0.5, -2);
        EXPECT_TRUE(all_close(_addmm_activation(bias, a, b, 0.5, -2), pre.relu(), tol, tol));
        EXPECT_TRUE(all_close(_addmm_activation(bias, a, b, 0.5, -2, true), gelu(pre), tol, tol));
      }
    }
  }
  Tensor x = rnd({5, 7}).requires_grad_(), w = rnd({7, 6}).requires_grad_(),
         bias = rnd({6}).requires_grad_();
  for (bool use_gelu : {false, true}) {
    variable_list fused =
        autograd::grad({_addmm_activation(bias, x, w, 2, 0.5, use_gelu).sum()}, {bias, x, w});
    Tensor pre = addmm(bias, x, w, 2, 0.5);
    variable_list ref = autograd::grad({(use_gelu ? gelu(pre) : pre.relu()).sum()}, {bias, x, w});
    for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(all_close(fused[i], ref[i], 1e-10, 1e-10));
    EXPECT_TRUE(gradcheck(
        [use_gelu](const variable_list& v) {
          return variable_list{_addmm_activation(v[0], v[1], v[2], 1, 1, use_gelu)};
        },
        {bias, x, w}));
  }
  catch_error([] { _addmm_activation(rnd({5}), rnd({3, 4}), rnd({5, 4})); });
  catch_error([] { _addmm_activation(rnd({5}, kFloat), rnd({3, 4}), rnd({4, 5})); });
}

TEST(OpFamilies, BitwiseOperatorsActOnBitsAndShiftsWrapInTheirWidth) {
  // C++ operators are bitwise like libtorch's (on bool they agree with the logical ones).
  Tensor a = tensor(std::vector<int64_t>{6, 4, -1}), b = tensor(std::vector<int64_t>{3, 5, 9});
  EXPECT_EQ(values(a & b), (std::vector<double>{2, 4, 9}));
  EXPECT_EQ(values(a | b), (std::vector<double>{7, 5, -1}));
  EXPECT_EQ(values(a ^ b), (std::vector<double>{5, 1, -10}));
  EXPECT_EQ(values(~a), (std::vector<double>{-7, -5, 0}));
  EXPECT_EQ(values(a << 2), (std::vector<double>{24, 16, -4}));
  EXPECT_EQ(values(a >> 1), (std::vector<double>{3, 2, -1}));
  Tensor m = tensor(std::vector<int64_t>{1, 0}).to(kBool), n = ones({2}, TensorOptions(kBool));
  EXPECT_EQ(values(m & n), (std::vector<double>{1, 0}));
  EXPECT_EQ((m | n).dtype(), kBool);
  // int8: 1 << 7 wraps to -128; counts outside [0, 8): 0 to the left, the sign to the right.
  Tensor c = tensor(std::vector<int64_t>{1, 1, -3, 3}).to(kChar);
  Tensor k = tensor(std::vector<int64_t>{7, 8, 9, -1}).to(kChar);
  EXPECT_EQ(values(c << k), (std::vector<double>{-128, 0, 0, 0}));
  EXPECT_EQ(values(c >> k), (std::vector<double>{0, 0, -1, 0}));
  EXPECT_THROW(
      {
        try {
          (void)(ones({2}) & ones({2}));
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("bitwise_and"), std::string::npos);
          EXPECT_NE(std::string(e.what()).find("float32"), std::string::npos);
          throw;
        }
      },
      Error);
}
