// CPU feature detection and the process-wide cap on the vector code the kernels run.
#include "retorch/backend/cpu/CpuIsa.h"

#include <atomic>
#include <cstdlib>

#include "retorch/core/Error.h"

namespace retorch::cpu {

namespace {

CpuIsa detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return CpuIsa::kScalar;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return CpuIsa::kAvx512;
  return CpuIsa::kAvx2;
#else
  return CpuIsa::kScalar;
#endif
}

CpuIsa parse(const std::string& name) {
  if (name == "scalar") return CpuIsa::kScalar;
  if (name == "avx2") return CpuIsa::kAvx2;
  if (name == "avx512") return CpuIsa::kAvx512;
  RT_CHECK(false, "set_cpu_isa: unknown instruction set '", name,
           "'; choose one of scalar, avx2, avx512");
  return CpuIsa::kScalar;
}

CpuIsa initial() {
  CpuIsa isa = cpu_isa_supported();
  if (const char* env = std::getenv("RETORCH_CPU_ISA"); env && *env) {
    CpuIsa cap = parse(env);
    if (cap < isa) isa = cap;
  }
  return isa;
}

std::atomic<CpuIsa>& current() {
  static std::atomic<CpuIsa> isa{initial()};
  return isa;
}

}  // namespace

CpuIsa cpu_isa_supported() {
  static const CpuIsa isa = detect();
  return isa;
}

CpuIsa cpu_isa() { return current().load(std::memory_order_relaxed); }

void set_cpu_isa(const std::string& name) {
  CpuIsa cap = parse(name);
  current().store(cap < cpu_isa_supported() ? cap : cpu_isa_supported(),
                  std::memory_order_relaxed);
}

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar: return "scalar";
    case CpuIsa::kAvx2: return "avx2";
    case CpuIsa::kAvx512: return "avx512";
  }
  return "?";
}

}  // namespace retorch::cpu
