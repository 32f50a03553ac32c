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


class profile:
    """A profiling session as a context manager (torch.profiler.profile); one at a time."""

    def __init__(self, record_shapes=False):
        self.record_shapes = record_shapes
        self._p = None

    def __enter__(self):
        self._p = _C._profiler.Profile(bool(self.record_shapes))
        return self

    def __exit__(self, *exc):
        self._p.stop()
        return False

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

    def export_chrome_trace(self, path):
        self._session().export_chrome_trace(str(path))


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
