// libFuzzer target: the JIT graph parser on arbitrary bytes under ASan+UBSan. Text it accepts
// must lint, print, and read back to the same text; text it rejects must be a retorch::Error.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "retorch/generated/Functions.h"
#include "retorch/jit/Parser.h"

using namespace retorch;
using namespace retorch::jit;

namespace {

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_ir_parser: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<Tensor> consts = {retorch::ones({2, 3}), retorch::zeros({4})};
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<Graph> g;
  try {
    g = parse_ir(text, &consts);
  } catch (const Error&) {
    return 0;  // rejected cleanly
  }
  const std::string printed = g->str();
  const std::string bare = g->str(false);
  try {
    g->lint();
  } catch (const Error& e) {
    die("a parsed graph fails lint", std::string(e.what()) + "\n" + printed);
  }
  for (const std::string* s : {&printed, &bare}) {
    std::unique_ptr<Graph> again;
    try {
      again = parse_ir(*s, &consts);
    } catch (const Error& e) {
      die("printed text does not parse", std::string(e.what()) + "\n" + *s);
    }
    if (again->str(s == &printed) != *s) die("parse(print(g)) prints differently", *s);
  }
  return 0;
}
