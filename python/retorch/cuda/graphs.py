"""CUDA graphs from Python (torch.cuda.graphs): the `graph` context manager, and
`make_graphed_callables`, which replaces modules' and functions' forward and backward by the
replay of graphs captured once (Note [Graphed callables])."""
import contextlib

from .. import _C
from .._C import Tensor
from ..amp.autocast_mode import is_autocast_enabled
from ..autograd import Function, grad as _autograd_grad, once_differentiable

CUDAGraph = _C.CUDAGraph

# (device index, stream id) of the streams `graph` blocks are capturing now, for
# retorch.cuda.is_current_stream_capturing.
_capturing = set()


def _module_type():
    from ..nn.modules.module import Module  # (retorch.nn loads after retorch.cuda)
    return Module


def _cuda():
    from .. import cuda  # the package: its device API is installed before this module loads
    return cuda


class graph:  # noqa: N801  (torch.cuda.graph)
    """Captures the block's work on the current device into `cuda_graph` (torch.cuda.graph): the
    device is synchronized, the block runs on `stream` (a side stream by default: the default
    stream cannot be captured), and an error inside the block abandons the capture."""

    _default_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        self.cuda_graph = cuda_graph
        self.pool = pool
        self.capture_error_mode = capture_error_mode
        if stream is None:
            if graph._default_stream is None:
                graph._default_stream = _cuda().Stream()
            stream = graph._default_stream
        self.stream = stream
        self._context = None

    def __enter__(self):
        cuda = _cuda()
        cuda.synchronize()
        cuda.empty_cache()
        self._context = contextlib.ExitStack()
        self._context.enter_context(cuda.stream(self.stream))
        try:
            self.cuda_graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException:
            self._context.close()
            raise
        _capturing.add((self.stream.device.index, self.stream.stream_id))

    def __exit__(self, kind, value, traceback):
        try:
            if kind is None:
                self.cuda_graph.capture_end()
            else:
                self.cuda_graph._capture_abort()
        finally:
            _capturing.discard((self.stream.device.index, self.stream.stream_id))
            self._context.close()
        return False


# Note [Graphed callables]
# make_graphed_callables(callables, sample_args) follows torch's: each callable runs
# num_warmup_iters forward+backward passes on a side stream (first-call work such as cuBLAS's
# workspace stays out of the graphs), then its forward is captured into one graph on the sample
# inputs (static inputs: the sample tensors and a module's parameters), and its backward, an
# autograd.grad of the static outputs with respect to the static inputs that require grad on
# static output gradients, into a second graph; backward graphs are captured in reverse order,
# as a chain of callables would run them. The result is an autograd.Function per callable whose
# forward copies new inputs into the static ones (unless they are the same memory), replays the
# forward graph and returns the static outputs detached, and whose backward copies the incoming
# gradients into the static ones, replays the backward graph and returns the static input
# gradients. A module keeps its object: its forward is replaced by one that takes the graphs
# while the module is in the training mode it was captured in, and the eager forward otherwise.
# As in torch, outputs live in the graph's memory: the next replay overwrites them.
# Each graph has a memory pool of its own (retorch's graphs do not share pools yet, so
# graph_pool_handle and pool= are not offered): more memory than torch's shared pool, the same
# values. The capture goes through a `graphs` object (CUDA graphs here; the tests also run the
# wiring on the launch manager's cpu graphs, retorch.runtime.capture).


def _flatten(obj, what):
    """The tensors of a nest of tuples, lists and dicts, and the spec _unflatten rebuilds it by."""
    if isinstance(obj, Tensor):
        return [obj], None
    if isinstance(obj, (tuple, list)):
        kind, keys, items = type(obj), None, list(obj)
    elif isinstance(obj, dict):
        kind, keys, items = type(obj), list(obj), list(obj.values())
    else:
        raise TypeError(f"make_graphed_callables: {what} must hold only Tensors (in tuples, lists "
                        f"and dicts), got {type(obj).__name__}")
    leaves, specs = [], []
    for item in items:
        sub, spec = _flatten(item, what)
        specs.append((len(sub), spec))
        leaves += sub
    return leaves, (kind, keys, specs)


def _unflatten(leaves, spec):
    if spec is None:
        return leaves[0]
    kind, keys, specs = spec
    items, at = [], 0
    for count, sub in specs:
        items.append(_unflatten(leaves[at:at + count], sub))
        at += count
    if keys is not None:
        return kind(zip(keys, items))
    if kind is tuple or kind is list:
        return kind(items)
    return kind(*items) if hasattr(kind, "_fields") else kind(items)  # namedtuple or subclass


def _check(callables, sample_args):
    if is_autocast_enabled() and _C.is_autocast_cache_enabled():
        raise RuntimeError("make_graphed_callables does not support the autocast caching. Please "
                           "set `cache_enabled=False`.")
    if len(callables) != len(sample_args):
        raise ValueError(f"make_graphed_callables: got {len(callables)} callables and "
                         f"{len(sample_args)} tuples of sample args; expected one per callable")
    Module = _module_type()
    for c, args in zip(callables, sample_args):
        if not callable(c):
            raise TypeError(f"make_graphed_callables: expected callables, got {type(c).__name__}")
        if isinstance(c, Module):
            if c._forward_hooks or c._forward_pre_hooks:
                raise AssertionError("Modules must not have hooks registered at the time they are "
                                     "passed. However, registering hooks on modules after passing "
                                     "them through make_graphed_callables is allowed.")
            if any(b.requires_grad for b in c.buffers()):
                raise AssertionError("In any :class:`~torch.nn.Module` passed to "
                                     ":func:`~make_graphed_callables`, only parameters may be "
                                     "trainable. All buffers must have ``requires_grad=False``.")
        try:
            if not isinstance(args, tuple):
                raise TypeError
            leaves, _ = _flatten(args, "sample_args")
        except TypeError:
            raise AssertionError("In the beta API, sample_args for each callable must contain only "
                                 "Tensors. Other types are not allowed.") from None
        if any(t.device.type != "cuda" for t in leaves):
            raise ValueError("make_graphed_callables: sample_args must be cuda tensors, got "
                             f"{[str(t.device) for t in leaves]}")


class _CudaGraphs:
    """Warm-up and capture on the current CUDA device (Note [Graphed callables])."""

    @contextlib.contextmanager
    def warmup(self):
        cuda = _cuda()
        cuda.synchronize()
        side = cuda.Stream()
        side.wait_stream(cuda.current_stream())
        with cuda.stream(side):
            yield
        cuda.synchronize()

    def capture(self, fn):
        """fn's result, and the replay of the graph fn's work was captured into."""
        g = CUDAGraph()
        with graph(g):
            out = fn()
        return out, g.replay


def _grads(outputs, inputs, grad_outputs, allow_unused):
    """d(outputs)/d(inputs that require grad), one entry per input (None where it needs none)."""
    wanted = [i for i in inputs if i.requires_grad]
    got = iter(_autograd_grad(tuple(o for o in outputs if o.requires_grad), tuple(wanted),
                              grad_outputs=tuple(grad_outputs), allow_unused=allow_unused)
               if wanted else ())
    return tuple(next(got) if i.requires_grad else None for i in inputs)


def _graphed_function(fwd, bwd, n_user, spec, static_inputs, static_outputs, static_grad_outputs,
                      static_grad_inputs, params):
    class Graphed(Function):
        @staticmethod
        def forward(ctx, *inputs):
            for static, new in zip(static_inputs[:n_user], inputs[:n_user]):
                if static.data_ptr() != new.data_ptr():
                    static.copy_(new)
            fwd()
            return tuple(o.detach() for o in static_outputs)

        @staticmethod
        @once_differentiable
        def backward(ctx, *grads):
            for static, new in zip(static_grad_outputs, grads):
                if static is not None and new is not None and static.data_ptr() != new.data_ptr():
                    static.copy_(new)
            bwd()
            return tuple(None if g is None else g.detach() for g in static_grad_inputs)

    def graphed(*user_args):
        leaves, _ = _flatten(user_args, "the arguments")
        if len(leaves) != n_user:
            raise ValueError(f"graphed callable: expected {n_user} tensors as in sample_args, "
                             f"got {len(leaves)}")
        return _unflatten(Graphed.apply(*leaves, *params), spec)
    return graphed


def _make_graphed(callables, sample_args, num_warmup_iters, allow_unused_input, graphs):
    Module = _module_type()
    flat_args = [_flatten(args, "sample_args")[0] for args in sample_args]
    params = [tuple(c.parameters()) if isinstance(c, Module) else () for c in callables]
    surfaces = [tuple(a) + p for a, p in zip(flat_args, params)]
    with graphs.warmup():
        for c, args, surface in zip(callables, sample_args, surfaces):
            for _ in range(num_warmup_iters):
                outputs = _flatten(c(*args), "the outputs")[0]
                _grads(outputs, surface, [_C.empty_like(o) for o in outputs if o.requires_grad],
                       allow_unused_input)
                del outputs
    forwards, static_outputs, specs = [], [], []
    for c, args in zip(callables, sample_args):
        out, replay = graphs.capture(lambda c=c, args=args: c(*args))
        leaves, spec = _flatten(out, "the outputs")
        forwards.append(replay)
        static_outputs.append(tuple(leaves))
        specs.append(spec)
    backwards, static_grad_outputs, static_grad_inputs = [], [], []
    for surface, outs in reversed(list(zip(surfaces, static_outputs))):
        grad_outs = tuple(_C.empty_like(o) if o.requires_grad else None for o in outs)
        grad_ins, replay = graphs.capture(lambda s=surface, o=outs, g=grad_outs: _grads(
            o, s, [x for x in g if x is not None], allow_unused_input))
        backwards.append(replay)
        static_grad_outputs.append(grad_outs)
        static_grad_inputs.append(grad_ins)
    backwards.reverse()
    static_grad_outputs.reverse()
    static_grad_inputs.reverse()
    result = []
    for i, c in enumerate(callables):
        graphed = _graphed_function(forwards[i], backwards[i], len(flat_args[i]), specs[i],
                                    surfaces[i], static_outputs[i], static_grad_outputs[i],
                                    static_grad_inputs[i], params[i])
        if isinstance(c, Module):
            c.forward = _module_forward(c, c.training, graphed, c.forward)
            result.append(c)
        else:
            result.append(graphed)
    return result


def _module_forward(module, training, graphed, eager):
    def forward(*user_args):
        return graphed(*user_args) if module.training == training else eager(*user_args)
    return forward


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False,
                           pool=None):
    """torch.cuda.make_graphed_callables: graphed versions of `callables` (a module or function,
    or a tuple of them, with a tuple of sample tensors each); see Note [Graphed callables]."""
    if pool is not None:
        raise NotImplementedError("make_graphed_callables: sharing a memory pool (pool=) is not "
                                  "supported; each graph has its own")
    one = not isinstance(callables, tuple)
    if one:
        callables, sample_args = (callables,), (sample_args,)
    _check(callables, sample_args)
    if not _cuda().is_available():
        raise RuntimeError("make_graphed_callables: CUDA graphs need a CUDA device, and this "
                           "machine has none")
    result = _make_graphed(callables, sample_args, num_warmup_iters, allow_unused_input,
                           _CudaGraphs())
    return result[0] if one else tuple(result)
