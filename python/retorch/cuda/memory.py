"""retorch.cuda.memory: torch.cuda.memory's functions. The statistics come from the device API
(retorch/_device_api.py: 0 bytes and {} without a device); this file adds torch's deprecated
aliases, the nested statistics, raw allocations from the caching allocator and pynvml's process
list. Without a GPU, functions that need one fail as torch's (see _extras._lazy_init)."""
import warnings

from .. import _C
from . import (StreamContext, current_device, current_stream, empty_cache,  # noqa: F401
               is_available, max_memory_allocated, max_memory_reserved, mem_get_info,
               memory_allocated, memory_reserved, memory_stats, memory_summary,
               reset_peak_memory_stats)
from ._extras import _lazy_init

__all__ = ["caching_allocator_alloc", "caching_allocator_delete",
           "set_per_process_memory_fraction", "empty_cache", "memory_stats",
           "memory_stats_as_nested_dict", "reset_accumulated_memory_stats",
           "reset_peak_memory_stats", "reset_max_memory_allocated", "reset_max_memory_cached",
           "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "memory_cached", "max_memory_cached", "memory_snapshot", "memory_summary",
           "list_gpu_processes", "mem_get_info"]


def _device_index(dev):
    """torch's _get_device_index(dev, optional=True) for cuda: None is the current device."""
    if dev is None:
        return current_device()
    if isinstance(dev, int):
        return dev
    d = _C.device(dev) if isinstance(dev, str) else dev
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return current_device() if d.index is None else d.index


# Raw blocks handed out by caching_allocator_alloc, by address: each is a uint8 tensor whose
# memory goes back to the caching allocator when caching_allocator_delete drops it.
_raw_blocks = {}


def caching_allocator_alloc(size, device=None, stream=None):
    """`size` bytes from the caching allocator of `device`, for use on `stream` (the current
    stream by default); returns the address, to be freed with caching_allocator_delete."""
    _lazy_init()
    index = _device_index(device)
    if stream is None:
        stream = current_stream(index)
    if not isinstance(stream, _C.Stream):
        raise TypeError("Invalid type for stream argument, must be `retorch.cuda.Stream` (retorch "
                        "streams have no raw pointer to pass instead)")
    if size == 0:
        return 0
    with StreamContext(stream):
        block = _C.empty([int(size)], dtype=_C.uint8, device=_C.device(f"cuda:{index}"))
    _raw_blocks[block.data_ptr()] = block
    return block.data_ptr()


def caching_allocator_delete(mem_ptr):
    """Frees an address from caching_allocator_alloc (back to the cache, not to the driver)."""
    if mem_ptr == 0:
        return
    if _raw_blocks.pop(mem_ptr, None) is None:
        raise RuntimeError(f"invalid device pointer: {hex(mem_ptr)}")


def set_per_process_memory_fraction(fraction, device=None):
    """Caps this process's share of the device's memory. retorch's caching allocator has no cap
    yet, so only 1.0 (no cap) is accepted on a device."""
    _lazy_init()
    _device_index(device)
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    if fraction < 1:
        raise NotImplementedError("set_per_process_memory_fraction: retorch's caching allocator "
                                  "cannot cap its memory yet")


def memory_stats_as_nested_dict(device=None):
    """memory_stats(device) with its dotted keys as nested dicts ({} without a device)."""
    if not is_available():
        return {}
    out = {}
    for key, value in memory_stats(device).items():
        *path, last = key.split(".")
        node = out
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return out


def reset_accumulated_memory_stats(device=None):
    """Resets the allocator's accumulated counters: retorch's statistics have none (only current
    and peak values, see memory_stats), so there is nothing to reset."""
    if is_available():
        _device_index(device)


def reset_max_memory_allocated(device=None):
    warnings.warn("retorch.cuda.reset_max_memory_allocated now calls "
                  "retorch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning)
    return reset_peak_memory_stats(device=device)


def reset_max_memory_cached(device=None):
    warnings.warn("retorch.cuda.reset_max_memory_cached now calls "
                  "retorch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning)
    return reset_peak_memory_stats(device=device)


def memory_cached(device=None):
    """Deprecated: memory_reserved."""
    warnings.warn("retorch.cuda.memory_cached has been renamed to retorch.cuda.memory_reserved",
                  FutureWarning)
    return memory_reserved(device=device)


def max_memory_cached(device=None):
    """Deprecated: max_memory_reserved."""
    warnings.warn("retorch.cuda.max_memory_cached has been renamed to "
                  "retorch.cuda.max_memory_reserved", FutureWarning)
    return max_memory_reserved(device=device)


def memory_snapshot():
    """The caching allocator's segments: none without a device; retorch's allocator does not
    list its segments yet on one."""
    if not is_available():
        return []
    raise NotImplementedError("memory_snapshot: retorch's caching allocator does not export its "
                              "segments yet (memory_stats and memory_summary have its totals)")


def list_gpu_processes(device=None):
    """The processes running on the device and their memory, as NVML reports them (needs the
    pynvml package, as torch's)."""
    try:
        import pynvml
    except ModuleNotFoundError:
        return "pynvml module not found, please install pynvml"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError_DriverNotLoaded:
        return "cuda driver can't be loaded, is cuda enabled?"
    index = _device_index(device)
    procs = pynvml.nvmlDeviceGetComputeRunningProcesses(pynvml.nvmlDeviceGetHandleByIndex(index))
    lines = [f"GPU:{index}"]
    if not procs:
        lines.append("no processes are running")
    for p in procs:
        lines.append(f"process {p.pid:>10d} uses {p.usedGpuMemory / 2**20:>12.3f} MB GPU memory")
    return "\n".join(lines)
