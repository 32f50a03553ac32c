"""retorch.profiler (torch.profiler): `with profile(record_shapes=True) as p:` records every op
and every `record_function` range on this thread; `p.key_averages().table(sort_by=...,
row_limit=...)` prints PyTorch's table, `p.kernel_summary()` Nsight's kernel summary, and
`p.export_chrome_trace(path)` writes a trace Perfetto loads (docs/profiler.md)."""
import functools

from . import _C


class _KeyAverages(list):
    """key_averages(): one dict per op name (and input shapes when grouped by them), with torch's
    field names (key, count, cpu_time_total, self_cpu_time_total, cpu_time; microseconds)."""

    def __init__(self, profile, group_by_input_shape):
        super().__init__(profile.key_averages(group_by_input_shape, "self_cpu_time_total"))
        self._profile = profile
        self._by_shape = group_by_input_shape

    def table(self, sort_by=None, row_limit=100):
        return self._profile.table(sort_by or "self_cpu_time_total", row_limit, self._by_shape)


def schedule(*, wait, warmup, active, repeat=0, skip_first=0):
    """torch.profiler.schedule: per cycle `wait` steps unrecorded, `warmup` recorded and
    discarded, `active` recorded; `repeat` cycles (0: until the profile stops)."""
    if skip_first:
        raise NotImplementedError("profiler.schedule: skip_first is not supported yet")
    return (int(wait), int(warmup), int(active), int(repeat))


class profile:
    """A profiling session as a context manager (torch.profiler.profile); one at a time. With a
    `schedule`, call `step()` after each training step; `on_trace_ready(prof)` runs when an
    active window ends."""

    def __init__(self, record_shapes=False, schedule=None, on_trace_ready=None,
                 profile_memory=False, with_stack=False):
        self.record_shapes = record_shapes
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self._p = None

    def __enter__(self):
        self._p = _C._profiler.Profile(bool(self.record_shapes), self.schedule,
                                       bool(self.profile_memory), bool(self.with_stack))
        return self

    def __exit__(self, *exc):
        if self._p.stop() and self.on_trace_ready is not None:
            self.on_trace_ready(self)
        return False

    def step(self):
        if self._session().step() and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _session(self):
        if self._p is None:
            raise RuntimeError("profiler: the profile has not been started (use it in a with block)")
        return self._p

    def events(self):
        return self._session().events()

    def key_averages(self, group_by_input_shape=False):
        return _KeyAverages(self._session(), group_by_input_shape)

    def kernel_summary(self, row_limit=-1, by_op=False):
        """Nsight's kernel summary of the kernel launches, by kernel name or by issuing op."""
        return self._session().kernel_summary(row_limit, by_op)

    def export_chrome_trace(self, path, merge_identical=False, max_events=1000000):
        """Writes the trace; merge_identical folds repeated consecutive events into one (with a
        count), max_events caps its size (0: no cap; a note says what was dropped)."""
        self._session().export_chrome_trace(str(path), merge_identical, max_events)

    def memory_events(self):
        """profile_memory: (ns since start, bytes +/-, allocated, reserved, device) per allocator
        event; device is "cpu" or a device with its own memory ("cuda:0")."""
        return self._session().memory_events()

    def export_table_csv(self, path, group_by_input_shape=False):
        with open(path, "w") as f:
            f.write(self._session().table_csv(group_by_input_shape))


class record_function:
    """A named range in the active profile, as a context manager or a decorator."""

    def __init__(self, name):
        self.name = name
        self._r = None

    def __enter__(self):
        self._r = _C._profiler.RecordFunction(self.name)
        return self

    def __exit__(self, *exc):
        self._r = None  # the range ends when its C++ object goes
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name):
                return fn(*args, **kwargs)
        return wrapped


def memory_summary(device="cpu"):
    """The device allocator's statistics as text (torch.cuda.memory_summary's layout)."""
    return _C._profiler.memory_summary(str(device))
