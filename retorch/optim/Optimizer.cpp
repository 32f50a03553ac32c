// Optimizer base: group bookkeeping, step/zero_grad, and the flat state_dict format.
#include "retorch/optim/Optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <unordered_set>

#include "retorch/autograd/GradMode.h"
#include "retorch/generated/Functions.h"
#include "retorch/profiler/Profiler.h"

namespace retorch::optim {

// Note [Flat optimizer state]
// state_dict() is a flat OrderedDict<Tensor> so it can be written as safetensors as is:
//   param_groups.<g>.<key>        0-dim float64, one per OptimizerOptions key (bools as 0/1)
//   param_groups.<g>.initial_lr   0-dim float64, only once a scheduler has set it
//   param_groups.<g>.num_params   0-dim int64, the group's size (checked on load)
//   state.<g>.<i>.<name>          the buffers of parameter i of group g (step: 0-dim float32)
// Parameters are named by position, like PyTorch's packed state; load_state_dict checks the
// group sizes and buffer shapes and clones every buffer, so the loaded optimizer never
// aliases the dict it came from.

bool OptimizerOptions::has(const std::string& key) const {
  for (const auto& k : keys())
    if (k == key) return true;
  return false;
}

OptimizerParamGroup& OptimizerParamGroup::operator=(const OptimizerParamGroup& o) {
  if (this != &o) {
    params_ = o.params_;
    options_ = o.options_ ? o.options_->clone() : nullptr;
  }
  return *this;
}

OptimizerOptions& OptimizerParamGroup::options() {
  RT_CHECK(options_ != nullptr, "param group has no options yet");
  return *options_;
}

const OptimizerOptions& OptimizerParamGroup::options() const {
  RT_CHECK(options_ != nullptr, "param group has no options yet");
  return *options_;
}

void Optimizer::init(std::vector<OptimizerParamGroup> param_groups) {
  validate(*defaults_);
  // A plain parameter list arrives as one group without options; empty, it is an error.
  bool empty_list =
      param_groups.empty() || (param_groups.size() == 1 && param_groups[0].params().empty() &&
                               !param_groups[0].has_options());
  RT_CHECK_VALUE(!empty_list, "optimizer got an empty parameter list");
  for (const auto& g : param_groups) add_param_group(g);
}

void Optimizer::add_param_group(const OptimizerParamGroup& param_group) {
  std::unordered_set<const TensorImpl*> seen;
  for (const auto& g : param_groups_)
    for (const auto& p : g.params()) seen.insert(p.impl());
  for (const auto& p : param_group.params()) {
    RT_CHECK_TYPE(p.defined(),
                  "optimizer can only optimize Tensors, but one of the params is "
                  "undefined");
    RT_CHECK_VALUE(p.is_leaf() || p.retains_grad(), "can't optimize a non-leaf Tensor");
    RT_CHECK_VALUE(seen.count(p.impl()) == 0,
                   "some parameters appear in more than one parameter group");
  }
  OptimizerParamGroup group(param_group.params(), param_group.has_options()
                                                      ? param_group.options().clone()
                                                      : defaults_->clone());
  validate(group.options());
  param_groups_.push_back(std::move(group));
}

namespace {
bool in_host_memory(const Tensor& t) { return t.impl()->storage()->device().is_cpu(); }
}  // namespace

// Note [Optimizer steps on device memory]
// The optimizers' updates are fused host loops. A parameter in a device's own memory (cuda with
// the CUDA backend) is updated by the same arithmetic written as tensor ops (TensorOpUpdates.cpp:
// SGD, Adam, AdamW, RMSprop, Adagrad), each a kernel of the device, so parameters, gradients
// and state never leave it; the state buffers are made on the parameter's device and the step
// counter stays a cpu scalar, as in PyTorch. An optimizer without that path updates a host copy:
// the parameter, its gradient and its state buffers come to the cpu, the loop runs, and the
// parameter and buffers are copied back (buffers the update creates move to the device).
void Optimizer::update_on_host_copy(Tensor& p, const Tensor& g, OptimizerOptions& options,
                                    OptimizerParamState& state) {
  const Device device = p.device();
  const Device cpu(kCPU);
  Tensor hp = p.to(cpu), hg = g.to(cpu);
  std::unordered_map<std::string, Tensor> on_device;  // key -> the device tensor it stands for
  for (auto& item : state.items()) {
    if (in_host_memory(item.value)) continue;
    on_device.emplace(item.key, item.value);
    item.value = item.value.to(cpu);
  }
  update(hp, hg, options, state);
  p.copy_(hp);
  for (auto& item : state.items()) {
    auto it = on_device.find(item.key);
    if (it != on_device.end()) {
      it->second.copy_(item.value);
      item.value = it->second;
    } else if (item.key != "step") {
      item.value = item.value.to(device);
    }
  }
}

Tensor Optimizer::step(const LossClosure& closure) {
  Tensor loss;
  if (closure) {
    AutoGradMode enable(true);
    loss = closure();
  }
  NoGradGuard no_grad;
  profiler::RecordFunction range("Optimizer.step");  // as PyTorch's optimizers label it
  for (auto& group : param_groups_) {
    for (auto& p : group.params()) {
      const Tensor& g = p.grad();
      if (!g.defined()) continue;
      if (in_host_memory(p) && in_host_memory(g)) update(p, g, group.options(), state_[p.impl()]);
      else if (!update_on_device(p, g, group.options(), state_[p.impl()]))
        update_on_host_copy(p, g, group.options(), state_[p.impl()]);
    }
  }
  ++step_count_;
  return loss;
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  profiler::RecordFunction range("Optimizer.zero_grad");
  for (auto& group : param_groups_) {
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
      } else {
        Tensor& g = p.mutable_grad();
        if (g.requires_grad() || g.grad_fn()) g = g.detach();
        g.zero_();
      }
    }
  }
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  for (const auto& g : param_groups_) out.insert(out.end(), g.params().begin(), g.params().end());
  return out;
}

OptimizerParamState& Optimizer::state(const Tensor& param) {
  return state_[param.impl()];
}

namespace {

Tensor scalar(double v, ScalarType dtype) {
  return full(std::vector<int64_t>{}, v, TensorOptions(dtype));
}

std::string group_key(size_t g, const std::string& key) {
  return "param_groups." + std::to_string(g) + "." + key;
}

std::string shape_str(IntArrayRef s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Parses "state.<g>.<i>.<name>"; false when the key has another form.
bool parse_state_key(const std::string& key, size_t* g, size_t* i, std::string* name) {
  if (key.rfind("state.", 0) != 0) return false;
  size_t a = key.find('.', 6), b = a == std::string::npos ? a : key.find('.', a + 1);
  if (b == std::string::npos) return false;
  try {
    size_t used = 0;
    *g = std::stoul(key.substr(6, a - 6), &used);
    if (used != a - 6) return false;
    *i = std::stoul(key.substr(a + 1, b - a - 1), &used);
    if (used != b - a - 1) return false;
  } catch (const std::exception&) {
    return false;
  }
  *name = key.substr(b + 1);
  return !name->empty();
}

}  // namespace

OrderedDict<Tensor> Optimizer::state_dict() const {
  OrderedDict<Tensor> out("optimizer state key");
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const auto& group = param_groups_[g];
    for (const auto& key : group.options().keys())
      out.insert(group_key(g, key), scalar(group.options().get(key), kDouble));
    if (group.options().initial_lr)
      out.insert(group_key(g, "initial_lr"), scalar(*group.options().initial_lr, kDouble));
    out.insert(group_key(g, "num_params"), scalar(double(group.params().size()), kLong));
  }
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const auto& params = param_groups_[g].params();
    for (size_t i = 0; i < params.size(); ++i) {
      auto it = state_.find(params[i].impl());
      if (it == state_.end()) continue;
      for (const auto& item : it->second)
        out.insert("state." + std::to_string(g) + "." + std::to_string(i) + "." + item.key,
                   item.value);
    }
  }
  return out;
}

void Optimizer::load_state_dict(const OrderedDict<Tensor>& sd) {
  // Validate everything first so that a bad dict leaves the optimizer unchanged.
  std::set<std::string> used;
  std::vector<std::string> missing, unexpected, mismatched;
  auto take = [&](const std::string& key) -> const Tensor* {
    const Tensor* t = sd.find(key);
    if (t)
      used.insert(key);
    else
      missing.push_back(key);
    return t;
  };
  std::vector<std::unique_ptr<OptimizerOptions>> new_options;
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    auto opts = param_groups_[g].options().clone();
    for (const auto& key : opts->keys())
      if (const Tensor* t = take(group_key(g, key))) opts->set(key, t->item<double>());
    opts->initial_lr.reset();
    if (const Tensor* t = sd.find(group_key(g, "initial_lr"))) {
      used.insert(group_key(g, "initial_lr"));
      opts->initial_lr = t->item<double>();
    }
    if (const Tensor* t = take(group_key(g, "num_params"))) {
      int64_t n = t->item<int64_t>();
      if (n != int64_t(param_groups_[g].params().size()))
        mismatched.push_back(
            group_key(g, "num_params") + " (" + std::to_string(n) + " params in the state dict, " +
            std::to_string(param_groups_[g].params().size()) + " in the optimizer's group)");
    }
    new_options.push_back(std::move(opts));
  }
  const auto names = state_names();
  struct Entry {
    size_t g, i;
    std::string name;
    Tensor value;
  };
  std::vector<Entry> entries;
  for (const auto& item : sd) {
    if (used.count(item.key)) continue;
    size_t g = 0, i = 0;
    std::string name;
    bool known = parse_state_key(item.key, &g, &i, &name) && g < param_groups_.size() &&
                 i < param_groups_[g].params().size() &&
                 std::find(names.begin(), names.end(), name) != names.end();
    if (!known) {
      unexpected.push_back(item.key);
      continue;
    }
    const Tensor& p = param_groups_[g].params()[i];
    if (name == "step") {
      if (item.value.numel() != 1)
        mismatched.push_back(item.key + " (expected one element, got shape " +
                             shape_str(item.value.sizes()) + ")");
      else
        entries.push_back({g, i, name, scalar(item.value.item<double>(), kFloat)});
    } else if (item.value.sizes().vec() != p.sizes().vec()) {
      mismatched.push_back(item.key + " (shape " + shape_str(item.value.sizes()) +
                           " in the state dict, parameter shape " + shape_str(p.sizes()) + ")");
    } else {
      entries.push_back({g, i, name, item.value.detach().to(p.dtype()).contiguous().clone()});
    }
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& k : v) s += (s.empty() ? "" : ", ") + k;
    return s;
  };
  std::string err;
  if (!missing.empty()) err += "\n  missing keys: " + join(missing);
  if (!unexpected.empty()) err += "\n  unexpected keys: " + join(unexpected);
  if (!mismatched.empty()) err += "\n  mismatched: " + join(mismatched);
  RT_CHECK_VALUE(err.empty(), "Error(s) in loading state_dict for optimizer:", err);

  for (size_t g = 0; g < param_groups_.size(); ++g) {
    param_groups_[g].set_options(std::move(new_options[g]));
    for (const auto& p : param_groups_[g].params()) state_.erase(p.impl());
  }
  for (auto& e : entries)
    state_[param_groups_[e.g].params()[e.i].impl()].insert(e.name, std::move(e.value));
}

namespace detail {

std::string py_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // Shortest digits that round-trip, then Python's layout: scientific when the exponent is
  // below -4 or at least 16, fixed (with a trailing ".0" for integers) otherwise.
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*e", prec - 1, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s(buf);
  size_t e = s.find('e');
  int exp = std::stoi(s.substr(e + 1));
  std::string mant = s.substr(0, e);
  bool neg = mant[0] == '-';
  std::string digits;
  for (char c : mant)
    if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  if (exp < -4 || exp >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  } else if (exp < 0) {
    out = "0." + std::string(size_t(-exp - 1), '0') + digits;
  } else {
    if (digits.size() <= size_t(exp) + 1) {
      out = digits + std::string(size_t(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, size_t(exp) + 1) + "." + digits.substr(size_t(exp) + 1);
    }
  }
  return neg ? "-" + out : out;
}

void check_update_args(const Tensor& param, const Tensor& grad, const char* optimizer) {
  RT_CHECK_TYPE(param.is_floating_point(), optimizer,
                ": only floating-point parameters can be optimized, got ",
                dtype_name(param.dtype()));
  RT_CHECK_TYPE(grad.dtype() == param.dtype(), optimizer, ": gradient dtype ",
                dtype_name(grad.dtype()), " does not match parameter dtype ",
                dtype_name(param.dtype()));
  RT_CHECK(grad.sizes().vec() == param.sizes().vec(), optimizer, ": gradient shape ",
           shape_str(grad.sizes()), " does not match parameter shape ", shape_str(param.sizes()));
}

void check_fusable(const Tensor& param, const Tensor& grad, const char* optimizer) {
  RT_CHECK_TYPE(param.dtype() == kFloat || param.dtype() == kDouble, optimizer,
                ": only float32 and float64 parameters are supported, got ",
                dtype_name(param.dtype()));
  check_update_args(param, grad, optimizer);
  // The fused loops read host memory: parameters on a device without a backend live there too
  // (Note [Device routing]), and step() updates device memory with tensor ops or through a host
  // copy (Note [Optimizer steps on device memory]), so this only catches a caller of update()
  // that skipped step().
  RT_CHECK(param.impl()->storage()->device().is_cpu() && grad.impl()->storage()->device().is_cpu(),
           optimizer, ": update() reads host memory, got a parameter in ", param.device(),
           " memory (Optimizer::step updates those on the device)");
  RT_CHECK(grad.device() == param.device(), optimizer, ": gradient on ", grad.device(),
           " but parameter on ", param.device());
}

Tensor step_tensor(double v) {
  return scalar(v, kFloat);
}

double advance_step(OptimizerParamState& state) {
  if (!state.contains("step")) state.insert("step", step_tensor(0));
  float* step = state["step"].data_ptr<float>();
  *step += 1.0f;
  return double(*step);
}

Tensor state_buffer(OptimizerParamState& state, const char* name, const Tensor& like) {
  if (Tensor* t = state.find(name)) return *t;
  return state.insert(name, zeros_like(like).contiguous());
}

void with_contiguous(Tensor& param, const std::function<void(Tensor&)>& f) {
  if (param.is_contiguous()) {
    f(param);
    param.impl()->bump_version();
    return;
  }
  Tensor work = param.contiguous();
  f(work);
  param.copy_(work);
}

}  // namespace detail

}  // namespace retorch::optim
