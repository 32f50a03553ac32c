"""Storages (Note [Storage objects]) against torch 1.13: Tensor.storage() and its bytes, sharing
with the tensor both ways, the legacy FloatStorage & co., and Tensor.set_ onto tensors and
storages."""
import pytest
import torch

import retorch


@pytest.mark.parametrize("L", [torch, retorch], ids=["torch", "retorch"])
def test_typed_storage_of_a_view_is_the_whole_storage(L):
    x = L.arange(6.)
    y = x[2:]
    s = y.storage()
    assert type(s).__name__ == "TypedStorage" and L.is_storage(s)
    assert (s.size(), len(s), s.nbytes(), s.element_size()) == (6, 6, 24, 4)
    assert s.dtype is L.float32 and str(s.device) == "cpu"
    assert s.data_ptr() == x.data_ptr() and s.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert s[2] == 2.0
    s[0] = 5
    assert x[0].item() == 5.0
    x[1] = 7
    assert s[1] == 7.0
    u = s.untyped()
    assert type(u).__name__ == "UntypedStorage" and (u.nbytes(), len(u), u[4]) == (24, 24, 0)
    assert x.storage_type().__name__ == "FloatStorage"


def test_legacy_storages_and_is_storage_match_torch():
    for L in (torch, retorch):
        s = L.LongStorage([1, 2, 3])
        assert s.dtype is L.int64 and s.tolist() == [1, 2, 3] and len(L.FloatStorage(4)) == 4
        assert L.is_storage(s) and not L.is_storage(L.ones(2)) and not L.is_storage(3)


def test_set_onto_tensors_and_storages_matches_torch():
    out = []
    for L in (torch, retorch):
        x = L.arange(6.)
        r = []
        z = L.empty(0)
        assert z.set_(x) is z and z.data_ptr() == x.data_ptr()
        r.append(z.tolist())
        z = L.empty(0)
        r.append(z.set_(x.storage(), 1, (2, 2), (2, 1)).tolist())
        z[0, 0] = 9
        r.append(x.tolist())
        r.append(tuple(L.empty(0).set_(x.storage()).shape))
        z = L.empty(3)
        r.append((tuple(z.set_().shape), z.storage().size()))
        r.append(L.empty(0).set_(x.storage(), 2, (3,)).tolist())
        out.append(r)
    assert out[0] == out[1]
    for L in (torch, retorch):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            L.zeros(2, requires_grad=True).set_(L.arange(6.))
        with pytest.raises(RuntimeError):
            L.empty(0, dtype=L.float64).set_(L.arange(6.))
