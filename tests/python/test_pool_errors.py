"""torch 1.13's argument errors of F.max_pool1d/2d/3d and F.avg_pool1d/2d/3d (and their nn
modules): each call runs on both libraries and must raise the same exception type with torch's
message; the cases are the OpInfo error_inputs retorch missed plus their neighbours in torch's
order of checks. Then a few valid calls, compared by value."""
import warnings

import numpy as np
import pytest
import torch

import retorch


def _input(lib, shape, requires_grad):
    n = int(np.prod(shape)) if shape else 1
    x = lib.arange(float(n)).reshape(shape) if n else lib.zeros(shape)
    return x.requires_grad_(True) if requires_grad else x


def _call(lib, name, shape, requires_grad, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(lib.nn.functional, name)(_input(lib, shape, requires_grad), **kwargs)


def _error(lib, *args):
    """(exception type name, message) of the call, or None when it returns."""
    try:
        _call(lib, *args)
    except Exception as e:  # noqa: BLE001 (the error is the outcome)
        return type(e).__name__, str(e).split("\nException raised from")[0]
    return None


# (function, input shape, requires_grad, kwargs) that torch refuses.
ERRORS = [
    # max_pool1d: the plain path (check_max_pool1d) ...
    ("max_pool1d", (), False, dict(kernel_size=1)),
    ("max_pool1d", (0,), False, dict(kernel_size=1)),
    ("max_pool1d", (0, 10), False, dict(kernel_size=1)),
    ("max_pool1d", (1, 10, 0), False, dict(kernel_size=1)),
    ("max_pool1d", (3, 3, 3), False, dict(kernel_size=1, stride=0)),
    ("max_pool1d", (3, 3, 3), False, dict(kernel_size=1, stride=1, padding=0, dilation=0)),
    ("max_pool1d", (2, 2, 2), False, dict(kernel_size=5, stride=1, padding=0, dilation=1)),
    ("max_pool1d", (0, 1, 49), False, dict(kernel_size=0)),
    ("max_pool1d", (0, 1, 49), False, dict(kernel_size=2, stride=0)),
    ("max_pool1d", (2, 5), False, dict(kernel_size=2, padding=-1)),
    ("max_pool1d", (2, 5), False, dict(kernel_size=2, padding=2)),
    ("max_pool1d", (2, 5), False, dict(kernel_size=(2, 2))),
    ("max_pool1d", (2, 5), False, dict(kernel_size=2, stride=(2, 2))),
    ("max_pool1d", (2, 5), False, dict(kernel_size=2, padding=(0, 0))),
    ("max_pool1d", (2, 5), False, dict(kernel_size=2, dilation=(1, 1))),
    # ... with indices, or with grad: max_pool1d_with_indices, then the 2-d checks
    ("max_pool1d", (0, 1, 49), False,
     dict(kernel_size=2, stride=50, padding=-1, return_indices=True)),
    ("max_pool1d", (0, 1, 49), True,
     dict(kernel_size=2, stride=50, padding=-1, return_indices=True)),
    ("max_pool1d", (0, 1, 49), False,
     dict(kernel_size=2, stride=50, padding=4, return_indices=True)),
    ("max_pool1d", (), True, dict(kernel_size=1)),
    ("max_pool1d", (0, 10), True, dict(kernel_size=1)),
    ("max_pool1d", (1, 10, 0), True, dict(kernel_size=1)),
    ("max_pool1d", (3, 3, 3), True, dict(kernel_size=1, stride=0)),
    ("max_pool1d", (3, 3, 3), True, dict(kernel_size=1, stride=1, padding=0, dilation=0)),
    ("max_pool1d", (2, 2, 2), True, dict(kernel_size=5, stride=1, padding=0, dilation=1)),
    ("max_pool1d", (0, 1, 49), True, dict(kernel_size=0)),
    ("max_pool1d", (3, 3, 3), True, dict(kernel_size=-1)),
    ("max_pool1d", (0, 10), False, dict(kernel_size=1, return_indices=True)),
    ("max_pool1d", (5,), False, dict(kernel_size=1, return_indices=True)),
    ("max_pool1d", (2, 5), False, dict(kernel_size=2, stride=(2, 2), return_indices=True)),
    # max_pool2d
    ("max_pool2d", (0, 1, 49), False,
     dict(kernel_size=2, stride=50, padding=-1, return_indices=True)),
    ("max_pool2d", (0, 1, 49), False,
     dict(kernel_size=(3, 2), stride=50, padding=-1, return_indices=True)),
    ("max_pool2d", (0, 1, 49), False,
     dict(kernel_size=2, stride=50, padding=4, return_indices=True)),
    ("max_pool2d", (0, 1, 49), False,
     dict(kernel_size=(3, 2), stride=50, padding=4, return_indices=True)),
    ("max_pool2d", (1, 0, 10), False, dict(kernel_size=1)),
    ("max_pool2d", (2, 1, 10, 0), False, dict(kernel_size=1)),
    ("max_pool2d", (3, 5), False, dict(kernel_size=2)),
    ("max_pool2d", (3, 5, 5), False, dict(kernel_size=0)),
    ("max_pool2d", (3, 5, 5), False, dict(kernel_size=-1)),
    ("max_pool2d", (3, 5, 5), False, dict(kernel_size=2, stride=-1)),
    ("max_pool2d", (3, 5, 5), False, dict(kernel_size=2, dilation=0)),
    ("max_pool2d", (3, 5, 5), False, dict(kernel_size=7)),
    ("max_pool2d", (3, 5, 5), False, dict(kernel_size=(2, 2, 2))),
    ("max_pool2d", (3, 5, 5), False, dict(kernel_size=2, stride=(2, 2, 2))),
    ("max_pool2d", (3, 5, 5), False, dict(kernel_size=2, padding=(1, 1, 1))),
    ("max_pool2d", (3, 5, 5), False, dict(kernel_size=2, dilation=(1, 1, 1))),
    # max_pool3d
    ("max_pool3d", (0, 1, 49, 50), False,
     dict(kernel_size=2, stride=50, padding=-1, return_indices=True)),
    ("max_pool3d", (0, 1, 49, 50), False,
     dict(kernel_size=(3, 2, 2), stride=50, padding=-1, return_indices=True)),
    ("max_pool3d", (0, 1, 49, 50), False,
     dict(kernel_size=(3, 2, 2), stride=50, padding=4, return_indices=True)),
    ("max_pool3d", (0, 1, 2, 10), False, dict(kernel_size=1)),
    ("max_pool3d", (2, 1, 0, 1, 2), False, dict(kernel_size=1)),
    ("max_pool3d", (), False, dict(kernel_size=2)),
    ("max_pool3d", (2, 3, 4, 5), False, dict(kernel_size=(2, 2))),
    ("max_pool3d", (2, 3, 4, 5), False, dict(kernel_size=2, stride=(2, 2))),
    ("max_pool3d", (2, 3, 4, 5), False, dict(kernel_size=2, padding=(1, 1))),
    ("max_pool3d", (2, 3, 4, 5), False, dict(kernel_size=2, dilation=(1, 1))),
    ("max_pool3d", (2, 3, 4, 5), False, dict(kernel_size=0)),
    ("max_pool3d", (2, 3, 4, 5), False, dict(kernel_size=-1)),
    ("max_pool3d", (2, 3, 4, 5), False, dict(kernel_size=2, stride=-1)),
    ("max_pool3d", (2, 3, 4, 5), False, dict(kernel_size=2, dilation=0)),
    ("max_pool3d", (2, 3, 4, 5), False, dict(kernel_size=5)),
    # avg_pool1d
    ("avg_pool1d", (0, 1, 49), False, dict(kernel_size=2, stride=50, padding=-1)),
    ("avg_pool1d", (0, 1, 49), False, dict(kernel_size=2, stride=50, padding=4)),
    ("avg_pool1d", (5,), False, dict(kernel_size=2)),
    ("avg_pool1d", (2, 5), False, dict(kernel_size=(2, 2))),
    ("avg_pool1d", (2, 5), False, dict(kernel_size=2, stride=0)),
    ("avg_pool1d", (2, 5), False, dict(kernel_size=2, stride=-1)),
    ("avg_pool1d", (2, 5), False, dict(kernel_size=7)),
    ("avg_pool1d", (0, 5), False, dict(kernel_size=2)),
    # avg_pool2d
    ("avg_pool2d", (0, 1, 49), False, dict(kernel_size=2, stride=50, padding=-1)),
    ("avg_pool2d", (0, 1, 49), False, dict(kernel_size=(3, 2), stride=50, padding=-1)),
    ("avg_pool2d", (0, 1, 49), False, dict(kernel_size=2, stride=50, padding=4)),
    ("avg_pool2d", (0, 1, 49), False, dict(kernel_size=(3, 2), stride=50, padding=4)),
    ("avg_pool2d", (3, 3, 3), False, dict(kernel_size=(2, 2), divisor_override=0)),
    ("avg_pool2d", (), False, dict(kernel_size=2)),
    ("avg_pool2d", (3, 7), False, dict(kernel_size=2)),
    ("avg_pool2d", (1, 0, 5, 5), False, dict(kernel_size=2)),
    ("avg_pool2d", (3, 5, 5), False, dict(kernel_size=0)),
    ("avg_pool2d", (3, 5, 5), False, dict(kernel_size=7)),
    ("avg_pool2d", (3, 5, 5), False, dict(kernel_size=(2, 2, 2))),
    ("avg_pool2d", (3, 5, 5), False, dict(kernel_size=2, padding=(1, 1, 1))),
    # avg_pool3d
    ("avg_pool3d", (0, 1, 49, 50), False, dict(kernel_size=2, stride=50, padding=-1)),
    ("avg_pool3d", (0, 1, 49, 50), False, dict(kernel_size=(3, 2, 2), stride=50, padding=-1)),
    ("avg_pool3d", (0, 1, 49, 50), False, dict(kernel_size=2, stride=50, padding=4)),
    ("avg_pool3d", (3, 3, 3, 3), False, dict(kernel_size=(2, 2, 2), divisor_override=0)),
    ("avg_pool3d", (0, 1, 49), False, dict(kernel_size=2, stride=50, padding=0)),
    ("avg_pool3d", (3, 4, 5), False, dict(kernel_size=2, divisor_override=0)),
    ("avg_pool3d", (2, 3, 4, 5), False, dict(kernel_size=(2, 2))),
    ("avg_pool3d", (2, 3, 4, 5), False, dict(kernel_size=2, stride=(2, 2))),
    ("avg_pool3d", (2, 3, 4, 5), False, dict(kernel_size=2, padding=(1, 1))),
    ("avg_pool3d", (2, 3, 4, 5), False, dict(kernel_size=-1)),
    ("avg_pool3d", (2, 3, 4, 5), False, dict(kernel_size=5)),
    ("avg_pool3d", (2, 0, 4, 5), False, dict(kernel_size=1)),
    ("avg_pool3d", (0, 1, 1, 4, 5), False, dict(kernel_size=4, stride=1, padding=1)),
]


@pytest.mark.parametrize("name,shape,requires_grad,kwargs", ERRORS,
                         ids=[f"{c[0]}-{c[1]}-{'grad-' if c[2] else ''}{c[3]}" for c in ERRORS])
def test_pool_error_matches_torch(name, shape, requires_grad, kwargs):
    want = _error(torch, name, shape, requires_grad, kwargs)
    assert want is not None, "torch accepts this call"
    got = _error(retorch, name, shape, requires_grad, kwargs)
    assert got is not None, f"retorch accepts it; torch raises {want}"
    assert got[0] == want[0] and want[1] in got[1], f"torch: {want}\nretorch: {got}"


def test_max_pool1d_no_grad_takes_the_plain_path():
    """Under no_grad an input that requires grad gets check_max_pool1d's words, as in torch."""
    x, y = torch.zeros(3, 3, 3, requires_grad=True), retorch.zeros(3, 3, 3).requires_grad_(True)
    with torch.no_grad(), pytest.raises(RuntimeError) as want:
        torch.nn.functional.max_pool1d(x, 1, 0)
    with retorch.no_grad(), pytest.raises(RuntimeError) as got:
        retorch.nn.functional.max_pool1d(y, 1, 0)
    assert str(want.value) in str(got.value)


@pytest.mark.parametrize("module,args,shape", [
    ("MaxPool1d", dict(kernel_size=2, padding=2), (2, 5)),
    ("MaxPool2d", dict(kernel_size=2, stride=0), (3, 5, 5)),
    ("MaxPool3d", dict(kernel_size=2, padding=-1), (2, 3, 4, 5)),
    ("AvgPool1d", dict(kernel_size=2, padding=4), (2, 5)),
    ("AvgPool2d", dict(kernel_size=2, padding=-1), (3, 5, 5)),
    ("AvgPool3d", dict(kernel_size=5), (2, 3, 4, 5)),
])
def test_pool_module_error_matches_torch(module, args, shape):
    with pytest.raises(Exception) as want:
        getattr(torch.nn, module)(**args)(torch.zeros(shape))
    with pytest.raises(Exception) as got:
        getattr(retorch.nn, module)(**args)(retorch.zeros(shape))
    assert type(got.value) is type(want.value) or type(got.value).__name__ == want.typename
    assert str(want.value) in str(got.value)


# Valid calls next to the refused ones: the checks must let them through unchanged.
VALID = [
    ("max_pool1d", (2, 4), False, dict(kernel_size=5)),  # an empty output: torch's OW >= 0
    ("max_pool1d", (2, 3, 7), False, dict(kernel_size=3, stride=2, padding=1, dilation=2)),
    ("max_pool1d", (2, 3, 7), True, dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("max_pool1d", (2, 3, 7), False, dict(kernel_size=(3,), stride=[], return_indices=True)),
    ("max_pool2d", (2, 3, 7, 6), False, dict(kernel_size=(3, 2), stride=(2, 1), padding=1)),
    ("max_pool2d", (3, 5, 5), False, dict(kernel_size=3, stride=1, padding=1, dilation=2)),
    ("max_pool2d", (0, 2, 5, 5), False, dict(kernel_size=2, return_indices=True)),
    ("max_pool3d", (1, 2, 4, 5, 6), False, dict(kernel_size=(2, 3, 2), padding=1)),
    ("max_pool3d", (2, 4, 5, 6), False, dict(kernel_size=2, ceil_mode=True, return_indices=True)),
    ("avg_pool1d", (2, 3, 7), False, dict(kernel_size=3, stride=2, padding=1)),
    ("avg_pool1d", (3, 7), False, dict(kernel_size=(2,), ceil_mode=True)),
    ("avg_pool2d", (2, 3, 7, 6), False, dict(kernel_size=(3, 2), padding=1, divisor_override=2)),
    ("avg_pool2d", (3, 7, 6), False, dict(kernel_size=3, count_include_pad=False, padding=1)),
    ("avg_pool3d", (1, 2, 4, 5, 6), False, dict(kernel_size=(3, 2, 2), padding=1)),
    ("avg_pool3d", (2, 4, 5, 6), False, dict(kernel_size=2, stride=1)),
]


@pytest.mark.parametrize("name,shape,requires_grad,kwargs", VALID,
                         ids=[f"{c[0]}-{c[1]}-{c[3]}" for c in VALID])
def test_valid_pool_matches_torch(name, shape, requires_grad, kwargs):
    want = _call(torch, name, shape, requires_grad, kwargs)
    got = _call(retorch, name, shape, requires_grad, kwargs)
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    assert len(got) == len(want)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-6)
