// retorch._C._optim: the C++ optimizers and LR schedulers behind python/retorch/optim.
#include "retorch/optim/optim.h"

#include "python/src/bindings.h"

namespace retorch::python {

namespace {

using namespace retorch::optim;

// Python gives hyperparameters by C++ key (betas already split into beta1/beta2 by the
// wrapper); unknown keys are the wrapper's business, so they are errors here.
void apply(OptimizerOptions& o, const py::dict& values) {
  for (auto item : values) o.set(item.first.cast<std::string>(), item.second.cast<double>());
}

// Builds an optimizer from its defaults and [(params, overrides), ...].
template <typename Opt, typename Options>
std::shared_ptr<Optimizer> make_optimizer(const py::list& groups, const py::dict& defaults,
                                          Options base) {
  apply(base, defaults);
  std::vector<OptimizerParamGroup> gs;
  for (py::handle g : groups) {
    auto pair = g.cast<py::tuple>();
    auto opts = base.clone();
    apply(*opts, pair[1].cast<py::dict>());
    gs.emplace_back(pair[0].cast<std::vector<Tensor>>(), std::move(opts));
  }
  return std::make_shared<Opt>(std::move(gs), base);
}

py::dict to_py(const OrderedDict<Tensor>& d) {
  py::dict out;
  for (const auto& item : d) out[py::str(item.key)] = item.value;
  return out;
}

OrderedDict<Tensor> from_py(const py::dict& d) {
  OrderedDict<Tensor> out("state dict key");
  for (auto item : d) out.insert(item.first.cast<std::string>(), item.second.cast<Tensor>());
  return out;
}

OptimizerParamGroup& group_at(Optimizer& o, int64_t g) {
  RT_CHECK_INDEX(g >= 0 && g < int64_t(o.param_groups().size()), "param group index ", g,
                 " out of range");
  return o.param_groups()[size_t(g)];
}

void bind_optimizers(py::module_& m) {
  py::class_<Optimizer, std::shared_ptr<Optimizer>>(m, "Optimizer")
      .def("step", [](Optimizer& o) { o.step(); })
      .def("zero_grad", &Optimizer::zero_grad, py::arg("set_to_none") = true)
      .def("num_groups", [](const Optimizer& o) { return o.param_groups().size(); })
      .def("group_params", [](Optimizer& o, int64_t g) { return group_at(o, g).params(); })
      .def("group_keys", [](Optimizer& o, int64_t g) { return group_at(o, g).options().keys(); })
      .def("group_get", [](Optimizer& o, int64_t g,
                           const std::string& k) { return group_at(o, g).options().get(k); })
      .def("group_set", [](Optimizer& o, int64_t g, const std::string& k,
                           double v) { group_at(o, g).options().set(k, v); })
      .def("group_initial_lr",
           [](Optimizer& o, int64_t g) { return group_at(o, g).options().initial_lr; })
      .def("group_set_initial_lr",
           [](Optimizer& o, int64_t g, std::optional<double> v) {
             group_at(o, g).options().initial_lr = v;
           })
      .def("add_param_group",
           [](Optimizer& o, std::vector<Tensor> params, const py::dict& opts) {
             auto options = o.defaults().clone();
             apply(*options, opts);
             o.add_param_group(OptimizerParamGroup(std::move(params), std::move(options)));
           })
      .def("defaults_keys", [](const Optimizer& o) { return o.defaults().keys(); })
      .def("defaults_get",
           [](const Optimizer& o, const std::string& k) { return o.defaults().get(k); })
      .def("param_state", [](Optimizer& o, const Tensor& p) { return to_py(o.state(p)); })
      .def("step_count", &Optimizer::step_count)
      .def("state_dict", [](const Optimizer& o) { return to_py(o.state_dict()); })
      .def("load_state_dict",
           [](Optimizer& o, const py::dict& d) { o.load_state_dict(from_py(d)); });

  m.def("SGD", [](const py::list& g, const py::dict& d) {
    return make_optimizer<SGD>(g, d, SGDOptions(0.0));
  });
  m.def("Adam", [](const py::list& g, const py::dict& d) {
    return make_optimizer<Adam>(g, d, AdamOptions());
  });
  m.def("AdamW", [](const py::list& g, const py::dict& d) {
    return make_optimizer<AdamW>(g, d, AdamWOptions());
  });
  m.def("RMSprop", [](const py::list& g, const py::dict& d) {
    return make_optimizer<RMSprop>(g, d, RMSpropOptions());
  });
  m.def("Adagrad", [](const py::list& g, const py::dict& d) {
    return make_optimizer<Adagrad>(g, d, AdagradOptions());
  });
}

void bind_schedulers(py::module_& m) {
  using OptPtr = std::shared_ptr<Optimizer>;
  py::class_<LRScheduler, std::shared_ptr<LRScheduler>>(m, "LRScheduler")
      .def("step", [](LRScheduler& s) { s.step(); })
      .def("step_epoch", &LRScheduler::step_epoch)
      .def("get_last_lr", &LRScheduler::get_last_lr)
      .def_property_readonly("last_epoch", &LRScheduler::last_epoch)
      .def_property_readonly("base_lrs", &LRScheduler::base_lrs)
      .def("state_dict", [](const LRScheduler& s) { return to_py(s.state_dict()); })
      .def("load_state_dict",
           [](LRScheduler& s, const py::dict& d) { s.load_state_dict(from_py(d)); });

  // Each factory keeps its optimizer (argument 1) alive as long as the scheduler.
  m.def(
      "StepLR",
      [](OptPtr o, int64_t step_size, double gamma, int64_t last_epoch) {
        return std::shared_ptr<LRScheduler>(
            std::make_shared<StepLR>(*o, step_size, gamma, last_epoch));
      },
      py::keep_alive<0, 1>());
  m.def(
      "MultiStepLR",
      [](OptPtr o, std::vector<int64_t> milestones, double gamma, int64_t last_epoch) {
        return std::shared_ptr<LRScheduler>(
            std::make_shared<MultiStepLR>(*o, std::move(milestones), gamma, last_epoch));
      },
      py::keep_alive<0, 1>());
  m.def(
      "ExponentialLR",
      [](OptPtr o, double gamma, int64_t last_epoch) {
        return std::shared_ptr<LRScheduler>(std::make_shared<ExponentialLR>(*o, gamma, last_epoch));
      },
      py::keep_alive<0, 1>());
  m.def(
      "CosineAnnealingLR",
      [](OptPtr o, int64_t T_max, double eta_min, int64_t last_epoch) {
        return std::shared_ptr<LRScheduler>(
            std::make_shared<CosineAnnealingLR>(*o, T_max, eta_min, last_epoch));
      },
      py::keep_alive<0, 1>());
  m.def(
      "LinearLR",
      [](OptPtr o, double start_factor, double end_factor, int64_t total_iters,
         int64_t last_epoch) {
        return std::shared_ptr<LRScheduler>(
            std::make_shared<LinearLR>(*o, start_factor, end_factor, total_iters, last_epoch));
      },
      py::keep_alive<0, 1>());
  m.def(
      "SequentialLR",
      [](OptPtr o, std::vector<std::shared_ptr<LRScheduler>> schedulers,
         std::vector<int64_t> milestones, int64_t last_epoch) {
        return std::shared_ptr<LRScheduler>(std::make_shared<SequentialLR>(
            *o, std::move(schedulers), std::move(milestones), last_epoch));
      },
      py::keep_alive<0, 1>());
  m.def(
      "OneCycleLR",
      [](OptPtr o, std::vector<double> max_lr, int64_t total_steps, int64_t epochs,
         int64_t steps_per_epoch, double pct_start, std::string anneal_strategy,
         bool cycle_momentum, double base_momentum, double max_momentum, double div_factor,
         double final_div_factor, bool three_phase, int64_t last_epoch) {
        OneCycleLROptions opts(std::move(max_lr));
        opts.total_steps(total_steps)
            .epochs(epochs)
            .steps_per_epoch(steps_per_epoch)
            .pct_start(pct_start)
            .anneal_strategy(anneal_strategy)
            .cycle_momentum(cycle_momentum)
            .base_momentum(base_momentum)
            .max_momentum(max_momentum)
            .div_factor(div_factor)
            .final_div_factor(final_div_factor)
            .three_phase(three_phase);
        return std::shared_ptr<LRScheduler>(std::make_shared<OneCycleLR>(*o, opts, last_epoch));
      },
      py::keep_alive<0, 1>());

  py::class_<ReduceLROnPlateau, std::shared_ptr<ReduceLROnPlateau>>(m, "ReduceLROnPlateau")
      .def(py::init([](OptPtr o, std::string mode, double factor, int64_t patience,
                       double threshold, std::string threshold_mode, int64_t cooldown,
                       std::vector<double> min_lr, double eps) {
             ReduceLROnPlateauOptions opts;
             opts.mode(mode)
                 .factor(factor)
                 .patience(patience)
                 .threshold(threshold)
                 .threshold_mode(threshold_mode)
                 .cooldown(cooldown)
                 .min_lr(min_lr)
                 .eps(eps);
             return std::make_shared<ReduceLROnPlateau>(*o, opts);
           }),
           py::keep_alive<1, 2>())
      .def("step", &ReduceLROnPlateau::step)
      .def("get_last_lr", &ReduceLROnPlateau::get_last_lr)
      .def_property_readonly("last_epoch", &ReduceLROnPlateau::last_epoch)
      .def_property_readonly("best", &ReduceLROnPlateau::best)
      .def_property_readonly("num_bad_epochs", &ReduceLROnPlateau::num_bad_epochs)
      .def_property_readonly("cooldown_counter", &ReduceLROnPlateau::cooldown_counter)
      .def("state_dict", [](const ReduceLROnPlateau& s) { return to_py(s.state_dict()); })
      .def("load_state_dict",
           [](ReduceLROnPlateau& s, const py::dict& d) { s.load_state_dict(from_py(d)); });
}

}  // namespace

void bind_optim(py::module_& m) {
  py::module_ sub = m.def_submodule("_optim", "C++ optimizers and LR schedulers");
  bind_optimizers(sub);
  bind_schedulers(sub);
}

}  // namespace retorch::python
