// Reporting an allocator's events to the memory observer (set_memory_observer, Allocator.h), for
// allocators outside core: the CUDA caching allocator, test allocators.
#pragma once
#include "retorch/core/Allocator.h"

namespace retorch {

/// Hands one allocation (bytes > 0) or free (bytes < 0) on e.device, with its allocator's totals
/// after it, to the memory observer when one is set (one relaxed atomic load otherwise). Call it
/// outside the allocator's own lock: the observer takes its own.
void report_memory_event(const MemoryEvent& e);

}  // namespace retorch
