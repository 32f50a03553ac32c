"""retorch.jit: record a function or module into a graph by running it (torch.jit.trace,
trace_module), script, save/load, freeze, and fork/wait with eager semantics."""
import inspect
import os
import warnings

from .. import _C
from .._C import Tensor
from ._api import (ignore, unused, export, is_scripting, is_tracing, Final, annotate,  # noqa: F401
                   script_if_tracing, Attribute, interface, Error, _tracing)
from ._async import Future, fork, wait  # noqa: F401
from ._graph_module import GraphModuleAccessors

__all__ = ["trace", "script", "save", "load", "TracerWarning", "ScriptFunction", "TracedModule",
           "LoadedModule", "run_passes", "ignore", "unused", "export", "is_scripting", "is_tracing",
           "Final", "annotate", "script_if_tracing", "Attribute", "interface", "Error",
           "TracedMethod", "trace_module", "Future", "fork", "wait", "freeze",
           "optimize_for_inference", "run_frozen_optimizations", "FrozenModule"]

# Frames in files under this directory are retorch's own: source locations skip them.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class TracerWarning(Warning):
    """The trace may not generalize: a traced tensor became a Python value (item(), tolist(),
    bool()), which the graph holds as a constant."""


def _input_names(fn, count):
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []
    names = []
    for p in params:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            break
        names.append(p.name)
    return names[:count]


def _flatten(out):
    if isinstance(out, Tensor):
        return [out], False
    if isinstance(out, (tuple, list)) and all(isinstance(t, Tensor) for t in out):
        return list(out), True
    raise TypeError("retorch.jit.trace: the traced function must return a tensor or a tuple of "
                    f"tensors, got {type(out).__name__}")


class ScriptFunction:
    """A traced function: `graph` (its str is the graph's text), `code`, and calls that run the
    graph through the interpreter."""

    def __init__(self, c, returns_tuple, name):
        self._c = c
        self._returns_tuple = returns_tuple
        self.__name__ = name

    @property
    def graph(self):
        return self._c.graph

    @property
    def code(self):
        return self._c.code

    def _wrap(self, outs):
        return tuple(outs) if self._returns_tuple else outs[0]

    def __call__(self, *inputs):
        return self._wrap(self._c.run(list(inputs)))

    def __repr__(self):
        return f"<retorch.jit.ScriptFunction {self.__name__}>"


class TracedModule(GraphModuleAccessors, ScriptFunction):
    """A traced module: forward runs the graph on the module's own parameters and buffers (the
    same tensors, so training either trains both). `training` is the module's flag at trace time;
    train()/eval() set it (the graph keeps what the trace recorded, as torch's traces do). c is
    None for a trace_module result without a traced forward."""

    def __init__(self, c, returns_tuple, module):
        super().__init__(c, returns_tuple, type(module).__name__)
        self._named_parameters = list(module.named_parameters())
        self._named_buffers = [(n, b) for n, b in module.named_buffers() if b is not None]
        self.training = module.training
        self._method_names = []

    def forward(self, *inputs):
        return self._wrap(self._forward_c().forward(list(inputs)))

    def train(self, mode=True):
        self.training = mode
        return self

    def eval(self):
        return self.train(False)

    def __repr__(self):
        return f"<retorch.jit.TracedModule {self.__name__}>"


class TracedMethod(ScriptFunction):
    """A method other than forward traced by trace_module: calls run its graph on the module's
    parameters and buffers."""

    def __call__(self, *inputs):
        return self._wrap(self._c.forward(list(inputs)))

    def __repr__(self):
        return f"<retorch.jit.TracedMethod {self.__name__}>"


def _example_list(example_inputs):
    if isinstance(example_inputs, Tensor):
        example_inputs = (example_inputs,)
    inputs = list(example_inputs)
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"retorch.jit.trace: example input {i} is a {type(t).__name__}, "
                            "not a Tensor")
    return inputs


def _trace_graph(func, inputs, module=None, names_of=None):
    """Records func(*inputs) into a graph: a ScriptModule reading module's parameters and
    buffers with prim::GetAttr when module is given, else a ScriptFunction; and whether func
    returned a tuple."""
    returns_tuple = []

    def run(args):
        with _tracing():  # is_tracing() is True inside func
            flat, is_tuple = _flatten(func(*args))
        returns_tuple.append(is_tuple)
        return flat

    names = _input_names(names_of or func, len(inputs))
    if module is None:
        graph = _C._jit._trace(run, inputs, [], names, "", _PACKAGE_DIR, TracerWarning)
        return _C._jit.ScriptFunction(graph), returns_tuple[0]
    params = list(module.named_parameters())
    buffers = [(n, b) for n, b in module.named_buffers() if b is not None]
    graph = _C._jit._trace(run, inputs, params + buffers, names,
                           "__torch__." + type(module).__name__, _PACKAGE_DIR, TracerWarning)
    return _C._jit.ScriptModule(graph, params, buffers), returns_tuple[0]


def trace(func, example_inputs):
    """Runs func(*example_inputs) once, recording every op into a graph; returns a callable that
    replays the graph (for inputs of the same shapes, dtypes and devices, and the same control
    flow). func is a Python function or a retorch.nn.Module; its parameters and buffers are read
    with prim::GetAttr[name="fc1.weight"](%self). Python values computed from tensors (item(),
    sizes) become constants; item()/tolist() of a traced tensor warns with TracerWarning."""
    from ..nn import Module

    inputs = _example_list(example_inputs)
    if isinstance(func, Module):
        c, returns_tuple = _trace_graph(func, inputs, func, func.forward)
        return TracedModule(c, returns_tuple, func)
    if not callable(func):
        raise TypeError(f"retorch.jit.trace: {type(func).__name__} is not callable")
    c, returns_tuple = _trace_graph(func, inputs)
    return ScriptFunction(c, returns_tuple, getattr(func, "__name__", "forward"))


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None,
                 check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
                 _compilation_unit=None):
    """Traces several methods of a module: inputs maps a method name to its example inputs (a
    tensor or a sequence of tensors). Returns a TracedModule whose forward (when traced) and
    other traced methods (TracedMethod attributes) run their graphs on the module's parameters
    and buffers. check_trace / check_inputs / check_tolerance / strict are accepted for torch's
    signature; retorch does not re-run traces to check them."""
    from ..nn import Module

    if optimize is not None:
        warnings.warn("`optimize` is deprecated and has no effect. Use `with "
                      "torch.jit.optimized_execution() instead")
    if not isinstance(mod, Module):
        raise AttributeError("expected torch.nn.Module as the first argument")
    if not isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    result = TracedModule(None, None, mod)
    for name, example in inputs.items():
        method = getattr(mod, name)
        if not isinstance(example, Tensor):
            example = tuple(example)  # TypeError for a non-sequence, as torch's make_tuple
        func = mod if name == "forward" else method  # forward runs through __call__ (hooks)
        c, returns_tuple = _trace_graph(func, _example_list(example), mod, method)
        if name == "forward":
            result._c, result._returns_tuple = c, returns_tuple
        else:
            setattr(result, name, TracedMethod(c, returns_tuple, name))
            result._method_names.append(name)
    return result


class ScriptedFunction(ScriptFunction):
    """A scripted function (retorch.jit.script): its graph was built from the Python source."""

    def __call__(self, *inputs):
        outs = self._c.run_values(list(inputs))
        return tuple(outs) if len(outs) != 1 else outs[0]

    def __repr__(self):
        return f"<retorch.jit.ScriptedFunction {self.__name__}>"


def script(fn):
    """Compiles a Python function from its source (straight-line code, if/else, `for i in
    range(n)`, operators and retorch/torch/F calls) into a graph run by the interpreter, like
    torch.jit.script; also usable as a decorator. Unsupported constructs raise RuntimeError with
    the file and line."""
    from . import _script

    if not callable(fn) or isinstance(fn, type) or not hasattr(fn, "__code__"):  # a Module
        raise NotImplementedError(
            f"retorch.jit.script: scripting a {type(fn).__name__} is not supported; script a "
            "function, or record a module with retorch.jit.trace(module, example_inputs)")
    text = _script.graph_text(fn)
    graph = _C._jit._parse_ir(text)
    return ScriptedFunction(_C._jit.ScriptFunction(graph), False, getattr(fn, "__name__", "fn"))


class LoadedModule(ScriptFunction):
    """A module read by retorch.jit.load: its graph, parameters and buffers, without its class."""

    def __init__(self, c):
        super().__init__(c, None, "LoadedModule")

    def forward(self, *inputs):
        outs = self._c.forward(list(inputs))
        return outs[0] if len(outs) == 1 else tuple(outs)

    __call__ = forward

    def named_parameters(self):
        return iter(self._c.named_parameters())

    def parameters(self):
        return iter(p for _, p in self._c.named_parameters())

    def named_buffers(self):
        return iter(self._c.named_buffers())

    def __repr__(self):
        return "<retorch.jit.LoadedModule>"


class _LoadedFunction(ScriptFunction):
    def __call__(self, *inputs):
        outs = self._c.run_values(list(inputs))
        return outs[0] if len(outs) == 1 else tuple(outs)


def save(m, path):
    """Writes a traced or scripted function/module to one file (graph text + safetensors weights)
    that retorch.jit.load (or C++ jit::load) reads back without the original class."""
    c = getattr(m, "_c", None)
    if isinstance(c, _C._jit.ScriptModule):
        _C._jit._save_module(c, str(path))
    elif isinstance(c, _C._jit.ScriptFunction):
        _C._jit._save_function(c, str(path))
    else:
        raise TypeError(f"retorch.jit.save: expected a traced or scripted object, got "
                        f"{type(m).__name__}")


def load(path):
    """Reads a file written by retorch.jit.save: a LoadedModule or a callable function."""
    is_module, c = _C._jit._load(str(path))
    return LoadedModule(c) if is_module else _LoadedFunction(c, None, "loaded")


def run_passes(fn, passes=None):
    """Runs graph passes on a traced/scripted/loaded program in place: `passes` names them
    (inline, dce, cse, constprop, pool, peephole, decompose, shapes, fuse, unfuse); None runs the
    default pipeline. RETORCH_JIT_LOG="dce,cse" prints the graph before and after those passes."""
    if passes is None:
        fn._c.run_default_passes()
    else:
        fn._c.run_passes(list(passes))
    return fn


from ._freeze import (freeze, optimize_for_inference, run_frozen_optimizations,  # noqa: E402,F401
                      FrozenModule)
