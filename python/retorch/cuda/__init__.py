"""retorch.cuda: torch.cuda's device API (see retorch/_device_api.py for its behaviour without a device)."""
from .._device_api import _install

_install(globals(), "cuda")
del _install

from .graphs import CUDAGraph, graph, make_graphed_callables  # noqa: E402,F401
from . import amp, nvtx  # noqa: E402,F401  (torch.cuda.amp, torch.cuda.nvtx)
from ._extras import (can_device_access_peer, device_of, get_arch_list,  # noqa: E402,F401
                      get_gencode_flags, get_sync_debug_mode, has_half, has_magma, init,
                      ipc_collect, is_current_stream_capturing, set_sync_debug_mode)
from . import memory  # noqa: E402,F401  (torch.cuda.memory)
from .memory import (caching_allocator_alloc, caching_allocator_delete,  # noqa: E402,F401
                     list_gpu_processes, max_memory_cached, memory_cached, memory_snapshot,
                     memory_stats_as_nested_dict, reset_accumulated_memory_stats,
                     reset_max_memory_allocated, reset_max_memory_cached,
                     set_per_process_memory_fraction)
