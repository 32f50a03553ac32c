"""Tensor printing matches PyTorch's repr character for character."""
import numpy as np
import pytest
import torch

import retorch

CASES = [
    lambda m: m.tensor([1.0, 2.0, 3.0]),
    lambda m: m.tensor([[1.5, -2.25], [3.0, 4.0]]),
    lambda m: m.tensor([1e-5, 1.0]),
    lambda m: m.tensor([1.0, 10000.0]),
    lambda m: m.tensor([1e10, 1.0]),
    lambda m: m.tensor([1.5, float("nan"), float("inf"), -float("inf")]),
    lambda m: m.tensor([True, False]),
    lambda m: m.tensor([1, -20, 300]),
    lambda m: m.tensor(3.0),
    lambda m: m.tensor(7),
    lambda m: m.zeros(0),
    lambda m: m.zeros(0, 3),
    lambda m: m.zeros(0, dtype=m.int64),  # an empty tensor names every dtype but the default
    lambda m: m.zeros(2, 0, dtype=m.bool),
    lambda m: m.zeros(0, 2, dtype=m.float64),
    lambda m: m.arange(2000),
    lambda m: m.arange(2000.0).reshape(2, 1000),
    lambda m: m.arange(3000.0).reshape(1000, 3),
    lambda m: m.arange(24.0).reshape(2, 3, 4) / 7,
    lambda m: m.arange(40.0) / 3,
    lambda m: m.tensor([[1.0, 2.0]], dtype=m.float64),
    lambda m: m.tensor([1, 2], dtype=m.int32),
    lambda m: m.tensor([1.0, 2.0], requires_grad=True),
    lambda m: m.tensor([1.0, 2.0], requires_grad=True) * 2,
    lambda m: m.tensor([0.1, 0.25], dtype=m.float16),
]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_repr_matches_torch(i):
    ours = repr(CASES[i](retorch))
    theirs = repr(CASES[i](torch))
    assert ours == theirs


PRINT_OPTIONS = [dict(precision=2), dict(precision=7), dict(sci_mode=True),
                 dict(sci_mode=True, precision=1), dict(sci_mode=False, precision=6),
                 dict(threshold=5, edgeitems=1), dict(threshold=20, edgeitems=2),
                 dict(linewidth=30), dict(profile="short"), dict(profile="full")]
PRINT_DATA = [[[1.23456, 100.5], [0.001, -3.0]], [[1.0, 2000.0], [3.0, -4.0]],
              [[float(i) * 1.5 for i in range(12)] for _ in range(9)], list(range(40)),
              [0.5, float("nan"), float("inf")]]


@pytest.mark.parametrize("opts", PRINT_OPTIONS, ids=[str(o) for o in PRINT_OPTIONS])
def test_set_printoptions_prints_like_torch(opts):
    try:
        for data in PRINT_DATA:
            torch.set_printoptions(**opts)
            retorch.set_printoptions(**opts)
            assert repr(retorch.tensor(data)) == repr(torch.tensor(data)), (opts, data)
    finally:
        torch.set_printoptions(profile="default")
        retorch.set_printoptions(profile="default")
    assert repr(retorch.tensor([1.23456])) == "tensor([1.2346])"


def test_set_printoptions_refuses_nonsense():
    with pytest.raises(ValueError, match="set_printoptions: precision must be in"):
        retorch.set_printoptions(precision=-1)
