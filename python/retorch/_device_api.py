"""The torch.cuda-shaped API of one device type, shared by retorch.cuda, retorch.mps, retorch.xpu.

Without the device (always for mps and xpu; for cuda without the CUDA backend or a GPU) the
functions answer truthfully: is_available() is False, device_count() 0, streams are labels that
are always idle, events time the host clock, memory queries report 0 bytes (tensors "on" the
device live in host memory), and random ops draw from the CPU generator, so seeding acts on it.
Tensors and modules moved to the device still work: the device fallback runs their ops on the CPU.
With the CUDA backend and a GPU, cuda streams are CUDA streams (Note [CUDA streams]).
"""

from . import _C

Stream = _C.Stream
Event = _C.Event


def _install(ns, kind):
    """Defines the device API of `kind` ("cuda", "mps", "xpu") in the module namespace ns."""

    def _index(device):
        if device is None:
            return -1
        if isinstance(device, int):
            return device
        d = _C.device(device) if isinstance(device, str) else device
        if d.type != kind:
            raise ValueError(f"Expected a {kind} device, but got: {d}")
        return -1 if d.index is None else d.index

    def is_available():
        return _C._device_available(kind)

    def device_count():
        return _C._device_count(kind)

    def is_initialized():
        return is_available()

    def current_device():
        return _C._current_device(kind)

    def set_device(device):
        _C._set_device(kind, _index(device))

    def synchronize(device=None):
        _C._synchronize(kind, _index(device))

    def current_stream(device=None):
        return _C._current_stream(kind, _index(device))

    def default_stream(device=None):
        return _C._default_stream(kind, _index(device))

    class StreamContext:
        """Makes `stream` the current stream of its device for the block (torch.cuda's
        StreamContext; None leaves the current one). Re-entrant and nestable."""

        def __init__(self, stream):
            self.stream = stream
            self._prev = []

        def __enter__(self):
            if self.stream is not None:
                self._prev.append(current_stream(self.stream.device.index))
                _C._set_stream(self.stream)
            return self.stream

        def __exit__(self, *exc):
            if self.stream is not None:
                _C._set_stream(self._prev.pop())
            return False

    def stream(s):
        """The block with s as the current stream: `with retorch.cuda.stream(s):`."""
        return StreamContext(s)

    def set_stream(s):
        _C._set_stream(s)

    class device:  # noqa: N801  (torch.cuda.device)
        """Context manager that makes `idx` the current device for the block."""

        def __init__(self, idx):
            self.idx = _index(idx)
            self.prev = -1

        def __enter__(self):
            self.prev = current_device()
            if self.idx >= 0:
                set_device(self.idx)

        def __exit__(self, *exc):
            if self.idx >= 0:
                set_device(self.prev)
            return False

    def manual_seed(seed):
        _C._device_manual_seed(kind, int(seed))

    manual_seed_all = manual_seed

    def seed():
        """Seeds the device's generator (the cpu generator, see above) from a random number."""
        _C.default_generator().seed()

    seed_all = seed

    def initial_seed():
        """The seed the device's generator was last seeded with."""
        return _C.default_generator().initial_seed()

    def get_rng_state(device=None):
        return _C._device_get_rng_state(kind, _index(device))

    def set_rng_state(new_state, device=None):
        _C._device_set_rng_state(kind, new_state, _index(device))

    def get_rng_state_all():
        return [get_rng_state(i) for i in range(max(device_count(), 1))]

    def set_rng_state_all(new_states):
        for i, s in enumerate(new_states):
            set_rng_state(s, i)

    def memory_allocated(device=None):
        return _C._memory_stat(kind, "allocated", _index(device))

    def max_memory_allocated(device=None):
        return _C._memory_stat(kind, "max_allocated", _index(device))

    def memory_reserved(device=None):
        return _C._memory_stat(kind, "reserved", _index(device))

    def max_memory_reserved(device=None):
        return _C._memory_stat(kind, "max_reserved", _index(device))

    def reset_peak_memory_stats(device=None):
        _C._reset_peak_memory_stats(kind, _index(device))

    def empty_cache():
        _C._empty_cache(kind)

    def memory_summary(device=None, abbreviated=False):
        return _C._memory_summary(kind, _index(device))

    def memory_stats(device=None):
        """torch.cuda.memory_stats's keys for what the caching allocator counts ({} without the
        device, as torch's before its first allocation)."""
        i = _index(device)
        if not is_available():
            return {}
        stat = {"allocated_bytes": ("allocated", "max_allocated"),
                "reserved_bytes": ("reserved", "max_reserved")}
        out = {}
        for key, (current, peak) in stat.items():
            out[f"{key}.all.current"] = _C._memory_stat(kind, current, i)
            out[f"{key}.all.peak"] = _C._memory_stat(kind, peak, i)
        return out

    def get_device_properties(device=None):
        """name, major, minor (the compute capability), total_memory, multi_processor_count and
        L2_cache_size of the device; raises without one, as torch's does."""
        return _C._device_properties(kind, _index(device))

    def get_device_name(device=None):
        return get_device_properties(device).name

    def get_device_capability(device=None):
        p = get_device_properties(device)
        return p.major, p.minor

    def mem_get_info(device=None):
        """(free, total) bytes of the device's memory, as the driver reports them."""
        return _C._mem_get_info(kind, _index(device))

    def is_bf16_supported(including_emulation=True):
        """Whether the current device computes in bfloat16 natively (compute capability 8.0 or
        later); False without a device."""
        return is_available() and get_device_capability()[0] >= 8

    class _KindStream(Stream):
        """A new stream of this device type (torch.cuda.Stream(device=None, priority=0))."""

        def __init__(self, device=None, priority=0, **kwargs):
            index = _index(device)
            Stream.__init__(self, _C.device(kind if index < 0 else f"{kind}:{index}"), priority)

    _KindStream.__name__ = _KindStream.__qualname__ = "Stream"
    for name, value in list(locals().items()):
        if not name.startswith("_") and name not in ("ns", "kind"):
            ns[name] = value
    ns["Stream"] = _KindStream
    ns["Event"] = Event
    ns["OutOfMemoryError"] = _C.OutOfMemoryError  # torch.cuda.OutOfMemoryError
