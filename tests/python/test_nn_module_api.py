"""nn.Module's Python API against torch.nn.Module: registration, traversal, hooks, state dicts,
modes, conversions, containers and utils — each case run on both libraries and compared."""
import copy
from collections import OrderedDict

import numpy as np
import pytest
import torch

import retorch

LIBS = [torch, retorch]


def build(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.bn = nn.BatchNorm1d(4)
            self.register_buffer("steps", lib.zeros(1))
            self.register_buffer("scratch", lib.zeros(2), persistent=False)
            self.scale = nn.Parameter(lib.ones(1))
            self.note = "plain attribute"

        def forward(self, x):
            return self.bn(self.fc(x)) * self.scale

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.shared = nn.Linear(4, 2)
            self.heads = nn.ModuleList([self.shared, nn.Linear(4, 3)])
            self.extra = nn.ModuleDict({"a": nn.ReLU(), "b": nn.Sequential(nn.Tanh())})
            self.plist = nn.ParameterList([nn.Parameter(lib.zeros(2)), lib.ones(3)])

        def forward(self, x):
            h = self.extra["a"](self.block(x))
            return [head(h) for head in self.heads]
    return Net()


def names(lib):
    m = build(lib)
    return {
        "params": [(n, tuple(p.shape)) for n, p in m.named_parameters()],
        "buffers": [n for n, _ in m.named_buffers()],
        "modules": [n for n, _ in m.named_modules()],
        "children": [n for n, _ in m.named_children()],
        "state": list(m.state_dict().keys()),
        "nparams": len(list(m.parameters())),
        "nonrec": [n for n, _ in m.named_parameters(recurse=False)],
        "dir": "block" in dir(m) and "fc" in dir(m.block),
    }


def test_traversal_matches_torch():
    assert names(retorch) == names(torch)


@pytest.mark.parametrize("case", [
    lambda lib, m: setattr(m.block, "fc", lib.zeros(2)),          # tensor over a module
    lambda lib, m: setattr(m.block, "scale", lib.zeros(1)),       # tensor over a parameter
    lambda lib, m: setattr(m.block, "steps", "text"),             # non-tensor over a buffer
    lambda lib, m: m.register_buffer("a.b", lib.zeros(1)),        # dotted name
    lambda lib, m: m.register_buffer("block", lib.zeros(1)),      # existing attribute
    lambda lib, m: m.register_parameter("p", lib.zeros(1)),       # not a Parameter
    lambda lib, m: m.add_module("x", 3),                          # not a Module
    lambda lib, m: m.add_module("", lib.nn.ReLU()),               # empty name
    lambda lib, m: m.block.missing,                               # unknown attribute
    lambda lib, m: m.load_state_dict({"nope": lib.zeros(1)}),     # missing + unexpected
    lambda lib, m: m.to(lib.int32),                               # non-float dtype
    lambda lib, m: m.heads[5],                                    # index out of range
    lambda lib, m: lib.nn.Module().forward(),                     # no forward
])
def test_misuse_raises_like_torch(case):
    errors = []
    for lib in LIBS:
        with pytest.raises(Exception) as info:
            case(lib, build(lib))
        errors.append(info.type)
    assert errors[1] is errors[0], errors


def test_registration_by_assignment():
    m = retorch.nn.Module()
    m.w = retorch.nn.Parameter(retorch.zeros(2))
    m.sub = retorch.nn.Linear(2, 2)
    m.w = None                      # a parameter slot may be cleared
    assert m.w is None and "w" in m._parameters
    m.sub = None
    assert m.sub is None
    m.sub = retorch.nn.ReLU()
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(AttributeError):
        m.sub


def test_load_state_dict_messages_like_torch():
    msgs = []
    for lib in LIBS:
        m = lib.nn.Linear(3, 2)
        bad = {"weight": lib.zeros(4, 3), "bias": lib.zeros(2), "extra": lib.zeros(1)}
        with pytest.raises(RuntimeError) as info:
            m.load_state_dict(bad)
        msgs.append(str(info.value))
        r = m.load_state_dict({"weight": lib.zeros(2, 3), "x": lib.zeros(1)}, strict=False)
        msgs.append((r.missing_keys, r.unexpected_keys))
    assert msgs[2] == msgs[0] and msgs[3] == msgs[1] == (["bias"], ["x"])


def test_state_dict_round_trip_and_non_persistent():
    t, r = build(torch), build(retorch)
    sd = {k: retorch.from_numpy(v.numpy().copy()) for k, v in t.state_dict().items()}
    r.load_state_dict(sd)
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    for a, b in zip(t(torch.from_numpy(x)), r(retorch.from_numpy(x))):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert "block.scratch" not in r.state_dict()
    # state_dict tensors share storage with the parameters but are detached.
    w = r.state_dict()["shared.weight"]
    assert not w.requires_grad
    w.add_(1)
    assert float(r.shared.weight[0, 0]) == float(w[0, 0])


def test_forward_hooks_and_pre_hooks():
    for lib in LIBS:
        m = lib.nn.Linear(2, 2)
        seen = []
        h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
        h2 = m.register_forward_hook(lambda mod, args, out: seen.append(out.shape) or out + 1)
        out = m(lib.ones(3, 2))
        np.testing.assert_allclose(out.detach().numpy(), (m.bias + 1).detach().numpy()[None]
                                   .repeat(3, 0), rtol=1e-6)
        h1.remove()
        h2.remove()
        assert len(seen) == 1
        out2 = m(lib.ones(3, 2))
        assert not np.allclose(out2.detach().numpy(), out.detach().numpy())


def test_train_eval_apply_zero_grad_requires_grad():
    for lib in LIBS:
        m = build(lib)
        m.eval()
        assert not any(x.training for x in m.modules())
        m.train()
        assert all(x.training for x in m.modules())
        visited = []
        m.apply(lambda mod: visited.append(type(mod).__name__))
        assert visited[-1] == "Net" and visited[0] == "Linear"
        sum(o.sum() for o in m(lib.ones(3, 4))).backward()
        assert all(p.grad is not None for p in m.block.parameters())
        m.zero_grad(set_to_none=False)  # torch 1.13's default; 2.x (and retorch) default to None
        assert all(p.grad is None or not p.grad.any() for p in m.parameters())
        m.zero_grad(set_to_none=True)
        assert all(p.grad is None for p in m.parameters())
        m.requires_grad_(False)
        assert not any(p.requires_grad for p in m.parameters())


def test_to_keeps_parameter_identity_for_optimizers():
    m = retorch.nn.Linear(3, 2)
    opt = retorch.optim.SGD(m.parameters(), lr=0.1)
    w = m.weight
    m.to(retorch.float64)
    assert m.weight is w and w.dtype == retorch.float64 and isinstance(w, retorch.nn.Parameter)
    m.double().float()
    assert m.weight.dtype == retorch.float32
    m(retorch.ones(1, 3)).sum().backward()
    before = m.weight.detach().clone()
    opt.step()
    assert not np.allclose(before.numpy(), m.weight.detach().numpy())


def test_deepcopy_is_independent():
    m = build(retorch)
    c = copy.deepcopy(m)
    assert isinstance(c.block.fc.weight, retorch.nn.Parameter)
    with retorch.no_grad():
        c.block.fc.weight.add_(1)
    assert not np.allclose(c.block.fc.weight.detach().numpy(), m.block.fc.weight.detach().numpy())
    # Shared submodules stay shared inside the copy.
    assert c.heads[0] is c.shared


def test_containers_match_torch():
    res = []
    for lib in LIBS:
        nn = lib.nn
        s = nn.Sequential(OrderedDict([("a", nn.ReLU()), ("b", nn.Tanh()), ("c", nn.Sigmoid())]))
        s.append(nn.Identity())
        row = [len(s), type(s[1]).__name__, [type(x).__name__ for x in s[1:3]],
               type(s[-1]).__name__]
        del s[0]
        row.append([n for n, _ in s.named_children()])
        lst = nn.ModuleList([nn.ReLU()])
        lst += [nn.Tanh()]
        lst.insert(0, nn.Identity())
        row.append([type(x).__name__ for x in lst])
        d = nn.ModuleDict({"x": nn.ReLU()})
        d["y"] = nn.Tanh()
        row.append(list(d.keys()) + [("x" in d), len(d)])
        pl = nn.ParameterList([lib.zeros(2)])
        pl.append(nn.Parameter(lib.ones(3)))
        row.append([(type(p).__name__ in ("Parameter",), tuple(p.shape)) for p in pl])
        pd = nn.ParameterDict({"w": nn.Parameter(lib.zeros(1))})
        row.append(list(pd.keys()))
        res.append(row)
    assert res[1] == res[0]


def test_module_repr_matches_torch():
    assert repr(build(retorch)).replace("retorch.", "torch.") == repr(build(torch))


def test_clip_grad_norm_matches_torch(rng):
    grads = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (5,)]]
    out = []
    for lib in LIBS:
        ps = [lib.nn.Parameter(lib.zeros(*g.shape)) for g in grads]
        for p, g in zip(ps, grads):
            p.grad = lib.from_numpy(g.copy())
        n = lib.nn.utils.clip_grad_norm_(ps, 1.5)
        out.append((float(n), [p.grad.numpy().copy() for p in ps]))
        lib.nn.utils.clip_grad_value_(ps, 0.1)
        out.append((0.0, [p.grad.numpy().copy() for p in ps]))
        vec = lib.nn.utils.parameters_to_vector(ps)
        out.append((float(vec.sum()), []))
    for a, b in [(out[0], out[3]), (out[1], out[4]), (out[2], out[5])]:
        assert abs(a[0] - b[0]) < 1e-5
        for x, y in zip(a[1], b[1]):
            np.testing.assert_allclose(y, x, rtol=1e-6)


@pytest.mark.parametrize("fn,args", [
    ("xavier_uniform_", ()), ("xavier_normal_", ()), ("kaiming_uniform_", ()),
    ("kaiming_normal_", (0, "fan_out", "relu")), ("orthogonal_", ()), ("trunc_normal_", ()),
    ("uniform_", (-2, 3)), ("normal_", (1, 2)), ("constant_", (0.5,)), ("eye_", ()),
])
def test_init_distributions_match_torch(fn, args):
    t = getattr(torch.nn.init, fn)(torch.empty(300, 200), *args)
    r_in = retorch.empty(300, 200)
    r = getattr(retorch.nn.init, fn)(r_in, *args)
    assert r is r_in
    tn, rn = t.numpy(), r.numpy()
    tol = 0.02 * max(1.0, float(tn.std()))
    assert abs(tn.mean() - rn.mean()) < tol and abs(tn.std() - rn.std()) < tol
    for q in (0.01, 0.5, 0.99):
        assert abs(np.quantile(tn, q) - np.quantile(rn, q)) < 0.05 * max(1.0, tn.std())


def test_optimizer_param_groups_from_python_modules():
    m = build(retorch)
    opt = retorch.optim.SGD([{"params": m.block.parameters()},
                             {"params": m.heads.parameters(), "lr": 0.5}], lr=0.01, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.01, 0.5]
    sum(o.sum() for o in m(retorch.ones(3, 4))).backward()
    w0 = m.heads[1].weight.detach().clone()
    g = m.heads[1].weight.grad.clone()
    opt.step()
    np.testing.assert_allclose(m.heads[1].weight.detach().numpy(),
                               (w0 - 0.5 * g).numpy(), rtol=1e-6)
