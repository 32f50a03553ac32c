// `retorch train`: trains a model on Fashion-MNIST with a progress bar, evaluates each epoch,
// and writes metrics (JSON lines, TensorBoard), a learning-curve PNG and atomic checkpoints.
#include "tools/cli/Train.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "retorch/autograd/GradMode.h"
#include "retorch/data/DataLoader.h"
#include "retorch/data/Mnist.h"
#include "retorch/data/Transforms.h"
#include "retorch/generated/Functions.h"
#include "retorch/io/Checkpoint.h"
#include "retorch/nn/nn.h"
#include "retorch/ops/TensorOperators.h"
#include "retorch/optim/optim.h"
#include "retorch/utils/tensorboard/SummaryWriter.h"
#include "tools/cli/Models.h"
#include "tools/cli/Plot.h"
#include "tools/cli/Progress.h"

namespace retorch::cli {

namespace fs = std::filesystem;

namespace {

// Note [Stopping on Ctrl-C]
// SIGINT only sets a flag. The loop checks it between steps, so a checkpoint being written
// (atomically, see io::save_checkpoint) is always finished, and the last epoch's checkpoint is
// left for --resume.
std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) { g_interrupted = true; }

std::shared_ptr<data::TensorDataset> first_n(std::shared_ptr<data::TensorDataset> ds, int64_t n) {
  if (n < 0 || n >= ds->size()) return ds;
  return std::make_shared<data::TensorDataset>(ds->data().narrow(0, 0, n),
                                               ds->targets().narrow(0, 0, n));
}

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainConfig& c,
                                                 const std::vector<Tensor>& params) {
  if (c.optimizer == "adam")
    return std::make_unique<optim::Adam>(params,
                                         optim::AdamOptions(c.lr).weight_decay(c.weight_decay));
  if (c.optimizer == "sgd")
    return std::make_unique<optim::SGD>(
        params, optim::SGDOptions(c.lr).momentum(c.momentum).weight_decay(c.weight_decay));
  RT_CHECK(false, "unknown optimizer '", c.optimizer, "'; choose sgd or adam");
}

std::unique_ptr<optim::LRScheduler> make_schedule(const TrainConfig& c, optim::Optimizer& opt,
                                                  int64_t total_steps) {
  if (c.schedule == "none") return nullptr;
  if (c.schedule == "onecycle")
    return std::make_unique<optim::OneCycleLR>(opt,
                                               optim::OneCycleLROptions(c.lr).total_steps(total_steps));
  if (c.schedule == "cosine") return std::make_unique<optim::CosineAnnealingLR>(opt, total_steps);
  RT_CHECK(false, "unknown schedule '", c.schedule, "'; choose none, onecycle or cosine");
}

struct EvalResult {
  double loss = 0, accuracy = 0;
};

EvalResult evaluate(nn::Module& model, data::DataLoader& loader, Device device) {
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  double loss = 0;
  int64_t correct = 0, seen = 0;
  for (data::Example& batch : loader) {
    Tensor target = batch.target.to(device);
    Tensor out = model.forward(batch.data.to(device));
    loss += cross_entropy(out, target, std::nullopt, -100, "sum").item<double>();
    correct += out.argmax(1).eq(target).sum().item<int64_t>();
    seen += batch.target.size(0);
  }
  model.train(was_training);
  return {loss / double(seen), double(correct) / double(seen)};
}

std::string json_line(const nlohmann::json& j) { return j.dump() + "\n"; }

}  // namespace

int run_training(const TrainConfig& c) {
  RT_CHECK(c.dataset == "fashion-mnist" || c.dataset == "mnist", "unknown dataset '", c.dataset,
           "'; choose fashion-mnist or mnist");
  RT_CHECK(c.epochs > 0 && c.batch_size > 0 && c.lr > 0, "train: epochs, batch size and lr must "
           "be positive (got ", c.epochs, ", ", c.batch_size, ", ", c.lr, ")");
  const std::string ckpt_dir = c.checkpoint_dir.empty() ? c.out_dir + "/checkpoints" : c.checkpoint_dir;
  fs::create_directories(c.out_dir);
  fs::create_directories(ckpt_dir);
  const std::string ckpt = ckpt_dir + "/last.safetensors";
  manual_seed(c.seed);

  // Data: images in [0, 1], as transforms.ToTensor() gives them.
  std::shared_ptr<data::TensorDataset> train_set, test_set;
  if (c.dataset == "fashion-mnist") {
    train_set = std::make_shared<data::FashionMNIST>(c.data_dir, true);
    test_set = std::make_shared<data::FashionMNIST>(c.data_dir, false);
  } else {
    train_set = std::make_shared<data::MNIST>(c.data_dir, true);
    test_set = std::make_shared<data::MNIST>(c.data_dir, false);
  }
  train_set = first_n(train_set, c.train_limit);
  test_set = first_n(test_set, c.test_limit);
  std::shared_ptr<data::Dataset> train_data = train_set;
  if (c.augment)
    train_data = train_set->map(std::make_shared<data::Compose>(std::vector<std::shared_ptr<data::Transform>>{
        std::make_shared<data::RandomCrop>(28, 2), std::make_shared<data::RandomHorizontalFlip>(0.5)}));
  data::DataLoader train_loader(train_data, data::DataLoaderOptions(c.batch_size)
                                                .shuffle(c.shuffle)
                                                .num_workers(c.workers)
                                                .seed(c.seed));
  data::DataLoader test_loader(test_set, data::DataLoaderOptions(1000));

  // Model, optimizer, schedule.
  std::shared_ptr<nn::Module> model = make_model(c.model);
  if (!c.init_weights.empty()) load(*model, c.init_weights);
  auto opt = make_optimizer(c, model->parameters());
  const int64_t steps_per_epoch = train_loader.size();
  auto schedule = make_schedule(c, *opt, steps_per_epoch * c.epochs);
  io::TrainingState state{model.get(), opt.get(), schedule.get()};

  int64_t start_epoch = 1, global_step = 0;
  std::ofstream metrics;
  if (c.resume && fs::exists(ckpt)) {
    io::Metadata meta = io::load_checkpoint(ckpt, state);
    start_epoch = std::stoll(meta.at("epoch")) + 1;
    global_step = std::stoll(meta.at("global_step"));
    default_generator().set_state({std::stoull(meta.at("rng_seed")), std::stoull(meta.at("rng_offset"))});
    std::cout << "resumed from " << ckpt << " after epoch " << start_epoch - 1 << "\n";
    metrics.open(c.out_dir + "/metrics.jsonl", std::ios::app);
  } else {
    metrics.open(c.out_dir + "/metrics.jsonl", std::ios::trunc);
  }
  RT_CHECK(metrics.good(), "cannot write ", c.out_dir, "/metrics.jsonl");

  std::cout << *model << "\n" << nn::summary(*model, {1, 1, 28, 28}).to_string();
  // After the summary (which runs a cpu input through it): parameters keep their identity, so
  // the optimizer and its restored state follow.
  const Device device = Device(c.device).canonical();
  if (!device.is_cpu()) model->to(device);
  std::cout << "training " << c.model << " on " << c.dataset << " (" << train_set->size()
            << " train / " << test_set->size() << " test images), " << c.optimizer << " lr " << c.lr
            << ", batch " << c.batch_size << ", " << c.epochs << " epochs, seed " << c.seed << "\n";

  std::unique_ptr<utils::tensorboard::SummaryWriter> tb;
  if (c.tensorboard) {
    tb = std::make_unique<utils::tensorboard::SummaryWriter>(c.out_dir + "/tensorboard");
    std::ostringstream cfg;
    cfg << "model=" << c.model << " optimizer=" << c.optimizer << " lr=" << c.lr
        << " batch_size=" << c.batch_size << " epochs=" << c.epochs << " seed=" << c.seed;
    tb->add_text("config", cfg.str(), 0);
  }

  LearningCurves curves;
  // Earlier epochs' points when resuming, from the metrics file.
  if (start_epoch > 1) {
    std::ifstream in(c.out_dir + "/metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || j.value("type", "") != "epoch" || j["epoch"].get<int64_t>() >= start_epoch)
        continue;
      curves.train_loss.push_back(j["train_loss"]);
      curves.test_loss.push_back(j["test_loss"]);
      curves.train_accuracy.push_back(j["train_acc"]);
      curves.test_accuracy.push_back(j["test_acc"]);
    }
  }
  auto prev_handler = std::signal(SIGINT, on_sigint);
  g_interrupted = false;
  int exit_code = 0;
  bool stop = false;
  for (int64_t epoch = start_epoch; epoch <= c.epochs && !stop; ++epoch) {
    model->train();
    train_loader.set_epoch(epoch - 1);
    ProgressOptions po;
    po.unit = "img";
    ProgressBar bar(steps_per_epoch * c.batch_size, "epoch " + std::to_string(epoch) + "/" +
                                                        std::to_string(c.epochs), po);
    auto t0 = std::chrono::steady_clock::now();
    double loss_sum = 0;
    int64_t correct = 0, seen = 0, steps = 0;
    for (data::Example& batch : train_loader) {
      batch.target = batch.target.to(device);
      Tensor out = model->forward(batch.data.to(device));
      Tensor loss = cross_entropy(out, batch.target);
      opt->zero_grad();
      loss.backward();
      const double l = loss.item<double>();
      if (!std::isfinite(l)) {
        bar.close();
        std::cerr << "retorch train: the loss became "
                  << (std::isnan(l) ? "NaN" : l > 0 ? "+inf" : "-inf") << " at epoch " << epoch << ", step "
                  << global_step + 1 << "; stopping. "
                  << (fs::exists(ckpt) ? "The last good checkpoint is " + ckpt
                                       : std::string("No checkpoint was written yet."))
                  << "\n";
        exit_code = 2;
        stop = true;
        break;
      }
      opt->step();
      if (schedule) schedule->step();
      ++global_step;
      ++steps;
      const int64_t n = batch.target.size(0);
      loss_sum += l * double(n);
      correct += out.argmax(1).eq(batch.target).sum().item<int64_t>();
      seen += n;
      std::ostringstream post;
      post << "loss=" << std::fixed << std::setprecision(4) << loss_sum / double(seen);
      bar.set_postfix(post.str());
      bar.update(n);
      if (c.log_interval > 0 && global_step % c.log_interval == 0) {
        metrics << json_line({{"type", "step"}, {"epoch", epoch}, {"step", global_step},
                              {"loss", l}, {"lr", opt->param_groups()[0].options().get_lr()}});
        if (tb) tb->add_scalar("train/loss_step", l, global_step);
      }
      if (g_interrupted || (c.max_steps >= 0 && global_step >= c.max_steps)) {
        stop = true;
        break;
      }
    }
    bar.close();
    if (exit_code != 0) break;
    if (g_interrupted) {
      std::cerr << "retorch train: interrupted during epoch " << epoch << "; "
                << (fs::exists(ckpt) ? "resume with --resume from " + ckpt
                                     : std::string("no epoch finished, so there is no checkpoint"))
                << "\n";
      exit_code = 130;
      break;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EvalResult test = evaluate(*model, test_loader, device);
    const double train_loss = loss_sum / double(std::max<int64_t>(seen, 1));
    const double train_acc = double(correct) / double(std::max<int64_t>(seen, 1));
    std::cout << std::fixed << std::setprecision(4) << "epoch " << epoch << ": train loss "
              << train_loss << ", train acc " << std::setprecision(2) << 100 * train_acc
              << "%, test loss " << std::setprecision(4) << test.loss << ", test acc "
              << std::setprecision(2) << 100 * test.accuracy << "%, " << std::setprecision(1)
              << secs << " s (" << std::setprecision(0) << double(seen) / secs << " img/s)\n"
              << std::flush;
    metrics << json_line({{"type", "epoch"}, {"epoch", epoch}, {"step", global_step},
                          {"train_loss", train_loss}, {"train_acc", train_acc},
                          {"test_loss", test.loss}, {"test_acc", test.accuracy},
                          {"epoch_time_s", secs}, {"images_per_s", double(seen) / secs}});
    metrics.flush();
    curves.train_loss.push_back(train_loss);
    curves.test_loss.push_back(test.loss);
    curves.train_accuracy.push_back(train_acc);
    curves.test_accuracy.push_back(test.accuracy);
    if (tb) {
      tb->add_scalars("loss", {{"train", train_loss}, {"test", test.loss}}, epoch);
      tb->add_scalars("accuracy", {{"train", train_acc}, {"test", test.accuracy}}, epoch);
      for (const auto& [name, p] : model->named_parameters())
        if (name.find("weight") != std::string::npos) tb->add_histogram(name, p.detach(), epoch);
      tb->flush();
    }
    if (c.plot)
      plot_learning_curves(c.out_dir + "/learning_curves.png",
                           c.model + " on " + c.dataset, curves);
    // Only whole epochs are checkpointed: --resume starts at the next epoch's first batch.
    if (steps < steps_per_epoch) continue;
    auto rng = default_generator().get_state();
    io::save_checkpoint(ckpt, state,
                        {{"epoch", std::to_string(epoch)},
                         {"global_step", std::to_string(global_step)},
                         {"model", c.model},
                         {"rng_seed", std::to_string(rng[0])},
                         {"rng_offset", std::to_string(rng[1])}});
  }
  std::signal(SIGINT, prev_handler);
  if (exit_code == 0) {
    save(*model, c.out_dir + "/model.safetensors");
    std::cout << "wrote " << c.out_dir << "/metrics.jsonl, " << c.out_dir
              << "/learning_curves.png, " << c.out_dir << "/tensorboard/, " << c.out_dir
              << "/model.safetensors and " << ckpt << "\n";
  }
  return exit_code;
}

}  // namespace retorch::cli
