// The C++ call stack for with_stack profiles of C++ programs: the caller's frames outside
// libretorch, as "file.cpp(12): function" (GCC's libbacktrace reads the DWARF line tables).
#include "retorch/profiler/Profiler.h"

#include <cxxabi.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#ifdef RETORCH_HAVE_LIBBACKTRACE
#include <backtrace.h>
#else
#include <execinfo.h>
#endif

namespace retorch::profiler {

// Note [Native call stacks]
// A with_stack profile records the user's frames with each op the user called. The Python
// module installs a provider of Python frames (set_stack_provider); without one, a C++
// program gets its own frames from native_stack(): the return addresses of the current thread
// (libbacktrace's unwinder), those inside libretorch.so and those of std:: and retorch::
// templates instantiated in the user's binary dropped (the dispatcher, the profiler),
// each named from the DWARF line tables when the binary has them ("main.cpp(12): train_step",
// demangled) and else from its symbol table ("train(+0x1a2b): train_step(Model&)"),
// up to and including `main`. Unwinding and the line lookup cost microseconds per op, so this
// runs only for with_stack profiles. Without libbacktrace (a compiler that does not ship it),
// glibc's backtrace() and dladdr give the same frames without file and line.

namespace {

std::string demangle(const char* name) {
  if (name == nullptr) return "?";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                           std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(name);
}

// Whether a function is the standard library's or retorch's own: their templates instantiated
// in the user's binary (std::function's invoker, the dispatcher's boxing adapters) are not the
// user's code. "void std::__invoke_impl<...>(...)": the qualified name after any return type.
bool library_function(const std::string& name) {
  const size_t skip = name.rfind("(anonymous namespace)", 0) == 0 ? 21 : 0;
  const std::string head = name.substr(0, name.find_first_of("<(", skip));
  const size_t space = head.rfind(' ');
  const std::string qualified = space == std::string::npos ? head : head.substr(space + 1);
  for (const char* ns : {"std::", "__gnu_cxx::", "retorch::"})
    if (qualified.rfind(ns, 0) == 0) return true;
  return false;
}

// Whether pc lies in the object that holds this function (libretorch).
bool in_retorch(uintptr_t pc) {
  static const void* self_base = [] {
    Dl_info info{};
    return dladdr(reinterpret_cast<void*>(&demangle), &info) ? info.dli_fbase : nullptr;
  }();
  Dl_info info{};
  return dladdr(reinterpret_cast<void*>(pc), &info) && info.dli_fbase == self_base;
}

// "libfoo.so(+0x1a2b): fn" for frames without line tables; fn (demangled) from the symbol table
// if known ("?" if not), else from dladdr's dynamic symbols.
std::string symbol_frame(uintptr_t pc, const std::string& fn) {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(pc), &info)) return "?: " + fn;
  std::string object = info.dli_fname ? info.dli_fname : "";
  if (size_t slash = object.rfind('/'); slash != std::string::npos) object.erase(0, slash + 1);
  char off[32];
  std::snprintf(off, sizeof off, "(+0x%lx)",
                static_cast<unsigned long>(pc - reinterpret_cast<uintptr_t>(info.dli_fbase)));
  return object + off + ": " + (fn != "?" ? fn : demangle(info.dli_sname));
}

struct Frames {
  std::vector<std::string> out;
  bool done = false;  // past main
};

// One frame: skipped inside libretorch, named, and the walk stopped after main.
int add_frame(Frames& f, uintptr_t pc, const char* file, int line, const char* fn) {
  if (f.done || pc == 0 || in_retorch(pc)) return 0;
  const std::string name = demangle(fn);
  if (fn != nullptr && library_function(name)) return 0;
  if (file != nullptr)
    f.out.push_back(std::string(file) + "(" + std::to_string(line) + "): " + name);
  else
    f.out.push_back(symbol_frame(pc, name));
  if (fn != nullptr && std::string(fn) == "main") f.done = true;
  return 0;
}

#ifdef RETORCH_HAVE_LIBBACKTRACE
backtrace_state* state() {
  static backtrace_state* s = backtrace_create_state(nullptr, /*threaded=*/1, nullptr, nullptr);
  return s;
}
// The ELF symbol table's name of pc (found without -rdynamic, unlike dladdr's).
void on_symbol(void* data, uintptr_t, const char* name, uintptr_t, uintptr_t) {
  *static_cast<const char**>(data) = name;
}
int on_frame(void* data, uintptr_t pc, const char* file, int line, const char* fn) {
  if (file == nullptr && fn == nullptr && pc != 0)
    backtrace_syminfo(state(), pc, on_symbol, nullptr, &fn);
  return add_frame(*static_cast<Frames*>(data), pc, file, line, fn);
}
#endif

}  // namespace

std::vector<std::string> native_stack() {
  Frames f;
#ifdef RETORCH_HAVE_LIBBACKTRACE
  if (backtrace_state* s = state())
    backtrace_full(s, /*skip=*/0, on_frame, /*error_callback=*/nullptr, &f);
#else
  void* pcs[128];
  const int n = backtrace(pcs, 128);
  for (int i = 0; i < n && !f.done; ++i) {
    const uintptr_t pc = reinterpret_cast<uintptr_t>(pcs[i]);
    Dl_info info{};
    const char* fn = dladdr(pcs[i], &info) ? info.dli_sname : nullptr;
    add_frame(f, pc, nullptr, 0, fn);
  }
#endif
  return std::move(f.out);
}

}  // namespace retorch::profiler
