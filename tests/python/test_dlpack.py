"""DLPack both ways (numpy, torch, retorch itself), zero-copy proven by mutation; numpy bridges."""
import gc

import numpy as np
import pytest
import torch
import torch.utils.dlpack

import retorch
import retorch.utils.dlpack

NP_DTYPES = [np.float32, np.float64, np.float16, np.int64, np.int32, np.int16, np.int8, np.uint8]


def tr(x):
    return x.T if isinstance(x, np.ndarray) else x.t()


def views(base):
    """Contiguous, transposed, strided and offset views of a 2-d array-like."""
    return [base, tr(base), base[1:, ::2], base[2], tr(base[1:3, 1:4])]


@pytest.mark.parametrize("dtype", NP_DTYPES)
def test_numpy_to_retorch_shares_memory(dtype):
    a = np.arange(20).reshape(4, 5).astype(dtype)
    for v in views(a):
        t = retorch.from_dlpack(v)
        assert tuple(t.shape) == v.shape and t.numpy().dtype == v.dtype
        np.testing.assert_array_equal(t.numpy(), v)
        v.flat[-1] = 7  # numpy -> retorch
        assert t.numpy().flat[-1] == 7
        t[(0,) * t.dim()] = 3  # retorch -> numpy
        assert v[(0,) * v.ndim] == 3


@pytest.mark.parametrize("dtype", NP_DTYPES)
def test_retorch_to_numpy_shares_memory(dtype):
    base = retorch.from_numpy(np.arange(20).reshape(4, 5).astype(dtype)).clone()
    for v in views(base):
        a = np.from_dlpack(v)
        assert a.shape == tuple(v.shape)
        assert a.strides == tuple(s * v.element_size() for s in v.stride())
        np.testing.assert_array_equal(a, v.numpy())
        v[(0,) * v.dim()] = 9  # numpy 1.24 marks DLPack imports read-only: write the retorch side
        assert a[(0,) * a.ndim] == 9


TORCH_PAIRS = [(torch.float32, retorch.float32), (torch.float64, retorch.float64),
               (torch.float16, retorch.float16), (torch.bfloat16, retorch.bfloat16),
               (torch.int64, retorch.int64), (torch.int32, retorch.int32),
               (torch.int16, retorch.int16), (torch.int8, retorch.int8),
               (torch.uint8, retorch.uint8)]


@pytest.mark.parametrize("tdt,rdt", TORCH_PAIRS)
def test_torch_to_retorch(tdt, rdt):
    base = torch.arange(20).reshape(4, 5).to(tdt)
    for v in views(base):
        capsule = torch.utils.dlpack.to_dlpack(v)
        for r in (retorch.from_dlpack(v), retorch.utils.dlpack.from_dlpack(capsule)):
            assert r.dtype == rdt and tuple(r.shape) == tuple(v.shape)
            assert r.stride() == v.stride()
            assert r.to(retorch.float64).tolist() == v.double().tolist()
            v[(0,) * v.dim()] = 11
            assert r[(0,) * r.dim()].item() == 11
            r[(-1,) * r.dim()] = 5
            assert v[(-1,) * v.dim()].item() == 5


@pytest.mark.parametrize("tdt,rdt", TORCH_PAIRS)
def test_retorch_to_torch(tdt, rdt):
    base = retorch.arange(20).reshape([4, 5]).to(rdt)
    for v in views(base):
        capsule = retorch.utils.dlpack.to_dlpack(v)
        for t in (torch.from_dlpack(v), torch.utils.dlpack.from_dlpack(capsule)):
            assert t.dtype == tdt and tuple(t.shape) == tuple(v.shape) and t.stride() == v.stride()
            assert t.double().tolist() == v.to(retorch.float64).tolist()
            t[(0,) * t.dim()] = 13
            assert v[(0,) * v.dim()].item() == 13


def test_bool_roundtrip_within_retorch_and_torch_rejection():
    b = retorch.tensor([[True, False, True], [False, False, True]])
    r = retorch.from_dlpack(b.t())
    assert r.dtype == retorch.bool and r.tolist() == b.t().tolist()
    r[0, 1] = True
    assert b[1, 0].item() is True
    # torch 1.13 / numpy 1.24 predate DLPack's bool code and refuse bool on both sides.
    with pytest.raises(RuntimeError, match="Bool"):
        torch.utils.dlpack.to_dlpack(torch.zeros(2, dtype=torch.bool))


def test_zero_dim_and_empty():
    s = retorch.tensor(2.5)
    assert np.from_dlpack(s).shape == () and float(np.from_dlpack(s)) == 2.5
    assert torch.from_dlpack(s).item() == 2.5
    assert retorch.from_dlpack(torch.tensor(4)).item() == 4
    e = retorch.from_dlpack(np.zeros((0, 3), np.float32))
    assert tuple(e.shape) == (0, 3)
    assert tuple(torch.from_dlpack(retorch.zeros(2, 0)).shape) == (2, 0)


def test_lifetime_producer_deleted():
    t = torch.arange(1000, dtype=torch.float64)
    r = retorch.from_dlpack(t)
    del t
    gc.collect()
    torch.zeros(1000, dtype=torch.float64) + 1  # reuse freed memory if it had been freed
    assert r.sum().item() == sum(range(1000))
    x = retorch.arange(1000, dtype=retorch.float64)
    t = torch.from_dlpack(x)
    a = np.from_dlpack(x)
    del x
    gc.collect()
    retorch.zeros(1000, dtype=retorch.float64) + 1
    assert t.sum().item() == a.sum() == sum(range(1000))
    n = np.arange(10.0)
    r = retorch.from_dlpack(n)
    del n
    gc.collect()
    assert r.tolist() == list(map(float, range(10)))


def test_capsule_protocol():
    cap = retorch.utils.dlpack.to_dlpack(retorch.ones(3))
    t = retorch.from_dlpack(cap)
    assert t.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="consumed"):
        retorch.from_dlpack(cap)  # renamed to "used_dltensor" on import
    del cap, t
    retorch.utils.dlpack.to_dlpack(retorch.ones(3))  # an unconsumed capsule frees its export
    assert retorch.ones(2).__dlpack_device__() == (1, 0)


def test_export_errors():
    with pytest.raises(RuntimeError, match="require"):
        retorch.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(TypeError):
        retorch.ones(2).__dlpack__(stream="x")
    with pytest.raises(TypeError):
        retorch.utils.dlpack.from_dlpack(3)
    np_complex = np.zeros(2, np.complex64)
    with pytest.raises(RuntimeError, match="dtype"):
        retorch.from_dlpack(np_complex)
    np_neg = np.arange(4.0)[::-1]
    with pytest.raises(RuntimeError, match="negative strides"):
        retorch.from_dlpack(np_neg)


def test_from_numpy_and_array_bridges():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = retorch.from_numpy(a)
    a[0, 0] = 42
    assert t[0, 0].item() == 42
    t[1, 2] = -1
    assert a[1, 2] == -1
    assert np.shares_memory(t.numpy(), a)
    n = t.t().numpy()
    assert n.shape == (3, 2) and np.shares_memory(n, a)
    arr = np.asarray(t)
    assert arr.dtype == np.float32 and np.shares_memory(arr, a)
    assert np.array(t, dtype=np.float64).dtype == np.float64
    assert retorch.as_tensor(a).data_ptr() == t.data_ptr()
