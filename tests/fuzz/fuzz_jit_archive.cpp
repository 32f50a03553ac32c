// libFuzzer target: jit::load's archive reader (safetensors header, metadata, graph text, tensor
// table) on arbitrary bytes under ASan+UBSan. Every input is loaded or rejected with an Error.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "retorch/jit/Interpreter.h"
#include "retorch/jit/Serialization.h"

using namespace retorch;
using namespace retorch::jit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    io::SafetensorsFile file = io::load_safetensors_bytes(data, size, "fuzz");
    LoadedProgram p = load_program_from(file, "fuzz");
    const ScriptFunction& f = p.is_module ? *p.module : *p.function;
    f.graph().lint();
    // Compiling checks arities, kinds and attributes; nothing is run.
    AttributeTable attrs;
    if (p.is_module) {
      for (const auto& [name, t] : p.module->named_parameters()) attrs.emplace_back(name, t);
      for (const auto& [name, t] : p.module->named_buffers()) attrs.emplace_back(name, t);
    }
    Interpreter code(f.graph(), attrs);
  } catch (const Error&) {
    return 0;  // rejected cleanly
  }
  return 0;
}
