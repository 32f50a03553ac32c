"""autograd.graph's saved-tensor hooks against torch: what is packed and unpacked, gradients
through hooks, Functions' save_for_backward, nesting, save_on_cpu, the disabled state and the
errors."""
import pytest
import torch
import torch.utils.checkpoint  # noqa: F401  (torch.utils does not import it)

import retorch
import retorch.utils.checkpoint  # noqa: F401
from test_autograd_function import fns


def _counting_run(L, f, inputs):
    """f's gradients with hooks that count and clone: (packs, unpacks, grads)."""
    packs, unpacks = [], []

    def pack(t):
        packs.append(tuple(t.shape))
        return t.clone()

    def unpack(t):
        unpacks.append(tuple(t.shape))
        return t

    xs = [L.tensor(v, dtype=L.float64, requires_grad=True) for v in inputs]
    with L.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = f(L, *xs)
    gs = L.autograd.grad(y, xs)
    return sorted(packs), sorted(unpacks), [g.tolist() for g in gs]


CASES = {
    "mul": (lambda L, a, b: (a * b).sum(), [[1.0, 2.0], [3.0, -1.0]]),
    "exp": (lambda L, a: a.exp().sum(), [[0.5, -1.0, 2.0]]),
    "sin then mul": (lambda L, a: (a.sin() * a).sum(), [[0.5, 1.5]]),
    "matmul": (lambda L, a, b: (a @ b).sum(), [[[1.0, 2.0], [3.0, 4.0]], [[0.5], [-1.0]]]),
    "pow": (lambda L, a: a.pow(3).sum(), [[1.0, -2.0]]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hooks_see_what_torch_saves(case):
    f, inputs = CASES[case]
    got, want = _counting_run(retorch, f, inputs), _counting_run(torch, f, inputs)
    assert got == want, case


def test_functions_save_through_the_hooks():
    results = []
    for L in (retorch, torch):
        seen = []
        x = L.tensor([1.0, 2.0], requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(lambda t: seen.append("pack") or t * 1,
                                                  lambda t: seen.append("unpack") or t):
            y = fns(L).Cube.apply(x)  # (saves its input)
        y.sum().backward()
        results.append((seen, x.grad.tolist()))
    assert results[0] == results[1]


def test_the_innermost_hooks_apply_and_popping_restores():
    for L in (retorch, torch):
        log = []
        x = L.tensor([1.0, 2.0], requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(lambda t: log.append("outer") or t,
                                                  lambda t: t):
            with L.autograd.graph.saved_tensors_hooks(lambda t: log.append("inner") or t,
                                                      lambda t: t):
                a = x.exp()
            b = x.sin()
        c = x.cos()  # no hooks
        (a + b + c).sum().backward()
        assert log == ["inner", "outer"], L
        assert x.grad.allclose(x.exp() + x.cos() - x.sin())


def test_unpacked_values_are_what_backward_uses():
    """No version check through hooks, as torch's: a pack hook that clones keeps the original
    value even when the input changes in place afterwards; one that returns the tensor sees the
    change."""
    for clone in (True, False):
        grads = []
        for L in (retorch, torch):
            x = L.tensor([1.0, 2.0], requires_grad=True)
            w = L.tensor([3.0, 4.0])
            with L.autograd.graph.saved_tensors_hooks(
                    (lambda t: t.clone()) if clone else (lambda t: t), lambda t: t):
                y = (x * w).sum()
            w.mul_(10)
            y.backward()
            grads.append(x.grad.tolist())
        assert grads[0] == grads[1], clone


def test_save_on_cpu_gives_the_same_gradients():
    for pin in (False, True):
        grads = []
        for L in (retorch, torch):
            L.manual_seed(0)
            x = L.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
            with L.autograd.graph.save_on_cpu(pin_memory=pin):
                y = (x.tanh() @ x).sigmoid().sum()
            y.backward()
            grads.append(x.grad.tolist())
        assert retorch.tensor(grads[0]).allclose(retorch.tensor(grads[1])), pin


def test_errors_as_torch():
    for L in (retorch, torch):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 3):
            y = x.exp().sum()
        with pytest.raises(TypeError, match="unpack_hook"):
            y.backward()
        with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
            with L.autograd.graph.saved_tensors_hooks(lambda t: t.add_(1), lambda t: t):
                x.detach().requires_grad_().exp()


def test_disable_saved_tensors_hooks():
    for L in (retorch, torch):
        g = L.autograd.graph
        with g.disable_saved_tensors_hooks("no hooks here"):
            with pytest.raises(RuntimeError, match="no hooks here"):
                with g.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
            with g.disable_saved_tensors_hooks("inner message"):
                with pytest.raises(RuntimeError, match="inner message"):
                    with g.saved_tensors_hooks(lambda t: t, lambda t: t):
                        pass
            with pytest.raises(RuntimeError, match="no hooks here"):  # the outer one again
                with g.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
        with g.saved_tensors_hooks(lambda t: t, lambda t: t):  # enabled after the block
            pass


def test_packed_objects_are_freed_with_the_graph():
    import gc
    import weakref

    class Box:
        def __init__(self, t):
            self.t = t

    refs = []

    def pack(t):
        b = Box(t)
        refs.append(weakref.ref(b))
        return b

    x = retorch.tensor([1.0, 2.0], requires_grad=True)
    with retorch.autograd.graph.saved_tensors_hooks(pack, lambda b: b.t):
        y = (x.exp() * x).sum()
    y.backward()
    del y
    gc.collect()
    assert refs and all(r() is None for r in refs)


def test_grad_mode_inside_the_hooks():
    """Pack hooks run without grad (what they compute records no graph, and they may use
    ops freely); unpack hooks run in backward's mode."""
    for create_graph in (False, True):
        seen = []
        for L in (retorch, torch):
            modes = []

            def pack(t):
                modes.append(("pack", L.is_grad_enabled(), (t * 1).requires_grad))
                return t

            def unpack(t):
                modes.append(("unpack", L.is_grad_enabled()))
                return t

            x = L.tensor([1.0, 2.0], requires_grad=True)
            with L.autograd.graph.saved_tensors_hooks(pack, unpack):
                y = x.exp().sum()
            L.autograd.grad(y, x, create_graph=create_graph)
            seen.append(modes)
        assert seen[0] == seen[1], create_graph


def _block(L, dropout=0.0):
    net = L.nn.Sequential(L.nn.Linear(4, 8), L.nn.Tanh(), L.nn.Dropout(dropout), L.nn.Linear(8, 3))
    for p in net.parameters():
        p.data = L.tensor(_fixed(tuple(p.shape)))
    return net


def _fixed(shape):
    import numpy as np
    return np.cos(np.arange(int(np.prod(shape))) * 0.37).reshape(shape).tolist()


def test_non_reentrant_checkpoint_through_hooks_as_torch():
    """checkpoint(use_reentrant=False) records the forward's graph and keeps only positions
    (Note [Checkpoint through saved-tensor hooks]): gradients equal a plain run's (dropout's mask
    replayed), autograd.grad works and leaves parameters' .grad alone, a second backward with
    retain_graph reuses the recomputation, nesting works, and hooks outside see only what is
    saved outside, all as torch's."""
    results = []
    for L in (retorch, torch):
        ck = L.utils.checkpoint.checkpoint
        out = {}
        for mode in ("plain", "checkpoint", "plain dropout", "checkpoint dropout"):
            net = _block(L, 0.3 if "dropout" in mode else 0.0)
            x = L.tensor(_fixed((5, 4)), requires_grad=True)
            L.manual_seed(1)
            y = net(x) if "plain" in mode else ck(net, x, use_reentrant=False)
            y.square().sum().backward(retain_graph=True)
            y.square().sum().backward()
            out[mode] = [x.grad.tolist()] + [p.grad.tolist() for p in net.parameters()]
        net = _block(L)
        x = L.tensor(_fixed((5, 4)), requires_grad=True)
        L.manual_seed(1)
        gx, = L.autograd.grad(ck(net, x, use_reentrant=False).sum(), x)
        out["grad"] = (gx.tolist(), [p.grad for p in net.parameters()])
        inner = L.nn.Sequential(L.nn.Linear(4, 4), L.nn.Sigmoid())
        for p in inner.parameters():
            p.data = L.tensor(_fixed(tuple(p.shape)))
        x = L.tensor(_fixed((3, 4)), requires_grad=True)
        y = ck(lambda t: ck(inner, t, use_reentrant=False) * 2, x, use_reentrant=False)
        y.pow(3).sum().backward()
        out["nested"] = [x.grad.tolist()] + [p.grad.tolist() for p in inner.parameters()]
        packs = []
        with L.autograd.graph.saved_tensors_hooks(lambda t: packs.append(tuple(t.shape)) or t,
                                                  lambda t: t):
            y = ck(inner, L.tensor(_fixed((3, 4)), requires_grad=True), use_reentrant=False)
            z = (y * y).sum()
        out["outer packs"] = sorted(packs)
        z.backward()
        results.append(out)
    got, want = results
    assert got["outer packs"] == want["outer packs"]
    assert got["grad"][1] == want["grad"][1] == [None] * 4
    for key in ("plain", "checkpoint", "nested"):
        for g, w in zip(got[key], want[key]):
            assert retorch.tensor(g).allclose(retorch.tensor(w), rtol=1e-5, atol=1e-5), key
    assert retorch.tensor(got["grad"][0]).allclose(retorch.tensor(want["grad"][0]), rtol=1e-5,
                                                   atol=1e-5)
    for out in results:  # (each library's own random stream: dropout's mask is replayed)
        for key in ("", " dropout"):
            assert out["checkpoint" + key] == out["plain" + key], key
