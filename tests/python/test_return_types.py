"""Ops whose results PyTorch names (torch.return_types) return the same named tuples here:
the same type names and fields, the same values per field, and still plain tuples to unpack."""
import pickle

import numpy as np
import pytest
import torch

import retorch

A = np.random.RandomState(0).randn(4, 5).astype(np.float32)
SPD = (A[:, :4].T @ A[:, :4] + 4 * np.eye(4)).astype(np.float32)
TRI = np.triu(SPD).astype(np.float32)

# name -> a call taking the library (torch or retorch) and returning the op's result.
CASES = {
    "max.dim": lambda m: m.max(m.tensor(A), 1),
    "max.dim method keepdim": lambda m: m.tensor(A).max(dim=0, keepdim=True),
    "min.dim": lambda m: m.min(m.tensor(A), 1),
    "sort": lambda m: m.sort(m.tensor(A), dim=1, descending=True),
    "sort method": lambda m: m.tensor(A).sort(0),
    "sort.stable": lambda m: m.sort(m.tensor(A), stable=True, dim=1),
    "topk": lambda m: m.topk(m.tensor(A), 2),
    "topk method": lambda m: m.tensor(A).topk(3, dim=0, largest=False),
    "kthvalue": lambda m: m.kthvalue(m.tensor(A), 2, 1),
    "cummax": lambda m: m.cummax(m.tensor(A), 1),
    "cummin": lambda m: m.cummin(m.tensor(A), 0),
    "linalg.eigh": lambda m: m.linalg.eigh(m.tensor(SPD)),
    "linalg.qr": lambda m: m.linalg.qr(m.tensor(A)),
    "linalg.svd": lambda m: m.linalg.svd(m.tensor(A), full_matrices=False),
    "linalg.slogdet": lambda m: m.linalg.slogdet(m.tensor(SPD)),
    "slogdet": lambda m: m.slogdet(m.tensor(SPD)),
    "svd": lambda m: m.svd(m.tensor(A)),
    "triangular_solve": lambda m: m.triangular_solve(m.tensor(A[:, :4].T.copy()), m.tensor(TRI)),
}


def fields_of(result):
    """The field names of a torch.return_types structseq or of a named tuple."""
    return tuple(getattr(type(result), "_fields", None) or type(result).__match_args__)


@pytest.mark.parametrize("case", sorted(CASES))
def test_named_results_match_torch(case):
    want = CASES[case](torch)
    got = CASES[case](retorch)
    assert type(got).__name__ == type(want).__name__
    assert fields_of(got) == fields_of(want)
    assert isinstance(got, tuple) and len(got) == len(want)
    for name in fields_of(want):
        g, w = getattr(got, name), getattr(want, name)
        if case in ("linalg.eigh", "linalg.qr", "linalg.svd", "svd") and name not in (
                "eigenvalues", "S"):
            # Vectors are defined up to sign: compare magnitudes.
            g, w = np.abs(g.numpy()), np.abs(w.numpy())
        else:
            g, w = g.numpy(), w.numpy()
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=f"{case}.{name}")
    first, second = got[0], got[1]  # indexing and unpacking as a plain tuple
    a, b, *rest = got
    assert a is first and b is second


def test_named_results_print_pickle_and_keep_plain_tuples_elsewhere():
    r = retorch.tensor(A).max(1)
    assert repr(r).startswith("retorch.return_types.max(\nvalues=tensor(")
    assert type(r) is retorch.return_types.max
    plain = retorch.return_types.max(r.values.tolist(), r.indices.tolist())  # pickles by name
    back = pickle.loads(pickle.dumps(plain))
    assert type(back) is type(r) and back.indices == r.indices.tolist()
    # Results PyTorch leaves unnamed stay plain tuples.
    x = retorch.tensor(A)
    assert type(retorch.max(x)) is retorch.Tensor
    assert type(retorch.native_layer_norm(x, [5], None, None, 1e-5)) is tuple
