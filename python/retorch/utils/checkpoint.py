"""retorch.utils.checkpoint: activation checkpointing (run without saving activations, recompute
them in backward), torch.utils.checkpoint's checkpoint and checkpoint_sequential."""
import warnings

import retorch
from .. import _C
from ..autograd import Function, enable_grad, no_grad
from ..random import fork_rng, get_rng_state, set_rng_state

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointFunction", "check_backward_validity",
           "detach_variable", "get_device_states", "set_device_states"]


def detach_variable(inputs):
    """The tensors of the tuple inputs detached, each keeping its requires_grad."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: ",
                           type(inputs).__name__)
    out = []
    for inp in inputs:
        if not isinstance(inp, _C.Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad_(inp.requires_grad)
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs):
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, _C.Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None")


def get_device_states(*args):
    """The CUDA devices the tensor args live on and each one's generator state."""
    devices = sorted({a.get_device() for a in args if isinstance(a, _C.Tensor) and a.is_cuda})
    return devices, [retorch.cuda.get_rng_state(d) for d in devices]


def set_device_states(devices, states):
    for device, state in zip(devices, states):
        retorch.cuda.set_rng_state(state, device)


def _autocast_kwargs():
    return ({"enabled": retorch.is_autocast_enabled(), "dtype": retorch.get_autocast_gpu_dtype()},
            {"enabled": retorch.is_autocast_cpu_enabled(),
             "dtype": retorch.get_autocast_cpu_dtype()})


# Note [Checkpoint recomputation]
# forward runs `function` under no_grad and keeps only its inputs (and, with preserve_rng_state,
# the generator states). backward re-runs it on detached copies of the inputs with grad enabled,
# under the forward's RNG state (so dropout draws the same mask) and autocast settings, then
# backpropagates the incoming gradients through the recomputed graph with autograd.backward:
# parameters the function uses get their .grad accumulated directly, and the detached inputs'
# .grad become this node's input gradients (the reentrant flavour, torch's default).
#
# Note [Checkpoint through saved-tensor hooks]
# The non-reentrant flavour (use_reentrant=False) runs `function` with grad, recording its graph
# as usual, under saved-tensor hooks that keep each tensor its ops save as its position in the
# save order only. The first unpack in backward re-runs `function` (under the forward's RNG and
# autocast states) with hooks that collect, detached, what its ops save, in the same order;
# every unpack returns its entry. Gradients flow through the forward's own graph, so
# autograd.grad works and parameters get their gradients whether or not an input requires grad.
class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.gpu_autocast_kwargs, ctx.cpu_autocast_kwargs = _autocast_kwargs()
        if preserve_rng_state:
            ctx.fwd_cpu_state = get_rng_state()
            ctx.fwd_gpu_devices, ctx.fwd_gpu_states = get_device_states(*args)
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, _C.Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        devices = ctx.fwd_gpu_devices if ctx.preserve_rng_state else []
        with fork_rng(devices=devices, enabled=ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                set_rng_state(ctx.fwd_cpu_state)
                set_device_states(ctx.fwd_gpu_devices, ctx.fwd_gpu_states)
            detached_inputs = detach_variable(tuple(inputs))
            with enable_grad(), retorch.autocast("cuda", **ctx.gpu_autocast_kwargs), \
                    retorch.autocast("cpu", **ctx.cpu_autocast_kwargs):
                outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, _C.Tensor):
            outputs = (outputs,)
        outputs_with_grad = []
        args_with_grad = []
        for out, grad in zip(outputs, args):
            if isinstance(out, _C.Tensor) and out.requires_grad:
                outputs_with_grad.append(out)
                args_with_grad.append(grad if grad is not None else retorch.zeros_like(out))
        if not outputs_with_grad:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not "
                               "necessary")
        retorch.autograd.backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, _C.Tensor) else None for inp in detached_inputs)
        return (None, None) + grads


def _checkpoint_without_reentrant(function, preserve_rng_state, args, kwargs):
    """function(*args, **kwargs) as Note [Checkpoint through saved-tensor hooks] describes."""
    from ..autograd.graph import saved_tensors_hooks
    devices, gpu_states = get_device_states(*args) if preserve_rng_state else ([], [])
    cpu_state = get_rng_state() if preserve_rng_state else None
    gpu_autocast, cpu_autocast = _autocast_kwargs()
    recomputed = []
    saved = 0

    def pack(tensor):
        nonlocal saved
        saved += 1
        return saved - 1

    def keep(tensor):
        recomputed.append(tensor.detach())

    def never_unpacked(_):
        raise RuntimeError("checkpoint: a tensor saved by the recomputation was unpacked")

    def unpack(position):
        if not recomputed:
            with fork_rng(devices=devices, enabled=preserve_rng_state):
                if preserve_rng_state:
                    set_rng_state(cpu_state)
                    set_device_states(devices, gpu_states)
                with enable_grad(), retorch.autocast("cuda", **gpu_autocast), \
                        retorch.autocast("cpu", **cpu_autocast), \
                        saved_tensors_hooks(keep, never_unpacked):
                    function(*args, **kwargs)
        if position >= len(recomputed):
            raise RuntimeError("checkpoint: the recomputation saved fewer tensors than the "
                               "forward did (function must compute the same way both times)")
        return recomputed[position]

    with saved_tensors_hooks(pack, unpack):
        return function(*args, **kwargs)


def checkpoint(function, *args, use_reentrant=True, preserve_rng_state=True, **kwargs):
    """function(*args, **kwargs) without keeping its intermediate activations: they are recomputed
    in backward (with the forward's CPU/CUDA RNG state when preserve_rng_state, so dropout masks
    match). Gradients to the inputs and to the parameters function uses equal a plain run's.
    use_reentrant=True (torch's default) warns when no input requires grad and rejects keyword
    arguments; use_reentrant=False accepts them."""
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    return _checkpoint_without_reentrant(function, preserve_rng_state, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=True, **kwargs):
    """Runs functions (an nn.Sequential or a list of modules/functions) on input in `segments`
    chunks, checkpointing all but the last chunk."""
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    if isinstance(functions, retorch.nn.Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
