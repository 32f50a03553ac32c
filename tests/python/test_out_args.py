"""out= on functions whose ops.yaml entry has no out variant (Note [out= without an out variant])
and on the Python-level functions (python/retorch/_arg_errors.py), against torch: values,
resizing, dtype casts, the tensors returned, named results and the errors torch raises."""
import warnings

import numpy as np
import pytest
import torch

import retorch


def pair(values, dtype="float32"):
    values = np.asarray(values)
    return (torch.tensor(values, dtype=getattr(torch, dtype)),
            retorch.tensor(values, dtype=getattr(retorch, dtype)))


def both_out(call, out_shape=(0,), out_dtype="float32"):
    """call(L, out) on both libraries with an out= tensor of out_shape and out_dtype; returns
    (torch out, retorch out, torch returned, retorch returned) or the two exceptions."""
    res = []
    for L in (torch, retorch):
        out = L.zeros(out_shape, dtype=getattr(L, out_dtype))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                res.append((out, call(L, out), None))
            except Exception as e:  # noqa: BLE001 (the exception is compared)
                res.append((out, None, e))
    return res


CASES = {
    # C++ bindings (ops.yaml entries without an out variant)
    "cumsum": lambda L, x, out: L.cumsum(x, 0, out=out),
    "matmul": lambda L, x, out: L.matmul(x, x.t(), out=out),
    "argmax": lambda L, x, out: L.argmax(x, 1, out=out),
    "softmax": lambda L, x, out: L.softmax(x, 1, out=out),
    "tril": lambda L, x, out: L.tril(x, out=out),
    "stack": lambda L, x, out: L.stack([x, x], out=out),
    "logsumexp": lambda L, x, out: L.logsumexp(x, 1, out=out),
    "linalg.inv": lambda L, x, out: L.linalg.inv(x + 4 * L.eye(3), out=out),
    "linalg.vector_norm": lambda L, x, out: L.linalg.vector_norm(x, 2, [1], out=out),
    # Python-level functions
    "diff": lambda L, x, out: L.diff(x, dim=1, out=out),
    "nansum": lambda L, x, out: L.nansum(x, out=out),
    "quantile": lambda L, x, out: L.quantile(x, 0.3, dim=1, out=out),
    "hstack": lambda L, x, out: L.hstack([x, x], out=out),
    "logspace": lambda L, x, out: L.logspace(0, 2, 5, out=out),
    "linalg.pinv": lambda L, x, out: L.linalg.pinv(x, out=out),
    "linalg.matrix_power": lambda L, x, out: L.linalg.matrix_power(x, 3, out=out),
}
INTEGER_RESULTS = {"argmax"}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("out_shape", [(0,), (3, 3), (7,)])
def test_out_written_resized_and_returned(name, out_shape):
    x = np.arange(9.).reshape(3, 3) / 7 + 0.5
    tx, rx = pair(x)
    dtype = "int64" if name in INTEGER_RESULTS else "float32"
    (to, tret, terr), (ro, rret, rerr) = both_out(
        lambda L, out: CASES[name](L, tx if L is torch else rx, out), out_shape, dtype)
    assert terr is None and rerr is None, (terr, rerr)
    assert rret is ro, "out= returns the out tensor itself"
    assert tuple(ro.shape) == tuple(to.shape)
    np.testing.assert_allclose(ro.numpy(), to.numpy(), rtol=1e-5, atol=1e-6)


def test_out_takes_a_wider_dtype_and_refuses_a_narrower_one():
    tx, rx = pair(np.arange(6.).reshape(2, 3))
    (to, _, te), (ro, _, re) = both_out(lambda L, out: L.diff(tx if L is torch else rx, 1,
                                                              out=out), (0,), "float64")
    assert te is None and re is None
    np.testing.assert_allclose(ro.numpy(), to.numpy())
    # (torch's structured kernels ask for the exact dtype, its others for a castable one; both
    # refuse a float result in an integer tensor)
    for fn in (lambda L, x, out: L.matmul(x, x.t(), out=out),
               lambda L, x, out: L.tril(x, out=out), lambda L, x, out: L.diff(x, out=out)):
        (_, _, te), (_, _, re) = both_out(lambda L, out: fn(L, tx if L is torch else rx, out),
                                          (0,), "int64")
        assert te is not None and type(re) is type(te), (te, re)
    assert "result type Float can't be cast to the desired output type Long" in str(re)


def test_out_refuses_autograd_as_torch():
    for L in (torch, retorch):
        x = L.ones(3, requires_grad=True)
        for fn in (lambda: L.cumsum(x, 0, out=L.zeros(3)), lambda: L.diff(x, out=L.zeros(2))):
            with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
                fn()
        with L.no_grad():
            L.cumsum(x, 0, out=L.zeros(3))


def test_several_results_into_a_tuple_of_outs():
    tx, rx = pair(np.array([[3., 1., 2.], [0., 5., 4.]]))
    touts = (torch.zeros(0), torch.zeros(0, dtype=torch.int64))
    routs = (retorch.zeros(0), retorch.zeros(0, dtype=retorch.int64))
    tr = torch.cummax(tx, 1, out=touts)
    rr = retorch.cummax(rx, 1, out=routs)
    assert rr[0] is routs[0] and rr[1] is routs[1]
    for a, b in zip(routs, touts):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert tr.values is touts[0] and rr.values is routs[0]
    # Python-level: aminmax's named result
    touts = (torch.zeros(0), torch.zeros(0))
    routs = (retorch.zeros(0), retorch.zeros(0))
    tr, rr = torch.aminmax(tx, dim=1, out=touts), retorch.aminmax(rx, dim=1, out=routs)
    assert rr.min is routs[0] and rr.max is routs[1]
    np.testing.assert_array_equal(routs[1].numpy(), touts[1].numpy())
    with pytest.raises(TypeError):
        retorch.cummax(rx, 1, out=(retorch.zeros(0),))


def test_factories_write_outs_dtype():
    for L in (torch, retorch):
        out = L.zeros(0, dtype=L.int64)
        L.arange(5, out=out)
        assert out.dtype == L.int64 and out.tolist() == [0, 1, 2, 3, 4]
        out = L.zeros(0, dtype=L.float64)
        L.ones(2, 3, out=out)
        assert out.dtype == L.float64 and tuple(out.shape) == (2, 3)


def test_round_decimals_in_place():
    tx, rx = pair(np.array([1.23456, -7.891, 1234.5]))
    for d in (0, 2, -2):
        t, r = tx.clone(), rx.clone()
        t.round_(decimals=d)
        assert r.round_(decimals=d) is r
        np.testing.assert_allclose(r.numpy(), t.numpy())
