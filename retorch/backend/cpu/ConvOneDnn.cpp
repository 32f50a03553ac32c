// Convolutions on oneDNN (forward, transposed, weight gradient): bfloat16 and strided float32.
#include "retorch/backend/cpu/ConvOneDnn.h"

#include <unordered_map>

#include "retorch/backend/cpu/GemmOneDnn.h"

namespace retorch::cpu {

// Note [oneDNN convolution]
// Without oneDNN's bfloat16 convolution, bfloat16 convolutions widen to float32 and run the
// float32 kernels (ConvOps.cpp), rounding once: exact, at float32 speed, plus the conversions.
// With AVX-512 BF16 (onednn_bf16_available: the check of Note [bfloat16 GEMM]) oneDNN's jit
// kernels multiply bfloat16 pairs into float32 accumulators at twice the float32 rate, so an
// autocast ConvNet's convolutions are worth casting. The tensors stay in PyTorch's layouts
// (NCHW, OIHW; a transposed convolution's weight is IOHW, which oneDNN's deconvolution reads as
// its OIHW with swapped strides; groups become a leading weight dim) and oneDNN picks its
// blocked layouts (format `any`), with reorders in and out: 64x32x16x16 by 64x32x3x3 took 1.35 ms
// with them against 3.0 ms for the float32 direct kernel and 3.0 ms for oneDNN on the plain
// layouts (its gemm path). The result is the one a float32 accumulation rounded once gives, as
// the widening path's; the weight gradient comes out in float32 and is rounded by the caller.
// oneDNN loses where a group has few channels (its kernels block channels by 16): forward
// depthwise 8x64x56x56 1.85 ms against the depthwise kernel's 0.43, the weight gradient of 16
// groups of 4 channels 7.4 against 0.55, the input gradient of a 3-channel image 1.67 against
// 0.86 (1.56 against 1.21 for 3 output channels). With one group it wins forward and for the
// weight gradient whatever the counts (3 -> 32 channels: 0.55 against 1.21 and 0.52 against
// 0.91; 32 -> 1: 1.64 against 2.18, 2.06 against 2.17). So a bfloat16 convolution runs on oneDNN
// with 8+ channels a group on both sides, or with one group unless transposed (ConvOps.cpp's
// onednn_conv_pays); the rest widen.
// float32: retorch's direct kernels (Note [Direct convolution]) take stride 1 only; a strided
// convolution ran im2col and per-sample SGEMMs, behind PyTorch's oneDNN (64x32x32x32 -> 64, 3x3
// stride 2: 5.1 ms forward, 4.8 input gradient, 5.6 weight gradient against 3.2, -, 3.7). On
// oneDNN: 3.4, 3.4, 3.6; 128 -> 256 on 28x28: 12.7 -> 8.6 forward. A strided 1x1 convolution
// (a ResNet shortcut) is a subsampled GEMM that the im2col path does better (64 -> 128 on 56x56:
// 3.2 ms against oneDNN's 4.5), so float32 goes to oneDNN for strided windows larger than 1x1,
// one group, 8+ channels.
// A geometry oneDNN refuses (it throws while building the primitive: a transposed convolution
// whose output padding exceeds its padding asks for a negative right padding, say) returns
// false and retorch's kernels run.

#ifdef RETORCH_HAVE_ONEDNN
namespace {

using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;

dims contiguous_strides(const dims& d) {
  dims s(d.size(), 1);
  for (size_t i = d.size() - 1; i > 0; --i) s[i - 1] = s[i] * d[i];
  return s;
}

// A contiguous NCHW tensor's descriptor.
dnnl::memory::desc activations(const Tensor& t, dt type) {
  dims d(t.sizes().begin(), t.sizes().end());
  return dnnl::memory::desc(d, type, contiguous_strides(d));
}

// The weight of a convolution (O, C/g, kh, kw) or a transposed one (C, O/g, kh, kw) as oneDNN's
// (g, O/g, C/g, kh, kw), or (O, C, kh, kw) for one group.
dnnl::memory::desc weights(const Tensor& w, const ConvGeometry& g, dt type) {
  const int64_t kh = w.size(2), kw = w.size(3), G = g.groups;
  const int64_t a = w.size(0) / G, b = w.size(1);  // per-group leading dim, second dim
  dims d, s;
  if (!g.transposed) {
    d = {G, a, b, kh, kw};
    s = {a * b * kh * kw, b * kh * kw, kh * kw, kw, 1};
  } else {  // w[c][o]: oneDNN's (g, o, c) reads PyTorch's (g, c, o) with the strides swapped
    d = {G, b, a, kh, kw};
    s = {a * b * kh * kw, kh * kw, b * kh * kw, kw, 1};
  }
  if (G == 1) {
    d.erase(d.begin());
    s.erase(s.begin());
  }
  return dnnl::memory::desc(d, type, s);
}

dnnl::memory::desc any_like(const dnnl::memory::desc& d) {
  return dnnl::memory::desc(d.dims(), d.data_type(), dnnl::memory::format_tag::any);
}

// A memory of the primitive's layout `want` holding user memory `user` (reordered if they differ).
dnnl::memory staged(const dnnl::memory& user, const dnnl::memory::desc& want, dnnl::stream& s) {
  if (user.get_desc() == want) return user;
  dnnl::memory m(want, onednn_engine());
  dnnl::reorder(user, m).execute(s, const_cast<dnnl::memory&>(user), m);
  return m;
}

void* data(const Tensor& t) { return const_cast<void*>(t.impl()->data()); }

// The window of g in oneDNN's terms: strides, dilations (0 for none), left and right paddings.
struct Window {
  dims strides, dilation, left, right;
};
Window window_of(const ConvGeometry& g) {
  // A transposed convolution's output padding widens its output: less padding on the right.
  // (A plain one's window count is floor((H + 2p - k) / s) + 1 with either right padding.)
  return {{g.sh, g.sw}, {g.dh - 1, g.dw - 1}, {g.ph, g.pw}, {g.ph - g.oph, g.pw - g.opw}};
}

// oneDNN's type of a float32 or bfloat16 tensor.
dt type_of(const Tensor& t) { return t.dtype() == kBFloat16 ? dt::bf16 : dt::f32; }

// Runs f(type, engine, window) on oneDNN for x's dtype and g's window: false when oneDNN is not
// available for the dtype (bfloat16: natively only) or refuses the call.
template <typename F>
bool on_onednn(const Tensor& x, const ConvGeometry& g, const F& f) {
  if (x.dtype() == kBFloat16 ? !onednn_bf16_available() : !onednn_enabled()) return false;
  onednn_use_threads();
  try {
    f(type_of(x), onednn_engine(), window_of(g));
    return true;
  } catch (const dnnl::error&) {
    return false;  // the widening path runs and writes all of the result
  }
}

}  // namespace
#endif

bool onednn_conv(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
                 const ConvGeometry& g) {
#ifdef RETORCH_HAVE_ONEDNN
  return on_onednn(x, g, [&](dt type, dnnl::engine& eng, const Window& win) {
    const dnnl::memory::desc xd = activations(x, type), wd = weights(w, g, type);
    const dnnl::memory::desc yd = activations(y, type);
    // A zero descriptor is oneDNN's "no bias".
    const dnnl::memory::desc bd = bias.defined() ? dnnl::memory::desc({y.size(1)}, type, {1})
                                                 : dnnl::memory::desc();
    dnnl::stream s(eng);
    dnnl::memory xm(xd, eng, data(x)), wm(wd, eng, data(w)), ym(yd, eng, y.impl()->data());
    auto run = [&](const auto& pd, const dnnl::primitive& prim) {
      dnnl::memory xs = staged(xm, pd.src_desc(), s), ws = staged(wm, pd.weights_desc(), s);
      dnnl::memory ys = pd.dst_desc() == yd ? ym : dnnl::memory(pd.dst_desc(), eng);
      std::unordered_map<int, dnnl::memory> args{
          {DNNL_ARG_SRC, xs}, {DNNL_ARG_WEIGHTS, ws}, {DNNL_ARG_DST, ys}};
      if (bias.defined()) args.insert({DNNL_ARG_BIAS, dnnl::memory(bd, eng, data(bias))});
      prim.execute(s, args);
      if (ys != ym) dnnl::reorder(ys, ym).execute(s, ys, ym);
      s.wait();
    };
    const auto prop = dnnl::prop_kind::forward_training;
    if (!g.transposed) {
      using conv = dnnl::convolution_forward;
      conv::primitive_desc pd(
          conv::desc(prop, dnnl::algorithm::convolution_direct, any_like(xd), any_like(wd), bd,
                     any_like(yd), win.strides, win.dilation, win.left, win.right),
          eng);
      run(pd, conv(pd));
    } else {
      using deconv = dnnl::deconvolution_forward;
      deconv::primitive_desc pd(
          deconv::desc(prop, dnnl::algorithm::deconvolution_direct, any_like(xd), any_like(wd),
                       bd, any_like(yd), win.strides, win.dilation, win.left, win.right),
          eng);
      run(pd, deconv(pd));
    }
  });
#else
  (void)x, (void)w, (void)bias, (void)y, (void)g;
  return false;
#endif
}

bool onednn_conv_weight_grad(const Tensor& go, const Tensor& x, Tensor& gw,
                             const ConvGeometry& g) {
#ifdef RETORCH_HAVE_ONEDNN
  return on_onednn(x, g, [&](dt type, dnnl::engine& eng, const Window& win) {
    const dnnl::memory::desc xd = activations(x, type), god = activations(go, type);
    const dnnl::memory::desc gwd = weights(gw, g, dt::f32);
    using conv = dnnl::convolution_forward;
    using bwd = dnnl::convolution_backward_weights;
    const auto algo = dnnl::algorithm::convolution_direct;
    const dnnl::memory::desc hint_w(gwd.dims(), type, dnnl::memory::format_tag::any);
    conv::primitive_desc hint(conv::desc(dnnl::prop_kind::forward_training, algo, any_like(xd),
                                         hint_w, any_like(god), win.strides, win.dilation,
                                         win.left, win.right),
                              eng);
    bwd::primitive_desc pd(bwd::desc(algo, any_like(xd), any_like(gwd), any_like(god),
                                     win.strides, win.dilation, win.left, win.right),
                           eng, hint);
    dnnl::stream s(eng);
    dnnl::memory xm(xd, eng, data(x)), gom(god, eng, data(go)), gwm(gwd, eng, gw.impl()->data());
    dnnl::memory xs = staged(xm, pd.src_desc(), s), gos = staged(gom, pd.diff_dst_desc(), s);
    dnnl::memory gws =
        pd.diff_weights_desc() == gwd ? gwm : dnnl::memory(pd.diff_weights_desc(), eng);
    bwd(pd).execute(s,
                    {{DNNL_ARG_SRC, xs}, {DNNL_ARG_DIFF_DST, gos}, {DNNL_ARG_DIFF_WEIGHTS, gws}});
    if (gws != gwm) dnnl::reorder(gws, gwm).execute(s, gws, gwm);
    s.wait();
  });
#else
  (void)go, (void)x, (void)gw, (void)g;
  return false;
#endif
}

}  // namespace retorch::cpu
