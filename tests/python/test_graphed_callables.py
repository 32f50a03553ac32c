"""torch.cuda.make_graphed_callables (Note [Graphed callables]): graphed modules and functions
train like torch's eager ones on a GPU (skipped, never passed, without one); the wiring around
the capture (static inputs, outputs and gradients, the module's forward, nested arguments) also
runs here over the launch manager's cpu graphs; the argument checks raise as torch's."""
import contextlib

import numpy as np
import pytest
import torch

import retorch
from retorch.cuda import graphs

gpu = pytest.mark.skipif(not retorch.cuda.is_available(), reason="no CUDA device")


def arr(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))


def twin_mlps(device):
    """A retorch MLP on `device` and a torch one on the cpu with the same weights."""
    r, t = mlp(retorch), mlp(torch)
    with torch.no_grad():
        for rp, tp in zip(r.parameters(), t.parameters()):
            tp.copy_(torch.tensor(rp.detach().cpu().numpy()))
    return r.to(device), t


def close(got, want, tol=1e-5):
    assert got is not None and want is not None
    g = torch.tensor(got.detach().cpu().numpy())
    assert g.shape == want.shape
    assert torch.allclose(g, want.detach(), rtol=tol, atol=tol), (g - want).abs().max()


class LaunchGraphs:
    """make_graphed_callables' capture on the launch manager's cpu graphs (retorch.runtime):
    the same wiring as CUDA graphs' (the capture also runs the work once, which CUDA's does not;
    every graphed call replays before reading)."""

    def warmup(self):
        return contextlib.nullcontext()

    def capture(self, fn):
        out = []
        g = retorch.runtime.capture(lambda: out.append(fn()))
        return out[0], g.replay


def train_side_by_side(graphed, r, t, steps, device, seed0=10):
    """Steps of forward, backward and SGD through `graphed` and through torch's module t."""
    ropt = retorch.optim.SGD(r.parameters(), lr=0.1)
    topt = torch.optim.SGD(t.parameters(), lr=0.1)
    for step in range(steps):
        x = arr(4, 16, seed=seed0 + step)
        rx = retorch.tensor(x).to(device).requires_grad_(True)
        tx = torch.tensor(x, requires_grad=True)
        ry, ty = graphed(rx), t(tx)
        close(ry, ty)
        w = arr(4, 8, seed=100 + step)
        (ry * retorch.tensor(w).to(device)).sum().backward()
        (ty * torch.tensor(w)).sum().backward()
        close(rx.grad, tx.grad)
        for rp, tp in zip(r.parameters(), t.parameters()):
            close(rp.grad, tp.grad)
        ropt.step()
        topt.step()
        ropt.zero_grad()
        topt.zero_grad()
    for rp, tp in zip(r.parameters(), t.parameters()):
        close(rp, tp)


def test_the_wiring_over_cpu_graphs_trains_a_module_like_torch():
    r, t = twin_mlps("cpu")
    sample = retorch.tensor(arr(4, 16)).requires_grad_(True)
    [graphed] = graphs._make_graphed((r,), ((sample,),), 2, False, LaunchGraphs())
    assert graphed is r  # a module keeps its object; its forward replays the graphs
    train_side_by_side(r, r, t, 4, "cpu")
    r.eval()
    t.eval()
    x = arr(4, 16, seed=50)
    close(r(retorch.tensor(x)), t(torch.tensor(x)))  # eval: the eager forward


def test_the_wiring_over_cpu_graphs_for_functions_with_nested_inputs_and_outputs():
    w = arr(6, 5, seed=1)
    rw, tw = retorch.tensor(w), torch.tensor(w)  # a constant: only arguments get gradients

    def fn(lib, pair, scale):
        a, b = pair
        h = (a @ (rw if lib is retorch else tw)).tanh()
        return {"h": h, "sum": (h * scale + b).sum(-1)}

    rfn = lambda pair, scale: fn(retorch, pair, scale)  # noqa: E731
    sample = ((retorch.tensor(arr(3, 6)).requires_grad_(True), retorch.tensor(arr(3, 5))),
              retorch.tensor(arr(3, 5)))
    [graphed] = graphs._make_graphed((rfn,), (sample,), 1, False, LaunchGraphs())
    for step in range(3):
        a, b, s = arr(3, 6, seed=step), arr(3, 5, seed=10 + step), arr(3, 5, seed=20 + step)
        ra = retorch.tensor(a).requires_grad_(True)
        ta = torch.tensor(a, requires_grad=True)
        rout = graphed((ra, retorch.tensor(b)), retorch.tensor(s))
        tout = fn(torch, (ta, torch.tensor(b)), torch.tensor(s))
        assert sorted(rout) == ["h", "sum"]
        close(rout["h"], tout["h"])
        close(rout["sum"], tout["sum"])
        (rout["h"].sum() + rout["sum"].sum() * 2).backward()
        (tout["h"].sum() + tout["sum"].sum() * 2).backward()
        close(ra.grad, ta.grad)
    with pytest.raises(ValueError, match="expected 3 tensors"):
        graphed((ra,), retorch.tensor(s))


def test_the_wiring_over_cpu_graphs_chains_two_callables():
    r1, t1 = twin_mlps("cpu")
    r2, t2 = retorch.nn.Linear(8, 3), torch.nn.Linear(8, 3)
    with torch.no_grad():
        t2.weight.copy_(torch.tensor(r2.weight.detach().numpy()))
        t2.bias.copy_(torch.tensor(r2.bias.detach().numpy()))
    s1 = retorch.tensor(arr(4, 16)).requires_grad_(True)
    s2 = retorch.tensor(arr(4, 8)).requires_grad_(True)
    g1, g2 = graphs._make_graphed((r1, r2), ((s1,), (s2,)), 1, False, LaunchGraphs())
    for step in range(3):
        x = arr(4, 16, seed=30 + step)
        ry = g2(g1(retorch.tensor(x)).relu())
        ty = t2(t1(torch.tensor(x)).relu())
        close(ry, ty)
        ry.square().sum().backward()
        ty.square().sum().backward()
        for rp, tp in zip(list(r1.parameters()) + list(r2.parameters()),
                          list(t1.parameters()) + list(t2.parameters())):
            close(rp.grad, tp.grad)
            rp.grad = None
            tp.grad = None


def test_checks_raise_as_torchs():
    for lib in (retorch, torch):
        m = lib.nn.Linear(2, 2)
        x = lib.ones(3, 2)
        m.register_forward_hook(lambda *a: None)
        with pytest.raises(AssertionError, match="must not have hooks"):
            lib.cuda.make_graphed_callables(m, (x,))
        m = lib.nn.BatchNorm1d(2)
        m.running_mean.requires_grad_(True)
        with pytest.raises(AssertionError, match="only parameters may be trainable"):
            lib.cuda.make_graphed_callables(m, (x,))
        with pytest.raises(AssertionError, match="sample_args for each callable must"):
            lib.cuda.make_graphed_callables(lib.nn.Linear(2, 2), (x, 3))
    with retorch.autocast("cuda"):  # (torch without CUDA turns autocast("cuda") off)
        with pytest.raises(RuntimeError, match="does not support the autocast caching"):
            retorch.cuda.make_graphed_callables(retorch.nn.Linear(2, 2), (x,))
    with pytest.raises(NotImplementedError, match="pool"):
        retorch.cuda.make_graphed_callables(retorch.nn.Linear(2, 2), (x,), pool=(0, 1))
    with pytest.raises(ValueError, match="one per callable"):
        retorch.cuda.make_graphed_callables((retorch.nn.Linear(2, 2),), ((x,), (x,)))
    with pytest.raises(ValueError, match="cuda tensors"):
        retorch.cuda.make_graphed_callables(retorch.nn.Linear(2, 2), (retorch.ones(3, 2),))


@pytest.mark.skipif(retorch.cuda.is_available(), reason="a CUDA device is present")
def test_without_a_gpu_it_raises_a_clear_error():
    m = retorch.nn.Linear(2, 2).to("cuda")
    with pytest.raises(RuntimeError, match="need a CUDA device"):
        retorch.cuda.make_graphed_callables(m, (retorch.ones(3, 2, device="cuda"),))


@gpu
def test_a_graphed_module_trains_like_torchs_eager_one():
    r, t = twin_mlps("cuda")
    sample = retorch.tensor(arr(4, 16)).to("cuda").requires_grad_(True)
    graphed = retorch.cuda.make_graphed_callables(r, (sample,))
    assert graphed is r
    train_side_by_side(r, r, t, 5, "cuda")
    r.eval()
    x = arr(4, 16, seed=50)
    close(r(retorch.tensor(x).to("cuda")), t.eval()(torch.tensor(x)))


@gpu
def test_graphed_functions_and_chains_on_the_gpu():
    r1, t1 = twin_mlps("cuda")
    w = arr(8, 8, seed=3)
    rw = retorch.tensor(w).to("cuda")
    tw = torch.tensor(w)
    s1 = retorch.tensor(arr(4, 16)).to("cuda").requires_grad_(True)
    s2 = retorch.tensor(arr(4, 8)).to("cuda").requires_grad_(True)
    g1, g2 = retorch.cuda.make_graphed_callables(
        (r1, lambda h: (h @ rw).tanh()), ((s1,), (s2,)))
    for step in range(4):
        x = arr(4, 16, seed=30 + step)
        rx = retorch.tensor(x).to("cuda").requires_grad_(True)
        tx = torch.tensor(x, requires_grad=True)
        ry, ty = g2(g1(rx)), (t1(tx) @ tw).tanh()
        close(ry, ty)
        ry.sum().backward()
        ty.sum().backward()
        close(rx.grad, tx.grad)
        for rp, tp in zip(r1.parameters(), t1.parameters()):
            close(rp.grad, tp.grad)
            rp.grad = None
            tp.grad = None
