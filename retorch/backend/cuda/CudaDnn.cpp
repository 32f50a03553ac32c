// Convolutions on CUDA through cuDNN (opened at run time): convolution (plain and transposed, 2-D
// and 3-D, groups, dilation, bias) and _convolution_backward_weight, at the CUDA key.
#include <cudnn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include "retorch/backend/cuda/CudaOps.h"
#include "retorch/core/Error.h"
#include "retorch/core/SharedLibrary.h"
#include "retorch/core/TensorImpl.h"
#include "retorch/ops/ArgRules.h"

namespace retorch::cuda_backend {

// Note [cuDNN convolutions]
// cuDNN is dlopen'd at the first convolution (RETORCH_CUDNN, else libcudnn.so.9 from the loader
// path or the toolkit's lib directories); without it convolutions take the device fallback.
// retorch's convolution family needs three cuDNN calls: a plain convolution is
// cudnnConvolutionForward; a transposed one (and so every input gradient, Note [Convolution
// double backward]) is cudnnConvolutionBackwardData of the plain convolution that maps the
// transposed output back to its input, whose filter is the same [in, out / groups, k...]
// weight; _convolution_backward_weight is cudnnConvolutionBackwardFilter, with the input and
// the output gradient trading places for a transposed convolution. Descriptors are NCHW (or
// NCDHW) of contiguous tensors; the algorithm is cuDNN's first heuristic choice that runs, with
// its workspace from the caching allocator on the same stream. float32 runs with FMA math only
// (no TF32, so results match the cpu within float32 rounding), float16 and bfloat16 with tensor
// cores, accumulating in float. Bias adds through the pointwise add kernel.

namespace {

struct Cudnn {
  void* lib = nullptr;
  std::string why;
  std::atomic<cudnnHandle_t> first{nullptr};  // made by the loader, for the first thread
#define RT_CUDNN_FNS(X)                                                                      \
  X(cudnnCreate) X(cudnnSetStream) X(cudnnGetErrorString) X(cudnnCreateTensorDescriptor)     \
  X(cudnnSetTensorNdDescriptor) X(cudnnDestroyTensorDescriptor) X(cudnnCreateFilterDescriptor) \
  X(cudnnSetFilterNdDescriptor) X(cudnnDestroyFilterDescriptor)                              \
  X(cudnnCreateConvolutionDescriptor) X(cudnnSetConvolutionNdDescriptor)                     \
  X(cudnnSetConvolutionGroupCount) X(cudnnSetConvolutionMathType)                            \
  X(cudnnDestroyConvolutionDescriptor) X(cudnnGetConvolutionForwardAlgorithm_v7)             \
  X(cudnnGetConvolutionForwardWorkspaceSize) X(cudnnConvolutionForward)                      \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                                             \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize) X(cudnnConvolutionBackwardData)            \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)                                           \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize) X(cudnnConvolutionBackwardFilter)
#define RT_CUDNN_MEMBER(f) decltype(&::f) f = nullptr;
  RT_CUDNN_FNS(RT_CUDNN_MEMBER)
#undef RT_CUDNN_MEMBER
};

Cudnn* cudnn() {
  static Cudnn* c = [] {
    auto* r = new Cudnn();
    r->lib = open_library("RETORCH_CUDNN",
                          {"libcudnn.so.9", "libcudnn.so", "/usr/local/cuda/lib/libcudnn.so.9",
                           "/usr/local/cuda/lib64/libcudnn.so.9"},
                          &r->why);
    bool ok = r->lib != nullptr;
#define RT_CUDNN_BIND(f) ok = ok && bind_symbol(r->lib, #f, &r->f);
    RT_CUDNN_FNS(RT_CUDNN_BIND)
#undef RT_CUDNN_BIND
    cudnnHandle_t probe = nullptr;  // the first handle: a failure to make one means no cuDNN
    if (ok) ok = r->cudnnCreate(&probe) == CUDNN_STATUS_SUCCESS;
    if (ok) r->first = probe;
    if (!ok) r->lib = nullptr;
    return r;
  }();
  return c->lib ? c : nullptr;
}

void check(const Cudnn& c, cudnnStatus_t st, const char* what) {
  RT_CHECK(st == CUDNN_STATUS_SUCCESS, "cuDNN ", what, " failed: ", c.cudnnGetErrorString(st));
}

// This thread's handle (handles are not thread-safe), set to queue on the current stream like
// every kernel of this backend (Note [CUDA streams]).
cudnnHandle_t handle(Cudnn& c) {
  cudnnHandle_t handle = thread_handle<cudnnHandle_t>([&] {
    cudnnHandle_t h = c.first.exchange(nullptr);
    if (h == nullptr) check(c, c.cudnnCreate(&h), "cudnnCreate");
    return h;
  });
  check(c, c.cudnnSetStream(handle, static_cast<cudaStream_t>(current_stream())),
        "cudnnSetStream");
  return handle;
}

std::optional<cudnnDataType_t> data_type(ScalarType t) {
  switch (t) {
    case kFloat: return CUDNN_DATA_FLOAT;
    case kDouble: return CUDNN_DATA_DOUBLE;
    case kHalf: return CUDNN_DATA_HALF;
    case kBFloat16: return CUDNN_DATA_BFLOAT16;
    default: return std::nullopt;
  }
}

// The descriptors of one convolution: x (its input), w, y (its output), and the convolution.
struct Descriptors {
  const Cudnn& c;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  Descriptors(const Cudnn& lib, ScalarType dtype, IntArrayRef x_sizes, IntArrayRef w_sizes,
              IntArrayRef y_sizes, const std::vector<int>& stride, const std::vector<int>& pad,
              const std::vector<int>& dilation, int groups)
      : c(lib) {
    const cudnnDataType_t dt = *data_type(dtype);
    check(c, c.cudnnCreateTensorDescriptor(&x), "cudnnCreateTensorDescriptor");
    check(c, c.cudnnCreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor");
    check(c, c.cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor");
    check(c, c.cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor");
    set_tensor(x, dt, x_sizes);
    set_tensor(y, dt, y_sizes);
    std::vector<int> wd(w_sizes.begin(), w_sizes.end());
    check(c, c.cudnnSetFilterNdDescriptor(w, dt, CUDNN_TENSOR_NCHW, int(wd.size()), wd.data()),
          "cudnnSetFilterNdDescriptor");
    // Half and bfloat16 accumulate in float; float and double in themselves.
    const cudnnDataType_t compute = dt == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    check(c, c.cudnnSetConvolutionNdDescriptor(conv, int(stride.size()), pad.data(), stride.data(),
                                               dilation.data(), CUDNN_CROSS_CORRELATION, compute),
          "cudnnSetConvolutionNdDescriptor");
    check(c, c.cudnnSetConvolutionGroupCount(conv, groups), "cudnnSetConvolutionGroupCount");
    const cudnnMathType_t math = dt == CUDNN_DATA_FLOAT || dt == CUDNN_DATA_DOUBLE
                                     ? CUDNN_FMA_MATH
                                     : CUDNN_TENSOR_OP_MATH;
    check(c, c.cudnnSetConvolutionMathType(conv, math), "cudnnSetConvolutionMathType");
  }
  ~Descriptors() {
    if (x) c.cudnnDestroyTensorDescriptor(x);
    if (y) c.cudnnDestroyTensorDescriptor(y);
    if (w) c.cudnnDestroyFilterDescriptor(w);
    if (conv) c.cudnnDestroyConvolutionDescriptor(conv);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;

 private:
  void set_tensor(cudnnTensorDescriptor_t d, cudnnDataType_t dt, IntArrayRef sizes) {
    std::vector<int> dims(sizes.begin(), sizes.end()), strides(sizes.size());
    int s = 1;
    for (int i = int(dims.size()) - 1; i >= 0; --i) {
      strides[size_t(i)] = s;
      s *= std::max(dims[size_t(i)], 1);
    }
    check(c, c.cudnnSetTensorNdDescriptor(d, dt, int(dims.size()), dims.data(), strides.data()),
          "cudnnSetTensorNdDescriptor");
  }
};

// A workspace from the caching allocator, freed (for reuse on the same stream) at scope end.
struct Workspace {
  void* ptr = nullptr;
  explicit Workspace(size_t bytes) : ptr(bytes ? raw_alloc(bytes, current_stream()) : nullptr) {}
  ~Workspace() {
    if (ptr) raw_free(ptr);
  }
};

// The first algorithm of cuDNN's heuristics that reports success.
template <typename Perf>
auto first_algorithm(const Perf* perf, int count, const char* what) {
  for (int i = 0; i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) return perf[i].algo;
  RT_ERROR("cuDNN found no algorithm for the ", what);
}

// cuDNN's alpha = 1 and beta = 0 (the result overwrites), double for double data, else float.
struct Scaling {
  explicit Scaling(ScalarType t) : dbl(t == kDouble) {}
  const void* alpha() const { return dbl ? static_cast<const void*>(&one_d) : &one_f; }
  const void* beta() const { return dbl ? static_cast<const void*>(&zero_d) : &zero_f; }
  bool dbl;
  double one_d = 1.0, zero_d = 0.0;
  float one_f = 1.f, zero_f = 0.f;
};

// One cuDNN convolution pass (forward, backward data or backward filter): its heuristics'
// first algorithm that runs (query(count, &n, perf)), that algorithm's workspace size
// (size(algo, &bytes)), and the call (run(algo, workspace, bytes)); `what` names it in errors.
template <typename Perf, int kCount, typename Query, typename Size, typename Run>
void run_pass(const Cudnn& c, const char* what, const Query& query, const Size& size,
              const Run& run) {
  Perf perf[kCount];
  int n = 0;
  check(c, query(kCount, &n, perf), (std::string(what) + " algorithm query").c_str());
  const auto algo = first_algorithm(perf, n, what);
  size_t bytes = 0;
  check(c, size(algo, &bytes), (std::string(what) + " workspace size").c_str());
  Workspace ws(bytes);
  check(c, run(algo, ws.ptr, bytes), what);
}

// A per-spatial-dim parameter as d ints (cuDNN's descriptors take int).
std::vector<int> expanded(const std::vector<int64_t>& v, size_t d, int64_t fill) {
  const std::vector<int64_t> e = expand_param(v, d, fill);
  return std::vector<int>(e.begin(), e.end());
}

bool fits_int(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= std::max<int64_t>(s, 1);
  return n <= INT32_MAX;
}

struct ConvArgs {
  std::vector<int> stride, pad, dilation;
  int groups = 1;
};

// convolution(input, weight, bias?, stride, padding, dilation, transposed, output_padding,
// groups).
void convolution(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor input = (*stack)[base].to_tensor(), weight = (*stack)[base + 1].to_tensor();
  const bool has_bias = !(*stack)[base + 2].is_none();
  const Tensor bias = has_bias ? (*stack)[base + 2].to_tensor() : Tensor();
  const bool transposed = (*stack)[base + 6].to_bool();
  const int64_t groups = (*stack)[base + 8].to_int();
  Cudnn* c = nullptr;
  const int64_t nd = input.dim();
  bool ok = (nd == 4 || nd == 5) && weight.dim() == nd && in_device_memory(input) &&
            in_device_memory(weight) && weight.dtype() == input.dtype() &&
            data_type(input.dtype()).has_value() && groups >= 1 && groups <= INT32_MAX;
  if (ok && has_bias)
    ok = in_device_memory(bias) && bias.dtype() == input.dtype() && bias.dim() == 1;
  const size_t d = size_t(std::max<int64_t>(nd - 2, 0));
  ConvArgs a;
  std::vector<int64_t> out_sizes;
  if (ok) {
    a.stride = expanded((*stack)[base + 3].to_int_list(), d, 1);
    a.pad = expanded((*stack)[base + 4].to_int_list(), d, 0);
    a.dilation = expanded((*stack)[base + 5].to_int_list(), d, 1);
    const std::vector<int> op = expanded((*stack)[base + 7].to_int_list(), d, 0);
    a.groups = int(groups);
    const int64_t cin = input.size(1);
    const int64_t cout = transposed ? weight.size(1) * groups : weight.size(0);
    ok = (transposed ? weight.size(0) == cin : weight.size(1) * groups == cin) &&
         cout % groups == 0 && (!has_bias || bias.size(0) == cout);
    out_sizes = {input.size(0), cout};
    for (size_t i = 0; ok && i < d; ++i) {
      ok = a.stride[i] > 0 && a.dilation[i] > 0 && a.pad[i] >= 0 && op[i] >= 0 &&
           (!transposed || op[i] < std::max(a.stride[i], a.dilation[i]));
      const int64_t in = input.size(2 + int64_t(i)), k = weight.size(2 + int64_t(i));
      const int64_t span = int64_t(a.dilation[i]) * (k - 1);
      const int64_t o = transposed ? (in - 1) * a.stride[i] - 2 * a.pad[i] + span + op[i] + 1
                                   : (in + 2 * a.pad[i] - span - 1) / a.stride[i] + 1;
      ok = ok && o > 0 && (transposed || in + 2 * a.pad[i] - span - 1 >= 0);
      out_sizes.push_back(o);
    }
    ok = ok && input.numel() > 0 && fits_int(input.sizes()) && fits_int(out_sizes) &&
         fits_int(weight.sizes());
  }
  if (ok) c = cudnn();
  if (!ok || c == nullptr) return run_device_fallback(h, ks, stack);  // its errors, or no cuDNN
  const cudnnHandle_t hd = handle(*c);
  const Tensor x = contiguous_on_device(input), w = contiguous_on_device(weight);
  Tensor out = make_empty(out_sizes, input.dtype(), input.device());
  const Scaling k(input.dtype());
  if (!transposed) {
    Descriptors dd(*c, input.dtype(), x.sizes(), w.sizes(), out.sizes(), a.stride, a.pad,
                   a.dilation, a.groups);
    run_pass<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
        *c, "convolution",
        [&](int count, int* n, auto* perf) {
          return c->cudnnGetConvolutionForwardAlgorithm_v7(hd, dd.x, dd.w, dd.conv, dd.y,
                                                           count, n, perf);
        },
        [&](auto algo, size_t* bytes) {
          return c->cudnnGetConvolutionForwardWorkspaceSize(hd, dd.x, dd.w, dd.conv, dd.y,
                                                            algo, bytes);
        },
        [&](auto algo, void* ws, size_t bytes) {
          return c->cudnnConvolutionForward(hd, k.alpha(), dd.x, device_ptr(x), dd.w,
                                            device_ptr(w), dd.conv, algo, ws, bytes, k.beta(),
                                            dd.y, device_ptr(out));
        });
  } else {
    // The plain convolution from `out` to `input`: its backward data is this transposed one.
    Descriptors dd(*c, input.dtype(), out.sizes(), w.sizes(), x.sizes(), a.stride, a.pad,
                   a.dilation, a.groups);
    run_pass<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
        *c, "transposed convolution",
        [&](int count, int* n, auto* perf) {
          return c->cudnnGetConvolutionBackwardDataAlgorithm_v7(hd, dd.w, dd.y, dd.conv,
                                                                dd.x, count, n, perf);
        },
        [&](auto algo, size_t* bytes) {
          return c->cudnnGetConvolutionBackwardDataWorkspaceSize(hd, dd.w, dd.y, dd.conv,
                                                                 dd.x, algo, bytes);
        },
        [&](auto algo, void* ws, size_t bytes) {
          return c->cudnnConvolutionBackwardData(hd, k.alpha(), dd.w, device_ptr(w), dd.y,
                                                 device_ptr(x), dd.conv, algo, ws, bytes,
                                                 k.beta(), dd.x, device_ptr(out));
        });
  }
  if (has_bias) {  // out += bias over the channel dim
    std::vector<int64_t> bstrides(out_sizes.size(), 0);
    bstrides[1] = bias.stride(0);
    const DimVector os(out.strides().begin(), out.strides().end());
    const int64_t* p[3] = {os.data(), os.data(), bstrides.data()};
    Geometry<3> g;
    RT_CHECK(make_geometry<3>(out_sizes.data(), int(out_sizes.size()), p, &g),
             "cuda convolution: bias geometry");
    launch_binary(BinaryOp::kAdd, *float_type(out.dtype()), g, device_ptr(out), device_ptr(out),
                  device_ptr(bias), false, 0.0, 1.0, current_stream());
  }
  finish_call(s, Variant::kFunctional, out, stack);
}

// _convolution_backward_weight(grad_output, input, weight_size, stride, padding, dilation,
// transposed, groups).
void convolution_backward_weight(const OperatorHandle& h, DispatchKeySet ks, Stack* stack) {
  const OpSchema& s = h.schema();
  const size_t base = stack->size() - size_t(s.num_args);
  const Tensor go = (*stack)[base].to_tensor(), input = (*stack)[base + 1].to_tensor();
  const std::vector<int64_t>& wsize = (*stack)[base + 2].to_int_list();
  const bool transposed = (*stack)[base + 6].to_bool();
  const int64_t groups = (*stack)[base + 7].to_int();
  const int64_t nd = input.dim();
  const size_t d = size_t(std::max<int64_t>(nd - 2, 0));
  bool ok = (nd == 4 || nd == 5) && go.dim() == nd && int64_t(wsize.size()) == nd &&
            in_device_memory(go) && in_device_memory(input) && go.dtype() == input.dtype() &&
            data_type(input.dtype()).has_value() && groups >= 1 && groups <= INT32_MAX &&
            input.numel() > 0 && go.numel() > 0 && fits_int(input.sizes()) &&
            fits_int(go.sizes()) && fits_int(wsize);
  Cudnn* c = ok ? cudnn() : nullptr;
  if (!ok || c == nullptr) return run_device_fallback(h, ks, stack);
  const cudnnHandle_t hd = handle(*c);
  ConvArgs a;
  a.stride = expanded((*stack)[base + 3].to_int_list(), d, 1);
  a.pad = expanded((*stack)[base + 4].to_int_list(), d, 0);
  a.dilation = expanded((*stack)[base + 5].to_int_list(), d, 1);
  a.groups = int(groups);
  // The plain convolution's input and output: for a transposed one they trade places.
  const Tensor x = contiguous_on_device(transposed ? go : input);
  const Tensor y = contiguous_on_device(transposed ? input : go);
  Tensor dw = make_empty(wsize, input.dtype(), input.device());
  Descriptors dd(*c, input.dtype(), x.sizes(), dw.sizes(), y.sizes(), a.stride, a.pad, a.dilation,
                 a.groups);
  const Scaling k(input.dtype());
  run_pass<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
      *c, "convolution weight gradient",
      [&](int count, int* n, auto* perf) {
        return c->cudnnGetConvolutionBackwardFilterAlgorithm_v7(hd, dd.x, dd.y, dd.conv,
                                                                dd.w, count, n, perf);
      },
      [&](auto algo, size_t* bytes) {
        return c->cudnnGetConvolutionBackwardFilterWorkspaceSize(hd, dd.x, dd.y, dd.conv,
                                                                 dd.w, algo, bytes);
      },
      [&](auto algo, void* ws, size_t bytes) {
        return c->cudnnConvolutionBackwardFilter(hd, k.alpha(), dd.x, device_ptr(x), dd.y,
                                                 device_ptr(y), dd.conv, algo, ws, bytes,
                                                 k.beta(), dd.w, device_ptr(dw));
      });
  finish_call(s, Variant::kFunctional, dw, stack);
}

}  // namespace

void register_dnn_ops(Dispatcher& d) {
  for (OperatorHandle* h : d.ops()) {
    const OpSchema& s = h->schema();
    if (h->device_independent() || !h->has_kernel(DispatchKey::CPU) || !s.overload.empty())
      continue;
    if (s.name == "convolution")
      h->set_kernel(DispatchKey::CUDA, make_boxed_kernel(&convolution));
    else if (s.name == "_convolution_backward_weight")
      h->set_kernel(DispatchKey::CUDA, make_boxed_kernel(&convolution_backward_weight));
  }
}

}  // namespace retorch::cuda_backend
