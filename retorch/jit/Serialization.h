// jit::save / jit::load: a traced or scripted program in one file that loads without its class.
#pragma once
#include <memory>
#include <string>

#include "retorch/io/Safetensors.h"
#include "retorch/jit/Module.h"

namespace retorch::jit {

// Note [JIT archive]
// An archive is one safetensors file. Its "__metadata__" holds "retorch.jit" (the format
// version), "kind" ("module" or "function"), "graph" (the graph's text, as Graph::str() prints
// it), and "parameters" / "buffers" / "requires_grad" (newline-separated names). Its tensors are
// "param:<name>", "buffer:<name>" and "constant:<i>", the i-th `<Tensor>` constant in the order
// the text prints them. Loading validates the safetensors header (sizes, offsets), parses the
// graph (errors name the line), and checks that every GetAttr and every `<Tensor>` has its
// tensor: nothing in the file is executed.

/// Writes a traced/scripted module: graph text, parameters, buffers and tensor constants.
void save(const ScriptModule& module, const std::string& path);
/// Writes a traced/scripted function (graph text and tensor constants).
void save(const ScriptFunction& function, const std::string& path);

/// What an archive holds: a module (its graph's first input is %self) or a function.
struct LoadedProgram {
  bool is_module = false;
  std::shared_ptr<ScriptModule> module;      // set when is_module
  std::shared_ptr<ScriptFunction> function;  // set otherwise
};
/// Reads an archive written by save(); errors name the file and the broken field.
LoadedProgram load_program(const std::string& path);
/// Builds the program from an already read archive; `name` labels errors (load_program's core,
/// also used by the archive fuzz target on in-memory bytes).
LoadedProgram load_program_from(const io::SafetensorsFile& file, const std::string& name);
/// Reads a module archive (an error for a function archive).
ScriptModule load(const std::string& path);
/// Reads a function archive (an error for a module archive).
ScriptFunction load_function(const std::string& path);
/// The graph text stored in an archive (for `retorch ir FILE`), or nullopt if `path` is not a
/// JIT archive (a plain text file).
std::optional<std::string> archive_graph_text(const std::string& path);

}  // namespace retorch::jit
