// nn_oracle internals: the named tensors a run reads and the module factory it dispatches to.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "retorch/retorch.h"

namespace retorch::oracle {

using Json = nlohmann::json;

/// The named tensors of one call ("input.x" is found as in("x")).
struct Inputs {
  std::map<std::string, Tensor> tensors;
  /// The tensor named name, or an error naming it.
  const Tensor& at(const std::string& name) const;
  /// The tensor named name, or an undefined tensor.
  Tensor get(const std::string& name) const;
  bool has(const std::string& name) const { return tensors.count(name) > 0; }
};

/// A built module and the forward that returns its outputs as a flat list.
struct Runner {
  std::shared_ptr<nn::Module> module;
  std::function<std::vector<Tensor>(const Inputs& in)> forward;
};

/// Builds the module spec["module"] from spec["options"]; option tensors (loss weights) come
/// from `options` ("option.weight" as options.at("weight")).
Runner make_runner(const Json& spec, const Inputs& options);

}  // namespace retorch::oracle
