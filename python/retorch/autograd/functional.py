"""torch.autograd.functional: vjp, jvp, vhp, hvp, jacobian and hessian of a function, built on
autograd.grad (jvp and hvp by the double-backward trick), with torch's argument and result
conventions (a tensor in gives a tensor out, a tuple a tuple)."""
from .. import _C

__all__ = ["vjp", "jvp", "vhp", "hvp", "jacobian", "hessian"]


def _as_tuple(x):
    return (tuple(x), True) if isinstance(x, (tuple, list)) else ((x,), False)


def _grad_inputs(inputs, create_graph):
    """The inputs as leaves that require grad; with create_graph, inputs that already require
    grad are kept, so the results stay connected to the caller's graph."""
    return tuple(x if create_graph and x.requires_grad else x.detach().requires_grad_(True)
                 for x in inputs)


def _grad(outputs, inputs, grad_outputs, create_graph):
    from . import grad
    gs = grad(list(outputs), list(inputs), list(grad_outputs) if grad_outputs is not None
              else None, retain_graph=True, create_graph=create_graph, allow_unused=True)
    return tuple(g if g is not None else _C.zeros_like(x) for g, x in zip(gs, inputs))


def _call(func, inputs):
    from .grad_mode import enable_grad
    with enable_grad():
        out = func(*inputs)
    return _as_tuple(out)


def _maybe_detach(xs, create_graph):
    return tuple(x if create_graph else x.detach() for x in xs)


def _unpack(xs, was_tuple):
    return xs if was_tuple else xs[0]


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J)."""
    ins, in_tuple = _as_tuple(inputs)
    ins = _grad_inputs(ins, create_graph)
    outs, out_tuple = _call(func, ins)
    if v is None:
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")
        vs = (_C.ones_like(outs[0]),)
    else:
        vs, _ = _as_tuple(v)
    g = _grad(outs, ins, vs, create_graph)
    return (_unpack(_maybe_detach(outs, create_graph), out_tuple),
            _unpack(_maybe_detach(g, create_graph), in_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v), by differentiating v^T-weighted backward passes with respect to a
    dummy cotangent u (the double-backward trick)."""
    ins, in_tuple = _as_tuple(inputs)
    ins = _grad_inputs(ins, create_graph)
    outs, out_tuple = _call(func, ins)
    if v is None:
        if len(ins) != 1 or ins[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided "
                               "function is a single Tensor with a single element.")
        vs = (_C.ones_like(ins[0]),)
    else:
        vs, _ = _as_tuple(v)
    us = tuple(_C.zeros_like(o).requires_grad_(True) for o in outs)
    g = _grad(outs, ins, us, True)
    jv = _grad(g, us, vs, create_graph)
    return (_unpack(_maybe_detach(outs, create_graph), out_tuple),
            _unpack(_maybe_detach(jv, create_graph), out_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """d func / d inputs: for a tensor in and out, a tensor of shape out.shape + in.shape; for
    tuples, tuples (of tuples) of those, indexed [output][input]."""
    ins, in_tuple = _as_tuple(inputs)
    ins = _grad_inputs(ins, create_graph)
    outs, out_tuple = _call(func, ins)
    rows = []
    for o in outs:
        flat = o.reshape(-1)
        per_input = [[] for _ in ins]
        for k in range(flat.numel()):
            g = _grad((flat[k],), ins, None, create_graph)
            for i, gi in enumerate(g):
                per_input[i].append(gi)
        blocks = []
        for i, x in enumerate(ins):
            if per_input[i]:
                j = _C.stack(per_input[i]).reshape(tuple(o.shape) + tuple(x.shape))
            else:
                j = _C.zeros(list(o.shape) + list(x.shape), dtype=x.dtype)
            blocks.append(j if create_graph else j.detach())
        rows.append(_unpack(tuple(blocks), in_tuple))
    return _unpack(tuple(rows), out_tuple)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The jacobian of func's gradient (func returns one element)."""
    ins, in_tuple = _as_tuple(inputs)

    def gradient(*xs):
        outs, _ = _call(func, xs)
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor "
                               "with a single element.")
        g = _grad(outs, xs, None, True)
        return _unpack(g, in_tuple)

    return jacobian(gradient, _unpack(ins, in_tuple), create_graph=create_graph)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H)."""
    ins, in_tuple = _as_tuple(inputs)
    ins = _grad_inputs(ins, create_graph)
    outs, _ = _call(func, ins)
    if len(outs) != 1 or outs[0].numel() != 1:
        raise RuntimeError("The function given to vhp should return a single Tensor with a "
                           "single element.")
    vs, _ = _as_tuple(v) if v is not None else ((_C.ones_like(ins[0]),), False)
    g = _grad(outs, ins, None, True)
    dot = sum((gi * vi).sum() for gi, vi in zip(g, vs))
    hv = _grad((dot,), ins, None, create_graph)
    return (outs[0] if create_graph else outs[0].detach(),
            _unpack(_maybe_detach(hv, create_graph), in_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v); the Hessian of a scalar function is symmetric, so H v = v^T H."""
    return vhp(func, inputs, v, create_graph, strict)
