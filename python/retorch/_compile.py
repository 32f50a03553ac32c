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

    def __init__(self, fn, max_recompiles=8, max_fusion_size=64, horizontal=True, threads=0):
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
                                                horizontal, threads)

    def __call__(self, *inputs):
        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(f"retorch.compile: input {i} is a {type(t).__name__}; compiled "
                                "functions take tensors")
        outs = self._c(list(inputs))
        return tuple(outs) if self._returns_tuple else outs[0]

    @property
    def source(self):
        return self._c.source

    @property
    def loop_ir(self):
        return self._c.loop_ir

    @property
    def kernel_names(self):
        return self._c.kernel_names

    @property
    def num_compiled(self):
        return self._c.num_compiled

    @property
    def eager_calls(self):
        return self._c.eager_calls

    @property
    def cache_hit(self):
        return self._c.cache_hit


def compile(model=None, *, max_recompiles=8, max_fusion_size=64, horizontal=True, threads=0):
    """Compiles a function of tensors or a retorch.nn.Module (torch.compile's entry point); use
    it as `retorch.compile(fn)` or as a decorator, with or without options."""
    options = dict(max_recompiles=max_recompiles, max_fusion_size=max_fusion_size,
                   horizontal=horizontal, threads=threads)
    if model is None:
        return lambda fn: CompiledFunction(fn, **options)
    if not callable(model):
        raise TypeError(f"retorch.compile: {type(model).__name__} is not callable")
    return CompiledFunction(model, **options)
