// The `retorch` command: `retorch train ...` (the training job), `retorch summary --model M`,
// `retorch ir FILE [--passes a,b]` (read a JIT graph, run passes on it, print it) and
// `retorch compile --model M [--benchmark]` (compile a model's forward, time it against eager) and
// `retorch profile [--output trace.json] -- <command>` (run a command under RETORCH_PROFILE) and
// `retorch devices [--matrix] [--report -- <command>]` (device routing and its counters).
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "retorch/core/Error.h"
#include "retorch/jit/Parser.h"
#include "retorch/jit/Serialization.h"
#include "retorch/jit/PassRegistry.h"
#include "retorch/jit/passes/PassManager.h"
#include "retorch/nn/Summary.h"
#include "tools/cli/CompileCmd.h"
#include "tools/cli/DevicesCmd.h"
#include "tools/cli/LlmCmd.h"
#include "tools/cli/Models.h"
#include "tools/cli/ProfileCmd.h"
#include "tools/cli/Train.h"

namespace {

// `retorch ir`: parses the graph text in `path`, runs the named passes in order, prints it.
int run_ir(const std::string& path, const std::string& passes) {
  std::vector<std::string> names;
  std::stringstream list(passes);
  for (std::string name; std::getline(list, name, ',');)
    if (!name.empty()) names.push_back(name);
  // Unknown names fail before the file is read.
  for (const std::string& name : names) {
    if (retorch::jit::find_pass(name) != nullptr) continue;
    std::string known;
    for (const std::string& n : retorch::jit::pass_names()) known += (known.empty() ? "" : ", ") + n;
    RT_ERROR("unknown pass '", name, "' (known passes: ", known, ")");
  }
  std::ifstream f(path, std::ios::binary);
  RT_CHECK(f.good(), "cannot open '", path, "'");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // A jit::save archive prints the graph it holds (Note [JIT archive]).
  if (std::optional<std::string> archived = retorch::jit::archive_graph_text(path)) text = *archived;
  std::unique_ptr<retorch::jit::Graph> g;
  try {
    g = retorch::jit::parse_ir(text);
  } catch (const retorch::Error& e) {
    RT_ERROR(path, ": ", e.what());
  }
  retorch::jit::run_pipeline(*g, names);  // RETORCH_JIT_LOG applies
  std::cout << g->str();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using retorch::cli::TrainConfig;
  CLI::App app{"retorch: PyTorch's architecture in modern C++"};
  app.require_subcommand(1);

  TrainConfig c;
  CLI::App* train = app.add_subcommand("train", "train a model on Fashion-MNIST (or MNIST)");
  const std::vector<std::string> models = retorch::cli::model_names();
  train->add_option("--model", c.model, "model to train")->check(CLI::IsMember(models))->capture_default_str();
  train->add_option("--dataset", c.dataset, "dataset")
      ->check(CLI::IsMember({"fashion-mnist", "mnist"}))->capture_default_str();
  train->add_option("--data-dir", c.data_dir, "directory with the IDX files (.gz or plain)")->capture_default_str();
  train->add_option("--epochs", c.epochs, "epochs")->check(CLI::PositiveNumber)->capture_default_str();
  train->add_option("--batch-size", c.batch_size, "batch size")->check(CLI::PositiveNumber)->capture_default_str();
  train->add_option("--lr", c.lr, "learning rate (the peak for --schedule onecycle)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  train->add_option("--optimizer", c.optimizer, "optimizer")->check(CLI::IsMember({"sgd", "adam"}))->capture_default_str();
  train->add_option("--momentum", c.momentum, "SGD momentum")->capture_default_str();
  train->add_option("--weight-decay", c.weight_decay, "weight decay")->capture_default_str();
  train->add_option("--schedule", c.schedule, "learning-rate schedule (stepped per batch)")
      ->check(CLI::IsMember({"none", "onecycle", "cosine"}))->capture_default_str();
  train->add_flag("--augment", c.augment, "random crop (padding 2) and horizontal flip");
  train->add_option("--seed", c.seed, "seed of initialization, shuffling and augmentation")->capture_default_str();
  train->add_option("--out-dir", c.out_dir, "where metrics, plots, TensorBoard files and the model go")->capture_default_str();
  train->add_option("--checkpoint-dir", c.checkpoint_dir, "checkpoint directory (default OUT_DIR/checkpoints)");
  train->add_flag("--resume", c.resume, "continue from the checkpoint of the last finished epoch");
  train->add_option("--init-weights", c.init_weights, "safetensors state dict to start from");
  train->add_option("--max-steps", c.max_steps, "stop after this many optimizer steps");
  train->add_option("--train-limit", c.train_limit, "use only the first N training images");
  train->add_option("--test-limit", c.test_limit, "use only the first N test images");
  bool no_shuffle = false, no_plot = false, no_tb = false;
  train->add_flag("--no-shuffle", no_shuffle, "visit training images in file order");
  train->add_option("--workers", c.workers, "data-loading threads")->capture_default_str();
  train->add_option("--device", c.device,
                    "cpu, or cuda/mps/xpu (run through the device fallback where absent)")
      ->capture_default_str();
  train->add_option("--log-interval", c.log_interval, "steps between step records in metrics.jsonl")
      ->capture_default_str();
  train->add_flag("--no-plot", no_plot, "do not draw the learning-curve PNG");
  train->add_flag("--no-tensorboard", no_tb, "do not write TensorBoard event files");

  std::string summary_model = "convnet";
  CLI::App* summary = app.add_subcommand("summary", "print a model's layers and parameter counts");
  summary->add_option("--model", summary_model, "model")->check(CLI::IsMember(models))->capture_default_str();

  std::string ir_file, ir_passes;
  CLI::App* ir = app.add_subcommand("ir", "read a JIT graph's text, run passes on it, print it");
  ir->add_option("file", ir_file, "graph text file (as Graph::str() prints it) or a jit::save archive")->required();
  ir->add_option("--passes", ir_passes, "comma-separated passes to run in order (e.g. lint)");

  retorch::cli::CompileConfig cc;
  CLI::App* comp = app.add_subcommand("compile", "compile a model's forward with retorch::compile");
  comp->add_option("--model", cc.model, "model")->check(CLI::IsMember(models))->capture_default_str();
  comp->add_option("--batch-size", cc.batch_size, "batch size of the random input")
      ->check(CLI::PositiveNumber)->capture_default_str();
  comp->add_flag("--benchmark", cc.benchmark, "time the compiled forward against eager");
  comp->add_flag("--source", cc.source, "print the generated C++");

  retorch::cli::ProfileConfig pc;
  CLI::App* prof = app.add_subcommand(
      "profile", "run a retorch program with RETORCH_PROFILE set: it prints the kernel table at "
                 "exit and writes a Chrome trace");
  prof->add_option("--output", pc.output, "where the trace goes")->capture_default_str();
  prof->add_option("--memory-plot", pc.memory_plot,
                   "also record memory and plot allocated/reserved bytes over time to this PNG");
  prof->add_option("command", pc.command, "the command (after --), e.g. retorch train ...")
      ->required()->expected(-1);

  retorch::cli::DevicesConfig dc;
  CLI::App* dev = app.add_subcommand(
      "devices", "device availability and routing, the op compatibility matrix, fallback reports");
  dev->add_flag("--matrix", dc.matrix, "print for each op how cpu/cuda/mps/xpu/meta run it");
  dev->add_flag("--markdown", dc.markdown, "the matrix as Markdown (docs/devices.md)");
  dev->add_flag("--report", dc.report,
                "run the command (after --) with RETORCH_DEVICE_REPORT=1: its fallback counters "
                "print at exit");
  dev->add_option("command", dc.command, "the command for --report")->expected(-1);

  retorch::cli::GenerateConfig gc;
  CLI::App* gen = app.add_subcommand(
      "generate", "stream a Llama-family model's continuation of a prompt (HF directory or .gguf)");
  gen->add_option("--model", gc.model, "HF model directory or .gguf file")->required();
  gen->add_option("--prompt", gc.prompt, "the prompt text")->required();
  gen->add_flag("--chat", gc.chat, "wrap the prompt in the model's chat template");
  gen->add_option("--system", gc.system, "system message (with --chat)");
  gen->add_option("--max-new-tokens", gc.max_new_tokens, "tokens to generate")
      ->check(CLI::PositiveNumber)->capture_default_str();
  gen->add_option("--temperature", gc.temperature, "0 for greedy")->capture_default_str();
  gen->add_option("--top-k", gc.top_k, "keep the k most likely tokens (0: off)")
      ->capture_default_str();
  gen->add_option("--top-p", gc.top_p, "nucleus sampling mass (1: off)")->capture_default_str();
  gen->add_option("--min-p", gc.min_p, "drop tokens below min-p x the top probability")
      ->capture_default_str();
  gen->add_option("--repetition-penalty", gc.repetition_penalty, "1: off")->capture_default_str();
  gen->add_option("--seed", gc.seed, "sampling seed")->capture_default_str();
  gen->add_option("--stop", gc.stop, "stop once the output contains this text (repeatable)");
  gen->add_option("--dtype", gc.dtype, "dense weights as float32 or bfloat16")
      ->check(CLI::IsMember({"float32", "bfloat16"}))->capture_default_str();
  gen->add_option("--kv-dtype", gc.kv_dtype, "the KV cache as float32 or bfloat16")
      ->check(CLI::IsMember({"float32", "bfloat16"}))->capture_default_str();
  gen->add_option("--device", gc.device, "where the model runs: cpu, cuda, cuda:N")
      ->capture_default_str();
  gen->add_flag("--eager", gc.eager, "on cuda, no CUDA graphs of decode steps");

  retorch::cli::BenchLlmConfig bc;
  CLI::App* bench = app.add_subcommand(
      "bench-llm", "prefill and decode throughput of a Llama model against the hardware bounds");
  bench->add_option("--model", bc.model, "checkpoint path, or a random-weight preset (110m, 1b)")
      ->capture_default_str();
  bench->add_option("--format", bc.format, "weights of a preset")
      ->check(CLI::IsMember({"f32", "bf16", "q8_0", "q4_0"}))->capture_default_str();
  bench->add_option("--batch", bc.batch, "sequences")->check(CLI::PositiveNumber)
      ->capture_default_str();
  bench->add_option("--prompt-len", bc.prompt_len, "prompt tokens per sequence")
      ->check(CLI::PositiveNumber)->capture_default_str();
  bench->add_option("--gen-len", bc.gen_len, "generated tokens per sequence")
      ->check(CLI::PositiveNumber)->capture_default_str();
  bench->add_option("--kv-dtype", bc.kv_dtype, "the KV cache as float32 or bfloat16")
      ->check(CLI::IsMember({"float32", "bfloat16"}))->capture_default_str();
  bench->add_option("--device", bc.device, "where the model runs: cpu, cuda, cuda:N")
      ->capture_default_str();
  bench->add_flag("--eager", bc.eager, "on cuda, no CUDA graphs of decode steps");
  bench->add_option("--temperature", bc.temperature, "sampling temperature, 0 for greedy")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  bench->add_option("--top-p", bc.top_p, "nucleus sampling mass (1: off)")->capture_default_str();

  CLI11_PARSE(app, argc, argv);
  c.shuffle = !no_shuffle;
  c.plot = !no_plot;
  c.tensorboard = !no_tb;
  try {
    if (*train) return retorch::cli::run_training(c);
    if (*ir) return run_ir(ir_file, ir_passes);
    if (*comp) return retorch::cli::run_compile(cc);
    if (*prof) return retorch::cli::run_profile(pc);
    if (*dev) return retorch::cli::run_devices(dc);
    if (*gen) return retorch::cli::run_generate(gc);
    if (*bench) return retorch::cli::run_bench_llm(bc);
    auto model = retorch::cli::make_model(summary_model);
    std::cout << *model << "\n" << retorch::nn::summary(*model, {1, 1, 28, 28}).to_string();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "retorch: error: " << e.what() << "\n";
    return 1;
  }
}
