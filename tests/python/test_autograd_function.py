"""Custom autograd.Function (forward/backward in Python) against torch.autograd.Function."""
import functools
import types

import numpy as np
import pytest
import torch

import retorch

LIBS = (torch, retorch)


@functools.lru_cache(maxsize=None)
def fns(L):
    """The same custom Functions, written once against library L (torch or retorch)."""
    F = L.autograd.Function
    ns = types.SimpleNamespace()

    class Exp(F):
        @staticmethod
        def forward(ctx, x):
            r = x.exp()
            ctx.save_for_backward(r)
            return r

        @staticmethod
        def backward(ctx, g):
            (r,) = ctx.saved_tensors
            return g * r

    class ScaledMul(F):  # x * y * k with a Python number k
        @staticmethod
        def forward(ctx, x, k, y):
            ctx.save_for_backward(x, y)
            ctx.k = k
            return x * y * k

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y * ctx.k, None, g * x * ctx.k

    class SinCos(F):  # two outputs
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin(), x.cos()

        @staticmethod
        def backward(ctx, gs, gc):
            (x,) = ctx.saved_tensors
            return gs * x.cos() - gc * x.sin()

    class SortWithIndex(F):  # second output (indices) is not differentiable
        @staticmethod
        def forward(ctx, x):
            v, i = x.sort()
            ctx.mark_non_differentiable(i)
            ctx.save_for_backward(i)
            return v, i

        @staticmethod
        def backward(ctx, gv, gi):
            (i,) = ctx.saved_tensors
            return L.zeros_like(gv).scatter(0, i, gv)

    class AddOneInplace(F):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    class Cube(F):  # backward in differentiable ops: double backward works
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2

    class CubeOnce(F):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @L.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2

    class NeedsGrad(F):  # records needs_input_grad, returns grads only where needed
        seen = []

        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            NeedsGrad.seen.append(tuple(ctx.needs_input_grad))
            na, nb = ctx.needs_input_grad
            return (g * 2 if na else None), (g * 3 if nb else None)

    class WrongCount(F):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    class WrongShape(F):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return L.ones(7, dtype=g.dtype)

    class Raises(F):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("custom backward failure")

    class NoMaterialize(F):
        seen = []

        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            NoMaterialize.seen.append((g1 is None, g2 is None))
            out = L.zeros_like(g1 if g1 is not None else g2)
            if g1 is not None:
                out = out + 2 * g1
            if g2 is not None:
                out = out + 3 * g2
            return out

    class Identity(F):  # output aliases the input
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    for name, v in list(locals().items()):
        if isinstance(v, type) and issubclass(v, F):
            setattr(ns, name, v)
    return ns


def setup_context_exp(L):
    """Exp in the newer style (forward without ctx plus setup_context); torch 1.13 lacks it,
    so retorch's version is compared with torch's ctx-style Exp."""
    class ExpSetup(L.autograd.Function):
        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, g):
            (r,) = ctx.saved_tensors
            return g * r
    return ExpSetup


def tensor(L, arr, requires_grad=True):
    return L.from_numpy(np.array(arr, dtype=np.float64)).requires_grad_(requires_grad)


def npy(t):
    return None if t is None else t.detach().numpy()


def both(body):
    """Runs body(L, fns(L)) with torch and retorch; asserts equal (nested) results."""
    a, b = body(torch, fns(torch)), body(retorch, fns(retorch))
    assert_same(a, b)
    return b


def assert_same(a, b):
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, np.ndarray):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)
    else:
        assert a == b, (a, b)


def error_type(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the type is what is compared)
        return type(e), str(e)
    return None, ""


def test_exp_values_grads_and_name(rng):
    x = rng.uniform(-1, 1, (3, 4))

    def body(L, f):
        t = tensor(L, x)
        y = f.Exp.apply(t)
        y.backward(tensor(L, np.arange(12.0).reshape(3, 4), False))
        return npy(y), npy(t.grad), y.grad_fn.name(), y.requires_grad, y.is_leaf
    assert both(body)[2] == "ExpBackward"


def test_two_input_mul_with_non_tensor_arg(rng):
    x, y = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (2, 3))

    def body(L, f):
        a, b = tensor(L, x), tensor(L, y)
        out = f.ScaledMul.apply(a, 2.5, b)
        out.sum().backward()
        return npy(out), npy(a.grad), npy(b.grad), len(out.grad_fn.next_functions)
    both(body)


def test_grad_fn_exposes_ctx_attributes():
    for L in LIBS:
        a, b = tensor(L, [1.0]), tensor(L, [2.0])
        out = fns(L).ScaledMul.apply(a, 4, b)
        assert out.grad_fn.k == 4
        assert len(out.grad_fn.saved_tensors) == 2


def test_multiple_outputs(rng):
    x = rng.uniform(-2, 2, (5,))

    def body(L, f):
        t = tensor(L, x)
        s, c = f.SinCos.apply(t)
        (s * 2 + c * 3).sum().backward()
        g_only_sin = L.autograd.grad(f.SinCos.apply(t)[0].sum(), t)[0]
        return npy(s), npy(c), npy(t.grad), npy(g_only_sin), s.grad_fn.name()
    both(body)


def test_mark_non_differentiable(rng):
    x = rng.uniform(-2, 2, (6,))

    def body(L, f):
        t = tensor(L, x)
        v, i = f.SortWithIndex.apply(t)
        (v * tensor(L, np.arange(6.0), False)).sum().backward()
        return npy(v), i.numpy().tolist(), i.requires_grad, v.requires_grad, npy(t.grad)
    both(body)


def test_mark_dirty_inplace(rng):
    x = rng.uniform(-1, 1, (4,))

    def body(L, f):
        leaf = tensor(L, x)
        h = leaf * 3
        v0 = h._version
        out = f.AddOneInplace.apply(h)
        (out * out).sum().backward()
        return (npy(out), npy(h), h._version > v0, h.grad_fn.name(), out.grad_fn.name(),
                npy(leaf.grad))
    both(body)


def test_mark_dirty_on_leaf_raises():
    for L in LIBS:
        t = tensor(L, [1.0, 2.0])
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            fns(L).AddOneInplace.apply(t)


def test_setup_context_style_matches_ctx_style(rng):
    x = rng.uniform(-1, 1, (3,))
    ours = tensor(retorch, x)
    y = setup_context_exp(retorch).apply(ours)
    y.sum().backward()
    ref = tensor(torch, x)
    yt = fns(torch).Exp.apply(ref)
    yt.sum().backward()
    np.testing.assert_allclose(npy(y), npy(yt), rtol=1e-12)
    np.testing.assert_allclose(npy(ours.grad), npy(ref.grad), rtol=1e-12)
    assert y.grad_fn.name() == "ExpSetupBackward"


def test_double_backward(rng):
    x = rng.uniform(-1, 1, (4,))

    def body(L, f):
        t = tensor(L, x)
        (g,) = L.autograd.grad(f.Cube.apply(t).sum(), t, create_graph=True)
        (gg,) = L.autograd.grad((g * g).sum(), t)
        return npy(g), npy(gg), g.requires_grad
    both(body)


def test_once_differentiable(rng):
    x = rng.uniform(-1, 1, (4,))

    def body(L, f):
        t = tensor(L, x)
        y = f.CubeOnce.apply(t)
        (g,) = L.autograd.grad(y.sum(), t, create_graph=True)
        kind, msg = error_type(lambda: g.sum().backward())
        (g2,) = L.autograd.grad(f.CubeOnce.apply(t).sum(), t)
        return npy(g), kind, "once_differentiable" in msg, npy(g2), g2.requires_grad
    both(body)


def test_needs_input_grad():
    def body(L, f):
        f.NeedsGrad.seen.clear()
        a, b = tensor(L, [1.0, 2.0]), tensor(L, [3.0, 4.0], requires_grad=False)
        f.NeedsGrad.apply(a, b).sum().backward()
        return list(f.NeedsGrad.seen), npy(a.grad)
    assert both(body)[0] == [(True, False)]


def test_set_materialize_grads_false():
    def body(L, f):
        f.NoMaterialize.seen.clear()
        t = tensor(L, [1.0, 2.0])
        y1, _ = f.NoMaterialize.apply(t)
        y1.sum().backward()
        return list(f.NoMaterialize.seen), npy(t.grad)
    assert both(body)[0] == [(False, True)]


def test_materialized_zero_grads_for_unused_outputs():
    def body(L, f):
        t = tensor(L, [0.5, 1.0])
        s, _ = f.SinCos.apply(t)  # cos output unused: its grad arrives as zeros
        s.sum().backward()
        return npy(t.grad)
    both(body)


def test_output_aliasing_input():
    def body(L, f):
        t = tensor(L, [1.0, 2.0])
        y = f.Identity.apply(t)
        y.sum().backward()
        return npy(y), y.is_leaf, t.is_leaf, y.grad_fn.name(), npy(t.grad)
    both(body)


def test_saved_tensor_modified_inplace_raises():
    def body(L, f):
        t = tensor(L, [1.0, 2.0])
        y = f.Exp.apply(t)
        with L.no_grad():
            y.mul_(2)
        kind, msg = error_type(lambda: y.sum().backward())
        return kind, "modified by an inplace operation" in msg
    assert both(body)[0] is RuntimeError


def test_saved_tensors_after_graph_freed_raise():
    def body(L, f):
        t = tensor(L, [1.0, 2.0])
        y = f.Exp.apply(t)
        y.sum().backward()
        again = error_type(lambda: y.sum().backward())[0]
        direct = error_type(lambda: y.grad_fn.saved_tensors)[0]
        return again, direct
    assert both(body) == (RuntimeError, RuntimeError)


def test_wrong_number_of_grads_raises():
    def body(L, f):
        a, b = tensor(L, [1.0]), tensor(L, [2.0])
        kind, msg = error_type(lambda: f.WrongCount.apply(a, b).sum().backward())
        return kind, "incorrect number of gradients (expected 2, got 1)" in msg
    assert both(body) == (RuntimeError, True)


def test_wrong_grad_shape_raises():
    def body(L, f):
        t = tensor(L, [[1.0, 2.0], [3.0, 4.0]])
        kind, msg = error_type(lambda: f.WrongShape.apply(t).backward())
        return kind, "WrongShapeBackward returned an invalid gradient at index 0" in msg
    assert both(body) == (RuntimeError, True)


def test_backward_exception_propagates_with_its_type():
    for L in LIBS:
        t = tensor(L, [1.0])
        with pytest.raises(ValueError, match="custom backward failure"):
            fns(L).Raises.apply(t).sum().backward()
        with pytest.raises(ValueError, match="custom backward failure"):
            L.autograd.grad(fns(L).Raises.apply(t).sum(), t)


def test_no_grad_records_nothing():
    def body(L, f):
        t = tensor(L, [1.0, 2.0])
        with L.no_grad():
            y = f.Exp.apply(t)
        u = f.Exp.apply(tensor(L, [1.0], requires_grad=False))
        return npy(y), y.requires_grad, y.grad_fn is None, u.requires_grad
    both(body)


def test_forward_runs_without_grad():
    def body(L, _):
        seen = []

        class Probe(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                seen.append(L.is_grad_enabled())
                y = x * 2
                seen.append(y.requires_grad)
                return y

            @staticmethod
            def backward(ctx, g):
                return g * 2
        Probe.apply(tensor(L, [1.0]))
        return seen
    assert both(body) == [False, False]


def test_gradcheck_float64(rng):
    a, b = rng.uniform(-1, 1, (3,)), rng.uniform(-1, 1, (3,))
    for L in LIBS:
        f = fns(L)
        assert L.autograd.gradcheck(f.Exp.apply, (tensor(L, a),))
        assert L.autograd.gradcheck(lambda x, y: f.ScaledMul.apply(x, 1.5, y),
                                    (tensor(L, a), tensor(L, b)))
        assert L.autograd.gradcheck(lambda x: f.SinCos.apply(x), (tensor(L, a),))
        assert L.autograd.gradgradcheck(f.Cube.apply, (tensor(L, a),))


def test_apply_on_instance_and_missing_backward():
    for L in LIBS:
        class NoBackward(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 1

        y = NoBackward.apply(tensor(L, [1.0]))
        with pytest.raises(NotImplementedError):
            y.sum().backward()


def test_non_tensor_grad_for_non_tensor_input_raises():
    def body(L, _):
        class BadNone(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

            @staticmethod
            def backward(ctx, g):
                return g, g

        return error_type(lambda: BadNone.apply(tensor(L, [1.0]), 2).sum().backward())[0]
    assert both(body) is RuntimeError


def test_gradcheck_catches_wrong_backward():
    for L in LIBS:
        class BadExp(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp()

            @staticmethod
            def backward(ctx, g):
                return g * 2

        with pytest.raises(RuntimeError):
            L.autograd.gradcheck(BadExp.apply, (tensor(L, [0.1, 0.2]),))


def test_graph_and_ctx_are_freed_with_the_outputs():
    import gc
    import weakref
    for L in LIBS:
        refs = []

        class Keep(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                refs.append(weakref.ref(ctx))
                y = x * 2
                ctx.save_for_backward(x, y)
                ctx.note = "attribute"
                return y

            @staticmethod
            def backward(ctx, g):
                return g * 2

        y = Keep.apply(tensor(L, [1.0, 2.0]))
        assert refs[0]() is not None
        del y
        gc.collect()
        assert refs[0]() is None, L.__name__


def test_non_tensor_outputs_get_none_grads():
    def body(L, _):
        seen = []

        class WithCount(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, n):
                return x * 2, n, x.sum()

            @staticmethod
            def backward(ctx, g, gn, gs):
                seen.append((gn is None, tuple(gs.shape)))
                return g * 2 + gs, None

        x = tensor(L, [1.0, 2.0])
        a, n, s = WithCount.apply(x, 7)
        (a.sum() + s * 3).backward()
        return n, seen, npy(x.grad), s.grad_fn.name()
    both(body)


def test_non_tensor_grad_raises():
    def body(L, _):
        class IntGrad(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return 3

        kind, msg = error_type(lambda: IntGrad.apply(tensor(L, [1.0])).sum().backward())
        return kind, "expected Variable or None (got int)" in msg
    assert both(body) == (RuntimeError, True)


def test_mark_dirty_on_view_and_retain_graph():
    def body(L, f):
        x = tensor(L, [1.0, 2.0, 3.0, 4.0])
        y = x * 1
        f.AddOneInplace.apply(y[1:3])
        (y * y).sum().backward()
        x2 = tensor(L, [0.5, 1.5])
        z = f.Exp.apply(x2).sum()
        z.backward(retain_graph=True)
        z.backward()
        return npy(y), npy(x.grad), npy(x2.grad)
    both(body)


def test_saved_input_modified_inplace_raises():
    def body(L, f):
        x = tensor(L, [1.0, 2.0])
        h = x * 1
        z = f.ScaledMul.apply(h, 2.0, h).sum()
        with L.no_grad():
            h.mul_(2)
        return error_type(lambda: z.backward())[0]
    assert both(body) is RuntimeError
