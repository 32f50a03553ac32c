"""Tensor.view(dtype) (PyTorch's view.dtype) against torch: the same bytes read as another
dtype, shapes and strides scaled on the last dimension, the checks and their messages, memory
shared both ways, no autograd history."""
import numpy as np
import pytest
import torch

import retorch

CUSTOM = {
    "test_views_of_a_float32_matrix": ["view.dtype"],
    "test_views_back_to_float32_and_of_strided_inputs": ["view.dtype"],
    "test_errors_match_torchs": ["view.dtype"],
}

DTYPES = ["uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "bool"]


def pair(shape, seed=0):
    """A float32 tensor of random bytes' values (finite) in both libraries."""
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return retorch.tensor(x), torch.tensor(x)


def same(r, t):
    assert str(r.dtype) == str(t.dtype)
    assert tuple(r.shape) == tuple(t.shape)
    assert tuple(r.stride()) == tuple(t.stride())
    assert r.storage_offset() == t.storage_offset()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: compare the bits
        r, t = r.view(retorch.int16), t.view(torch.int16)
    want = t.numpy()
    got = r.numpy()
    assert np.array_equal(got, want, equal_nan=True)


@pytest.mark.parametrize("dt", DTYPES)
def test_views_of_a_float32_matrix(dt):
    r, t = pair((3, 8))
    same(r.view(getattr(retorch, dt)), t.view(getattr(torch, dt)))


@pytest.mark.parametrize("dt", DTYPES)
def test_views_back_to_float32_and_of_strided_inputs(dt):
    r, t = pair((4, 16), seed=1)
    rv, tv = r.view(getattr(retorch, dt)), t.view(getattr(torch, dt))
    same(rv.view(retorch.float32), tv.view(torch.float32))
    # rows two apart, columns from 4: stride 32 elements and an offset of 4
    rs, ts = r[::2, 4:12], t[::2, 4:12]
    same(rs.view(getattr(retorch, dt)), ts.view(getattr(torch, dt)))


def test_expanded_rows_empty_tensors_and_size_one_dims():
    r, t = pair((1, 4), seed=2)
    same(r.expand(3, 4).view(retorch.int16), t.expand(3, 4).view(torch.int16))
    same(retorch.zeros(0, 4).view(retorch.float64), torch.zeros(0, 4).view(torch.float64))
    same(retorch.zeros(3, 1).view(retorch.int16), torch.zeros(3, 1).view(torch.int16))
    same(retorch.tensor(1.5).view(retorch.int32), torch.tensor(1.5).view(torch.int32))


CASES = [
    (lambda L: L.tensor(1.0), "int16"),                       # 0-d, other size
    (lambda L: L.zeros(4, 2).t(), "int16"),                   # last stride not 1
    (lambda L: L.zeros(3, 1).expand(3, 4), "int16"),          # last stride 0
    (lambda L: L.zeros(2, 3, dtype=L.int16), "float32"),      # last size not divisible
    (lambda L: L.zeros(8, dtype=L.int16)[1:5], "float32"),    # offset not divisible
    (lambda L: L.zeros(4, 5, dtype=L.int16)[:, :4], "float32"),  # row stride not divisible
]


@pytest.mark.parametrize("make,dt", CASES)
def test_errors_match_torchs(make, dt):
    with pytest.raises(RuntimeError) as want:
        make(torch).view(getattr(torch, dt))
    with pytest.raises(RuntimeError) as got:
        make(retorch).view(getattr(retorch, dt))
    assert str(want.value) in str(got.value)


def test_memory_is_shared_both_ways():
    r = retorch.zeros(2, 4)
    b = r.view(retorch.uint8)
    b[0, 3] = 0x3F  # the high byte of r[0, 0]
    b[0, 2] = 0x80  # 0x3F800000 is 1.0
    assert r[0, 0].item() == 1.0
    r[1, 1] = 2.0
    t = torch.zeros(2, 4)
    t[1, 1] = 2.0
    assert b[1].tolist() == t.view(torch.uint8)[1].tolist()


def test_no_autograd_history_as_in_torch():
    for L in (retorch, torch):
        x = L.randn(4, requires_grad=True)
        for dt in ("float32", "int32", "bfloat16"):
            y = x.view(getattr(L, dt))
            assert not y.requires_grad and y.grad_fn is None


def test_shape_views_still_work():
    r, t = pair((2, 6), seed=3)
    same(r.view(3, 4), t.view(3, 4))
    same(r.view((4, 3)), t.view((4, 3)))
    same(r.view(-1), t.view(-1))
    same(r.view(12), t.view(12))
