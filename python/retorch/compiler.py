"""retorch.compiler (torch.compiler's place): `benchmark(fn)` times a callable like Triton's
do_bench (retorch/compiler/Benchmark.h): warm-up and repetition counts from an estimate of its
runtime, the caches flushed between runs, median and percentiles in seconds."""
from collections import namedtuple

from . import _C

BenchmarkResult = namedtuple("BenchmarkResult", "median p20 p80 min mean warmup reps")


def benchmark(fn, warmup_ms=25.0, rep_ms=100.0, flush_cache=True):
    """Times fn() (no arguments): 5 calls estimate it, then warmup_ms / estimate warm-up calls
    and rep_ms / estimate timed calls. Returns a BenchmarkResult (times in seconds)."""
    if not callable(fn):
        raise TypeError(f"benchmark: expected a callable, got {type(fn).__name__}")
    if warmup_ms < 0 or rep_ms <= 0:
        raise ValueError(f"benchmark: warmup_ms must be >= 0 and rep_ms > 0, got "
                         f"{warmup_ms} and {rep_ms}")
    r = _C._compiler.benchmark(fn, float(warmup_ms), float(rep_ms), bool(flush_cache))
    return BenchmarkResult(**r)
