"""retorch.compile: a function or module traced on its first call, its pointwise work built into
generated C++ kernels (cached on disk), the rest run eagerly; new input shapes, dtypes or strides
recompile (see docs/compiler.md)."""
import functools

from . import _C
from ._C import Tensor


class CompiledFunction:
    """What retorch.compile returns: call it like the original. `source` is the generated C++ of
    the last call's specialization, `kernel_names` its kernels, `num_compiled` the number of
    specializations built so far."""

    def __init__(self, fn, max_recompiles=8, max_fusion_size=64, horizontal=True, threads=0,
                 target="cpu"):
        from . import jit
        from .nn import Module

        self._fn = fn
        self._returns_tuple = None
        functools.update_wrapper(self, fn.forward if isinstance(fn, Module) else fn,
                                 updated=())

        def tracer(inputs):
            traced = jit.trace(fn, tuple(inputs))
            self._returns_tuple = traced._returns_tuple
            attrs = []
            if isinstance(fn, Module):
                attrs = list(traced._named_parameters) + list(traced._named_buffers)
            return traced._c.graph, attrs

        def eager(inputs):
            flat, is_tuple = jit._flatten(fn(*inputs))
            self._returns_tuple = is_tuple
            return flat

        self._c = _C._compiler.CompiledFunction(tracer, eager, max_recompiles, max_fusion_size,
                                                horizontal, threads, target)

    def __call__(self, *inputs):
        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(f"retorch.compile: input {i} is a {type(t).__name__}; compiled "
                                "functions take tensors")
        outs = self._c(list(inputs))
        return tuple(outs) if self._returns_tuple else outs[0]

    # Read-only views of the C++ object (the last call's specialization, and counters).
    source = property(lambda self: self._c.source)
    loop_ir = property(lambda self: self._c.loop_ir)
    kernel_names = property(lambda self: self._c.kernel_names)
    num_compiled = property(lambda self: self._c.num_compiled)
    eager_calls = property(lambda self: self._c.eager_calls)
    cache_hit = property(lambda self: self._c.cache_hit)
    cuda_source = property(lambda self: self._c.cuda_source)


def compile(model=None, *, max_recompiles=8, max_fusion_size=64, horizontal=True, threads=0,
            target="cpu"):
    """Compiles a function of tensors or a retorch.nn.Module (torch.compile's entry point); use
    it as `retorch.compile(fn)` or as a decorator, with or without options. target="cuda_emulated"
    generates the CUDA kernels instead and runs them on the host, one loop iteration per GPU
    thread: a test of the CUDA emitter on machines without a GPU (`cuda_source` is the device
    form, `retorch._C._compiler.compile_ptx` builds it with NVRTC)."""
    options = dict(max_recompiles=max_recompiles, max_fusion_size=max_fusion_size,
                   horizontal=horizontal, threads=threads, target=target)
    if model is None:
        return lambda fn: CompiledFunction(fn, **options)
    if not callable(model):
        raise TypeError(f"retorch.compile: {type(model).__name__} is not callable")
    return CompiledFunction(model, **options)
