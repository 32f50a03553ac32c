"""One Python object per tensor (Note [One Python object per tensor]), against torch: ops that
return their input's tensor return the same object (in-place ops, requires_grad_, contiguous
and to() when nothing changes, .grad), attributes set on a tensor stay with it, views and copies
are new objects; objects that die leave nothing behind (weakref callbacks, tensors C++ still
holds)."""
import gc
import weakref

import pytest
import torch

import retorch

CHECKS = {
    "contiguous": lambda L, x: x.contiguous() is x,
    "to(same dtype)": lambda L, x: x.to(L.float32) is x,
    "float()": lambda L, x: x.float() is x,
    "cpu()": lambda L, x: x.cpu() is x,
    "to('cpu')": lambda L, x: x.to("cpu") is x,
    "type_as": lambda L, x: x.type_as(x) is x,
    "add_": lambda L, x: x.add_(1) is x,
    "mul_": lambda L, x: x.mul_(1) is x,
    "zero_": lambda L, x: x.zero_() is x,
    "copy_": lambda L, x: x.copy_(x) is x,
    "clamp_": lambda L, x: x.clamp_(0, 1) is x,
    "t_": lambda L, x: x.t_() is x,
    "requires_grad_": lambda L, x: x.requires_grad_(False) is x,
    "__iadd__": lambda L, x: x.__iadd__(1) is x,
    "view": lambda L, x: x.view(-1) is x,
    "detach": lambda L, x: x.detach() is x,
    "t()": lambda L, x: x.t() is x,
    "clone": lambda L, x: x.clone() is x,
    "to(copy=True)": lambda L, x: x.to(L.float32, copy=True) is x,
    "contiguous of a transpose": lambda L, x: x.t().contiguous() is x,
}


@pytest.mark.parametrize("name", list(CHECKS))
def test_identity_matches_torch(name):
    got = CHECKS[name](retorch, retorch.randn(3, 4))
    want = CHECKS[name](torch, torch.randn(3, 4))
    assert got == want


def test_attributes_stay_with_the_tensor():
    for L in (retorch, torch):
        x = L.randn(2)
        x.tag = "kept"
        assert x.add_(1).tag == "kept"
        assert x.requires_grad_().tag == "kept"
        assert not hasattr(x + 1, "tag")
        assert not hasattr(x.detach(), "tag")


def test_grad_and_parameters_keep_their_objects():
    for L in (retorch, torch):
        w = L.ones(3, requires_grad=True)
        w.sum().backward()
        assert w.grad is w.grad
        p = L.nn.Parameter(L.randn(2))
        assert p.requires_grad_() is p and type(p.requires_grad_()).__name__ == "Parameter"
        m = L.nn.Linear(2, 2)
        assert m.weight is list(m.parameters())[0]


def test_an_object_that_dies_is_not_handed_out_again():
    w = retorch.ones(3, requires_grad=True)
    (w * 2).sum().backward()
    g = w.grad
    g.tag = 1
    seen = []
    # The callback runs while g is being destroyed: w.grad (the same tensor) is a new object.
    r = weakref.ref(g, lambda _: seen.append((w.grad.sum().item(), hasattr(w.grad, "tag"))))
    del g
    gc.collect()
    assert r() is None and seen == [(6.0, False)]
    assert w.grad.tolist() == [2.0, 2.0, 2.0]
    assert w.grad is w.grad


def test_many_objects_come_and_go():
    base = retorch.zeros(8)
    for i in range(2000):
        y = base.add_(1)
        assert y is base
        v = base.view(2, 4)
        v.k = i
        assert v.mul_(1).k == i
        del v
    assert base[0].item() == 2000
    # A view whose object died gets a new one the next time.
    pieces = base.split(2)
    ids = [id(p) for p in pieces]
    del pieces
    gc.collect()
    assert all(p.sum().item() == 4000 for p in base.split(2)) and len(ids) == 4


def test_dtypes_are_single_objects_as_torchs():
    import copy
    import pickle
    for L in (retorch, torch):
        x = L.ones(2)
        assert x.dtype is L.float32 and L.float is L.float32 and L.short is L.int16
        assert pickle.loads(pickle.dumps(L.bfloat16)) is L.bfloat16
        assert copy.deepcopy(L.int8) is L.int8
        assert {L.float32: 1}.get(x.dtype) == 1 and L.float32 != L.float64
        assert (L.float32 == 6) is False and L.float32 in [L.float64, L.float]
        assert (x + 1).dtype is L.float32 and x.to(L.float64).dtype is L.double
