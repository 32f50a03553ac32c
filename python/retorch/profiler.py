"""retorch.profiler (torch.profiler): `with profile(record_shapes=True) as p:` records every op
and every `record_function` range on this thread; `p.key_averages().table(sort_by=...,
row_limit=...)` prints PyTorch's table, `p.kernel_summary()` Nsight's kernel summary, and
`p.export_chrome_trace(path)` writes a trace Perfetto loads (docs/profiler.md); with
`on_trace_ready=tensorboard_trace_handler(dir)` each trace lands in dir for TensorBoard."""
import enum
import functools
import gzip
import os
import shutil
import socket
import tempfile
import time
import warnings

from . import _C

__all__ = ["profile", "record_function", "schedule", "supported_activities", "ProfilerAction",
           "ProfilerActivity", "tensorboard_trace_handler", "kineto_available", "memory_summary"]


class ProfilerActivity(enum.Enum):
    """What a profile records (torch.profiler.ProfilerActivity): host ops, device kernels."""
    CPU = 0
    CUDA = 1

    def __int__(self):
        return self.value


class ProfilerAction(enum.Enum):
    """What a schedule asks of a step (torch.profiler.ProfilerAction)."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities():
    """The activities this process can record: CPU, and CUDA with a CUDA device."""
    acts = {ProfilerActivity.CPU}
    if _C._device_available("cuda"):
        acts.add(ProfilerActivity.CUDA)
    return acts


def kineto_available():
    """Whether the profiler runs on Kineto: retorch's profiler is its own (and torch's build
    here answers False too)."""
    return False


class _KeyAverages(list):
    """key_averages(): one dict per op name (and input shapes when grouped by them), with torch's
    field names (key, count, cpu_time_total, self_cpu_time_total, cpu_time; microseconds)."""

    def __init__(self, profile, group_by_input_shape):
        super().__init__(profile.key_averages(group_by_input_shape, "self_cpu_time_total"))
        self._profile = profile
        self._by_shape = group_by_input_shape

    def table(self, sort_by=None, row_limit=100):
        return self._profile.table(sort_by or "self_cpu_time_total", row_limit, self._by_shape)


class _Schedule(tuple):
    """schedule()'s result: the (wait, warmup, active, repeat) the C++ profile runs, and, as
    torch's schedule function, callable on a step number to give that step's ProfilerAction."""

    def __call__(self, step):
        assert step >= 0
        wait, warmup, active, repeat = self
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD_AND_SAVE if pos == cycle - 1 else ProfilerAction.RECORD


def schedule(*, wait, warmup, active, repeat=0, skip_first=0):
    """torch.profiler.schedule: per cycle `wait` steps unrecorded, `warmup` recorded and
    discarded, `active` recorded; `repeat` cycles (0: until the profile stops)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError("Invalid profiler schedule arguments")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results")
    if skip_first:
        raise NotImplementedError("profiler.schedule: skip_first is not supported yet")
    return _Schedule((int(wait), int(warmup), int(active), int(repeat)))


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An on_trace_ready that writes each trace into dir_name (made if missing) as
    `{worker_name}.{milliseconds}.pt.trace.json[.gz]`, worker_name defaulting to
    `{hostname}_{pid}`, as torch's (TensorBoard's profiler plugin reads them)."""

    def handler_fn(prof):
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception:
                raise RuntimeError("Can't create directory: " + dir_name)
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{int(time.time() * 1000)}.pt.trace.json"
        if use_gzip:
            file_name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


class profile:
    """A profiling session as a context manager (torch.profiler.profile); one at a time. With a
    `schedule`, call `step()` after each training step; `on_trace_ready(prof)` runs when an
    active window ends. `activities` (torch's; all supported ones by default) must include one
    that is supported; retorch records host ops and, with a device, its kernels either way."""

    def __init__(self, record_shapes=False, schedule=None, on_trace_ready=None,
                 profile_memory=False, with_stack=False, *, activities=None):
        self.activities = set(activities) if activities else supported_activities()
        self.record_shapes = record_shapes
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self._p = None

    def __enter__(self):
        if (ProfilerActivity.CUDA in self.activities
                and ProfilerActivity.CUDA not in supported_activities()):
            warnings.warn("CUDA is not available, disabling CUDA profiling")
            self.activities.discard(ProfilerActivity.CUDA)
        assert self.activities & set(ProfilerActivity), "No activities specified for the profiler"
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
        count), max_events caps its size (0: no cap; a note says what was dropped). A path
        ending in .gz is written gzip-compressed, as torch's."""
        path = str(path)
        if not path.endswith(".gz"):
            self._session().export_chrome_trace(path, merge_identical, max_events)
            return
        fd, tmp = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            self._session().export_chrome_trace(tmp, merge_identical, max_events)
            with open(tmp, "rb") as src, gzip.open(path, "wb") as dst:
                shutil.copyfileobj(src, dst)
        finally:
            os.remove(tmp)

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
