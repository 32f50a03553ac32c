// Which x86 vector instruction set the hand-written kernels may use: what the CPU has, capped
// by RETORCH_CPU_ISA or set_cpu_isa (so one machine can run and compare every path).
#pragma once
#include <cstdint>
#include <string>

namespace retorch::cpu {

/// The levels the kernels have code for, each including the ones before it.
enum class CpuIsa : uint8_t {
  kScalar,  // no hand-written vector code
  kAvx2,    // AVX2 + FMA (+ F16C)
  kAvx512,  // AVX-512 F/BW/DQ/VL on top of kAvx2
};

/// The level the kernels use now: min(what the CPU has, the cap). One relaxed atomic load.
CpuIsa cpu_isa();

/// The highest level this CPU supports.
CpuIsa cpu_isa_supported();

/// Caps the level ("scalar", "avx2", "avx512"); raising it above what the CPU supports leaves it
/// at the CPU's level. RETORCH_CPU_ISA sets the initial cap. Throws on an unknown name.
void set_cpu_isa(const std::string& name);

const char* cpu_isa_name(CpuIsa isa);

}  // namespace retorch::cpu
