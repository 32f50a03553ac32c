// Tensor printing in PyTorch's format: tensor([[1., 2.]], requires_grad=True).
#include <cmath>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "retorch/core/Dtypes.h"
#include "retorch/core/PrintOptions.h"
#include "retorch/core/Tensor.h"

namespace retorch {
namespace autograd {
// Defined in autograd/Node.cpp; core only needs the name of a grad_fn.
std::string node_name(const std::shared_ptr<Node>& n);
}  // namespace autograd

namespace {

std::mutex g_options_mu;
PrintOptions g_options;

// The options of the print in progress (one thread prints with one set).
thread_local PrintOptions t_opts;

double read_double(const char* base, ScalarType t) {
  double v = 0;
  RT_DISPATCH_ALL(t, "print", [&] {
    v = double(static_cast<opmath_t<scalar_t>>(*reinterpret_cast<const scalar_t*>(base)));
  });
  return v;
}

struct Formatter {
  bool floating = false, is_bool = false, int_mode = true, sci = false;
  int width = 1;

  std::string fmt(double v) const {
    char buf[64];
    if (is_bool) return v != 0 ? "True" : "False";
    if (!floating) {
      std::snprintf(buf, sizeof buf, "%lld", (long long)v);
      return buf;
    }
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (sci) {
      std::snprintf(buf, sizeof buf, "%.*e", t_opts.precision, v);
    } else if (int_mode) {
      std::snprintf(buf, sizeof buf, "%.0f.", v);
    } else {
      std::snprintf(buf, sizeof buf, "%.*f", t_opts.precision, v);
    }
    return buf;
  }
  std::string pad(double v) const {
    std::string s = fmt(v);
    if (int(s.size()) < width) s = std::string(size_t(width) - s.size(), ' ') + s;
    return s;
  }
};

// Collects the printed values (summarized like PyTorch when the tensor is large).
void collect(const char* data, IntArrayRef sizes, IntArrayRef strides, size_t d, ScalarType t,
             bool summarize, std::vector<double>& out) {
  if (d == sizes.size()) {
    out.push_back(read_double(data, t));
    return;
  }
  int64_t n = sizes[d];
  int64_t isz = int64_t(element_size(t));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t e = t_opts.edgeitems;
    if (summarize && n > 2 * e && i == e) i = n - e;
    collect(data + i * strides[d] * isz, sizes, strides, d + 1, t, summarize, out);
  }
}

void render(const char* data, IntArrayRef sizes, IntArrayRef strides, size_t d, ScalarType t,
            bool summarize, const Formatter& f, int indent, std::ostringstream& os) {
  int64_t isz = int64_t(element_size(t));
  if (sizes.size() == 0) {
    os << f.fmt(read_double(data, t));
    return;
  }
  int64_t n = sizes[d];
  os << "[";
  if (d + 1 == sizes.size()) {
    // Like PyTorch's _vector_str: the items (with " ..." standing for the elided middle)
    // are cut into lines of per_line items, joined by ", " and ",\n<indent>".
    int per_line = std::max(1, (t_opts.linewidth - indent) / (f.width + 2));
    std::vector<std::string> items;
    for (int64_t i = 0; i < n; ++i) {
      if (summarize && n > 2 * t_opts.edgeitems && i == t_opts.edgeitems) {
        items.push_back(" ...");
        i = n - t_opts.edgeitems;
      }
      items.push_back(f.pad(read_double(data + i * strides[d] * isz, t)));
    }
    for (size_t k = 0; k < items.size(); ++k) {
      if (k > 0) {
        if (k % size_t(per_line) == 0) os << ",\n" << std::string(size_t(indent + 1), ' ');
        else os << ", ";
      }
      os << items[k];
    }
  } else {
    std::string sep = "," + std::string(sizes.size() - d - 1, '\n') +
                      std::string(size_t(indent + 1), ' ');
    for (int64_t i = 0; i < n; ++i) {
      if (summarize && n > 2 * t_opts.edgeitems && i == t_opts.edgeitems) {
        os << "..." << sep;
        i = n - t_opts.edgeitems;
      }
      render(data + i * strides[d] * isz, sizes, strides, d + 1, t, summarize, f, indent + 1, os);
      if (i + 1 < n) os << sep;
    }
  }
  os << "]";
}

}  // namespace

PrintOptions print_options() {
  std::lock_guard<std::mutex> g(g_options_mu);
  return g_options;
}

void set_print_options(const PrintOptions& options) {
  RT_CHECK_VALUE(options.precision >= 0 && options.precision <= 30 && options.threshold >= 0 &&
                     options.edgeitems >= 0 && options.linewidth > 0,
                 "set_printoptions: precision must be in [0, 30], threshold and edgeitems >= 0 "
                 "and linewidth > 0 (got precision=", options.precision, ", threshold=",
                 options.threshold, ", edgeitems=", options.edgeitems, ", linewidth=",
                 options.linewidth, ")");
  std::lock_guard<std::mutex> g(g_options_mu);
  g_options = options;
}

std::string Tensor::toString() const {
  if (!defined()) return "tensor(undefined)";
  t_opts = print_options();
  std::ostringstream os;
  os << "tensor(";
  ScalarType t = dtype();
  if (device().is_meta()) {  // no data: PyTorch's "tensor(..., device='meta', size=(2, 3))"
    os << "..., device='meta', size=(";
    for (int64_t i = 0; i < dim(); ++i) os << (i ? ", " : "") << size(i);
    os << (dim() == 1 ? ",)" : ")");
    if (t != default_dtype()) os << ", dtype=torch." << dtype_name(t);
    if (requires_grad()) os << ", requires_grad=True";
    os << ")";
    return os.str();
  }
  Tensor cpu = is_cpu() ? *this : to(Device(kCPU));
  const char* data = static_cast<const char*>(cpu.impl()->data());
  bool summarize = numel() > t_opts.threshold;
  std::vector<double> vals;
  if (numel() > 0) collect(data, cpu.sizes(), cpu.strides(), 0, t, summarize, vals);

  Formatter f;
  f.floating = is_floating_type(t);
  f.is_bool = t == kBool;
  if (f.floating) {
    double amax = 0, amin = INFINITY;
    bool any = false;
    for (double v : vals) {
      if (!std::isfinite(v)) continue;
      if (v != std::ceil(v)) f.int_mode = false;
      double a = std::fabs(v);
      if (a == 0) continue;
      amax = std::max(amax, a);
      amin = std::min(amin, a);
      any = true;
    }
    if (any) {
      if (f.int_mode) f.sci = amax / amin > 1000.0 || amax > 1e8;
      else f.sci = amax / amin > 1000.0 || amax > 1e8 || amin < 1e-4;
    }
  }
  // Like PyTorch, a float column's width comes from its finite nonzero values only, formatted
  // the way the values alone would choose; a forced sci_mode changes the digits, not the width.
  for (double v : vals)
    if (!f.floating || (std::isfinite(v) && v != 0))
      f.width = std::max(f.width, int(f.fmt(v).size()));
  if (f.floating && t_opts.sci_mode) f.sci = *t_opts.sci_mode;

  if (numel() == 0) {
    os << "[]";
  } else {
    render(data, cpu.sizes(), cpu.strides(), 0, t, summarize, f, 7, os);
  }
  std::vector<std::string> suffix;
  if (!is_cpu()) suffix.push_back("device='" + device().str() + "'");
  if (numel() == 0 && dim() != 1) {
    std::ostringstream s;
    s << "size=(";
    for (int64_t i = 0; i < dim(); ++i) s << (i ? ", " : "") << size(i);
    s << (dim() == 1 ? ",)" : ")");
    suffix.push_back(s.str());
  }
  // (an empty tensor names any dtype but the default one: no values show it is integral)
  bool default_type = t == default_dtype() || (numel() > 0 && (t == kLong || t == kBool));
  if (!default_type) suffix.push_back("dtype=torch." + std::string(dtype_name(t)));
  if (grad_fn()) suffix.push_back("grad_fn=<" + autograd::node_name(grad_fn()) + ">");
  else if (requires_grad()) suffix.push_back("requires_grad=True");
  for (auto& s : suffix) os << ", " << s;
  os << ")";
  return os.str();
}

}  // namespace retorch
