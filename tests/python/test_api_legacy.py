"""python/retorch/_api_legacy.py against torch 1.13: the legacy tensor types and constructors,
Tensor.new/type/resize_, set_default_tensor_type, poisson/binomial (support, seeding, moments,
errors), index_reduce (values, gradients, errors) and the warn-always/anomaly switches."""
import math
import os
import warnings

import numpy as np
import pytest
import torch

import retorch
from test_functional_api import assert_same, plain

LIBS = (torch, retorch)
TYPE_NAMES = ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor",
              "CharTensor", "ShortTensor", "IntTensor", "LongTensor", "BoolTensor")
DTYPES = ("float32", "float64", "float16", "bfloat16", "uint8", "int8", "int16", "int32",
          "int64", "bool")


def same(fn):
    """fn(torch) and fn(retorch) agree (values through numpy, dtypes by name)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's beta notices
        want = plain(fn(torch))
        got = plain(fn(retorch))
    assert_same(got, want, "retorch vs torch")


def raises_like_torch(fn, exc, match):
    for m in LIBS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(exc, match=match):
                fn(m)


def geometry(t):
    return [str(t.dtype), tuple(t.shape)]


# ---------------------------------------------------------------- legacy types

@pytest.mark.parametrize("name,dtype", list(zip(TYPE_NAMES, DTYPES)))
def test_legacy_type_builds_its_dtype(name, dtype):
    for m in LIBS:
        cls = getattr(m, name)
        assert cls.dtype == getattr(m, dtype)
        assert geometry(cls(2, 3)) == [f"torch.{dtype}", (2, 3)]
        assert geometry(cls()) == [f"torch.{dtype}", (0,)]
        assert cls(4).type() == f"torch.{name}"
        assert isinstance(m.zeros(2, dtype=getattr(m, dtype)), cls)
        others = [getattr(m, n) for n in TYPE_NAMES if n != name]
        assert not any(isinstance(m.zeros(2, dtype=getattr(m, dtype)), o) for o in others)
    assert repr(getattr(retorch, name)) == repr(getattr(torch, name))


LEGACY_VALUES = {
    "long list": lambda m: m.LongTensor([1, 2]),
    "float ints": lambda m: m.FloatTensor([1, 2]),
    "nested": lambda m: m.FloatTensor([[1, 2], [3, 4]]),
    "long truncates": lambda m: m.LongTensor([1.7, -2.9]),
    "bool": lambda m: m.BoolTensor([1, 0, 2]),
    "byte wraps negatives": lambda m: m.ByteTensor([1, -1, -200]),
    "float bools": lambda m: m.FloatTensor([True, False]),
    "range": lambda m: m.FloatTensor(range(3)),
    "empty list": lambda m: m.FloatTensor([]),
    "empty nested": lambda m: m.FloatTensor([[]]),
    "numpy": lambda m: m.FloatTensor(np.array([[1, 2]], dtype=np.uint8)),
    "numpy 0-d": lambda m: m.FloatTensor(np.array(3.0)),
    "numpy long truncates": lambda m: m.LongTensor(np.array([1.5, 2.5])),
    "numpy int8 wraps": lambda m: m.CharTensor(np.array([300])),
    "double keeps precision": lambda m: m.DoubleTensor([0.1, 1e300]),
    "long keeps precision": lambda m: m.LongTensor([2 ** 53 + 1, -2 ** 63]),
    "float from big int": lambda m: m.FloatTensor([2 ** 70]),
    "half overflows to inf": lambda m: m.HalfTensor([1e6]),
    "data kw": lambda m: m.FloatTensor(data=[1]),
    "tensor elements": lambda m: m.FloatTensor([m.tensor(1.0), m.tensor(2.0)]),
    "device kw": lambda m: m.FloatTensor([2], device="cpu"),
    "alias of tensor": lambda m: m.FloatTensor(m.tensor([1.5, 2.5])),
    "alias of 0-d": lambda m: m.FloatTensor(m.tensor(3.0)),
    "alias of strided": lambda m: m.FloatTensor(m.tensor([1.0, 2.0, 3.0])[::2]),
    "other kw": lambda m: m.FloatTensor(other=m.tensor([1.0])),
    "long alias": lambda m: m.LongTensor(m.tensor([1, 2])),
}


@pytest.mark.parametrize("case", sorted(LEGACY_VALUES))
def test_legacy_constructor_values(case):
    same(LEGACY_VALUES[case])


LEGACY_SHAPES = {
    "sizes": lambda m: m.FloatTensor(2, 3, 4),
    "one size": lambda m: m.FloatTensor(5),
    "zero size": lambda m: m.FloatTensor(0),
    "numpy ints": lambda m: m.FloatTensor(np.int64(2), np.int32(3)),
    "shape of a tensor": lambda m: m.FloatTensor(m.zeros(2, 3).shape),
    "shape of a 0-d tensor": lambda m: m.FloatTensor(m.zeros([]).shape),
    "size kw": lambda m: m.FloatTensor(size=(2, 3)),
    "device kw": lambda m: m.FloatTensor(2, 3, device="cpu"),
    "device object": lambda m: m.FloatTensor(2, device=m.device("cpu")),
    "only device": lambda m: m.FloatTensor(device="cpu"),
    "bool after an int": lambda m: m.FloatTensor(2, True),
}


@pytest.mark.parametrize("case", sorted(LEGACY_SHAPES))
def test_legacy_constructor_shapes(case):
    assert geometry(LEGACY_SHAPES[case](retorch)) == geometry(LEGACY_SHAPES[case](torch))


def test_legacy_alias_shares_memory_and_grad():
    for m in LIBS:
        t = m.tensor([1.5, 2.5], requires_grad=True)
        a = m.FloatTensor(t)
        assert a is not t and a.data_ptr() == t.data_ptr() and a.requires_grad
        (a * m.tensor([2.0, 3.0])).sum().backward()
        assert t.grad.tolist() == [2.0, 3.0]
        plain_t = m.tensor([1.0, 2.0])
        m.FloatTensor(plain_t)[0] = 7.0
        assert plain_t[0].item() == 7.0


def test_only_a_size_reads_as_sizes():
    # As torch: a Size (x.shape, x.size()) gives a tensor of those sizes, a plain tuple is data.
    for m in (torch, retorch):
        assert m.FloatTensor(m.Size([2, 3])).shape == (2, 3)
        assert m.FloatTensor(m.zeros(4, 1).shape).shape == (4, 1)
        assert m.zeros(1).new(m.zeros(2, 5).size()).shape == (2, 5)
        assert m.FloatTensor((2, 3)).tolist() == [2.0, 3.0]
        assert m.FloatTensor((1.5, 2)).tolist() == [1.5, 2.0]


COMBINATION = "new\\(\\) received an invalid combination of arguments - got "
LEGACY_ERRORS = {
    "float": (lambda m: m.FloatTensor(2.5), TypeError,
              r"new\(\): data must be a sequence \(got float\)"),
    "numpy float": (lambda m: m.FloatTensor(np.float64(3)), TypeError,
                    r"data must be a sequence \(got numpy.float64\)"),
    "None": (lambda m: m.FloatTensor(None), TypeError, r"data must be a sequence \(got NoneType\)"),
    "bool": (lambda m: m.FloatTensor(True), TypeError, r"data must be a sequence \(got bool\)"),
    "generator": (lambda m: m.FloatTensor(x for x in [1]), TypeError,
                  r"data must be a sequence \(got generator\)"),
    "str": (lambda m: m.FloatTensor("a"), TypeError, r"new\(\): invalid data type 'str'"),
    "str element": (lambda m: m.FloatTensor([1, "a"]), TypeError,
                    "must be real number, not str"),
    "negative": (lambda m: m.FloatTensor(-1), RuntimeError,
                 r"Trying to create tensor with negative dimension -1: \[-1\]"),
    "negative second": (lambda m: m.FloatTensor(2, -3), RuntimeError,
                        r"negative dimension -3: \[2, -3\]"),
    "cuda device": (lambda m: m.FloatTensor(2, device="cuda"), RuntimeError,
                    "legacy constructor expects device type: cpu but device type: cuda was "
                    "passed"),
    "meta device": (lambda m: m.FloatTensor(2, device=m.device("meta")), RuntimeError,
                    "expects device type: cpu but device type: meta was passed"),
    "dtype kw": (lambda m: m.FloatTensor([1, 2], dtype=m.float64), TypeError,
                 COMBINATION + r"\(list, dtype=torch.dtype\)"),
    "requires_grad kw": (lambda m: m.FloatTensor(2, requires_grad=True), TypeError,
                         COMBINATION + r"\(int, requires_grad=bool\)"),
    "unknown kw": (lambda m: m.FloatTensor(foo=1), TypeError, COMBINATION + r"\(foo=int, \)"),
    "size and int": (lambda m: m.FloatTensor(2, size=(3,)), TypeError,
                     COMBINATION + r"\(int, size=tuple\)"),
    "list in sizes": (lambda m: m.FloatTensor(3, [1]), TypeError,
                      "new\\(\\): argument 'size' must be tuple of ints, but found element of "
                      "type list at pos 2"),
    "float in sizes": (lambda m: m.FloatTensor(2, 3.0), TypeError,
                       "found element of type float at pos 2"),
    "None in sizes": (lambda m: m.FloatTensor(2, None), TypeError,
                      "found element of type NoneType at pos 2"),
    "tensor and int": (lambda m: m.FloatTensor(m.ones(2), 2), TypeError,
                       COMBINATION + r"\(Tensor, int\)"),
    "two lists": (lambda m: m.FloatTensor([1], [2]), TypeError, COMBINATION + r"\(list, list\)"),
    "two bools": (lambda m: m.FloatTensor(True, False), TypeError,
                  COMBINATION + r"\(bool, bool\)"),
    "tensor of another dtype": (
        lambda m: m.LongTensor(m.tensor([1.5])), TypeError,
        r"expected TensorOptions\(dtype=long int, device=cpu, layout=Strided, requires_grad="
        r"false \(default\), pinned_memory=false \(default\), memory_format=\(nullopt\)\) \(got "
        r"TensorOptions\(dtype=float, device=cpu, "),
    "tensor with device": (lambda m: m.FloatTensor(m.ones(1), device="cpu"), RuntimeError,
                           r"Legacy tensor constructor of the form torch.Tensor\(tensor, "
                           r"device=device\) is not supported."),
    "int8 overflow": (lambda m: m.CharTensor([200]), RuntimeError,
                      "value cannot be converted to type int8 without overflow"),
    "uint8 overflow": (lambda m: m.ByteTensor([256]), RuntimeError,
                       "value cannot be converted to type uint8 without overflow"),
    "uint8 negative overflow": (lambda m: m.ByteTensor([-256]), RuntimeError,
                                "value cannot be converted to type uint8 without overflow"),
    "int16 overflow": (lambda m: m.ShortTensor([40000]), RuntimeError,
                       "value cannot be converted to type int16 without overflow"),
    "int32 float overflow": (lambda m: m.IntTensor([2.0 ** 40]), RuntimeError,
                             "value cannot be converted to type int32 without overflow"),
    "int8 float overflow": (lambda m: m.CharTensor([300.5]), RuntimeError,
                            "value cannot be converted to type int8 without overflow"),
    "int64 float overflow": (lambda m: m.LongTensor([1e30]), RuntimeError,
                             "value cannot be converted to type int64 without overflow"),
    "int64 int overflow": (lambda m: m.LongTensor([2 ** 70]), RuntimeError,
                           "Overflow when unpacking long"),
    "ragged": (lambda m: m.FloatTensor([[1, 2], [3]]), ValueError, ""),
}


@pytest.mark.parametrize("case", sorted(LEGACY_ERRORS))
def test_legacy_constructor_errors(case):
    raises_like_torch(*LEGACY_ERRORS[case])


def test_legacy_types_are_not_tensor_classes():
    for m in LIBS:
        assert not issubclass(m.FloatTensor, m.Tensor)
        assert type(m.FloatTensor(2)) is m.Tensor
        assert m.FloatTensor.__name__ == "FloatTensor" and m.FloatTensor.is_cuda is False
        assert not isinstance(3.0, m.FloatTensor) and not isinstance([1.0], m.FloatTensor)
        assert isinstance(m.nn.Parameter(m.ones(2)), m.FloatTensor)
        assert not isinstance(m.ones(2, dtype=m.float64), m.FloatTensor)
    assert not isinstance(retorch.ones(2, device="meta"), retorch.FloatTensor)


# ---------------------------------------------------------------- Tensor.new

NEW_VALUES = {
    "data keeps dtype": lambda m: m.tensor([1, 2], dtype=m.int32).new([1.7, 2]),
    "nested": lambda m: m.ones(1, dtype=m.float64).new([[1, 2], [3, 4]]),
    "alias": lambda m: m.tensor([1, 2], dtype=m.int32).new(m.tensor([3, 4], dtype=m.int32)),
    "numpy": lambda m: m.tensor([1], dtype=m.int32).new(np.array([1.5])),
    "data kw": lambda m: m.tensor([1], dtype=m.int32).new(data=[1]),
    "bool": lambda m: m.tensor([True]).new([0, 3]),
}


@pytest.mark.parametrize("case", sorted(NEW_VALUES))
def test_new_values(case):
    same(NEW_VALUES[case])


NEW_SHAPES = {
    "sizes": lambda m: m.ones(1, dtype=m.int32).new(2, 3),
    "empty": lambda m: m.ones(1, dtype=m.int16).new(),
    "device only": lambda m: m.ones(1).new(device="cpu"),
    "shape": lambda m: m.ones(1, dtype=m.float64).new(m.zeros(4, 2).shape),
    "size kw": lambda m: m.ones(1).new(size=(2,)),
    "size and device": lambda m: m.ones(1, dtype=m.bfloat16).new(2, device="cpu"),
}


@pytest.mark.parametrize("case", sorted(NEW_SHAPES))
def test_new_shapes(case):
    assert geometry(NEW_SHAPES[case](retorch)) == geometry(NEW_SHAPES[case](torch))


def test_new_requires_grad_only_for_an_alias():
    for m in LIBS:
        t = m.tensor([1.5, 2.5], requires_grad=True)
        assert not t.new(2).requires_grad and not t.new([1, 2]).requires_grad
        a = t.new(t)
        assert a.requires_grad and a.data_ptr() == t.data_ptr()


NEW_ERRORS = {
    "other dtype": (lambda m: m.ones(2, dtype=m.int32).new(m.ones(2)), TypeError,
                    r"expected TensorOptions\(dtype=int, device=cpu, .*\(got TensorOptions\("
                    r"dtype=float, device=cpu"),
    "tensor and device": (lambda m: m.ones(2).new(m.ones(2), device="cpu"), RuntimeError,
                          r"Legacy tensor new of the form tensor.new\(tensor, device=device\) "
                          r"is not supported.  Use torch.as_tensor\(...\) instead."),
    "float": (lambda m: m.ones(2).new(2.5), TypeError, r"data must be a sequence \(got float\)"),
    "str": (lambda m: m.ones(2).new("a"), TypeError, "invalid data type 'str'"),
    "dtype kw": (lambda m: m.ones(2).new([1], dtype=m.float32), TypeError, COMBINATION),
    "negative": (lambda m: m.ones(2).new(-1), RuntimeError, "negative dimension -1"),
    "meta device": (lambda m: m.ones(2).new(2, device="meta"), RuntimeError,
                    "expects device type: cpu but device type: meta was passed"),
    "str in sizes": (lambda m: m.ones(2).new(3, "a"), TypeError,
                     "found element of type str at pos 2"),
}


@pytest.mark.parametrize("case", sorted(NEW_ERRORS))
def test_new_errors(case):
    raises_like_torch(*NEW_ERRORS[case])


# ---------------------------------------------------------------- Tensor.type

TYPE_CONVERSIONS = {
    "legacy type": lambda m: m.tensor([1.5, -2.5]).type(m.LongTensor),
    "type name": lambda m: m.tensor([1.5, -2.5]).type("torch.LongTensor"),
    "dtype": lambda m: m.tensor([1.5, 2.5]).type(m.int64),
    "dtype kw": lambda m: m.tensor([1, 2]).type(dtype=m.float64),
    "non_blocking": lambda m: m.tensor([1, 2]).type(m.float32, non_blocking=True),
    "Tensor is the default type": lambda m: m.tensor([1, 2]).type(m.Tensor),
    "half name": lambda m: m.tensor([1, 2]).type("torch.HalfTensor"),
    "names": lambda m: [m.ones(1, dtype=getattr(m, d)).type() for d in DTYPES],
}


@pytest.mark.parametrize("case", sorted(TYPE_CONVERSIONS))
def test_type_conversions(case):
    same(TYPE_CONVERSIONS[case])


def test_type_to_the_same_type_is_self():
    for m in LIBS:
        t = m.tensor([1, 2])
        assert t.type(m.LongTensor) is t and t.type("torch.LongTensor") is t
        assert t.type(m.int64) is t


TYPE_ERRORS = {
    "bare name": (lambda m: m.ones(1).type("LongTensor"), ValueError,
                  "invalid type: 'LongTensor'"),
    "unknown name": (lambda m: m.ones(1).type("torch.foo"), ValueError,
                     "invalid type: 'torch.foo'"),
    "dtype name": (lambda m: m.ones(1).type("torch.float32"), ValueError,
                   "invalid type: 'torch.float32'"),
    "other class": (lambda m: m.ones(1).type(m.nn.Parameter), ValueError,
                    "invalid type: 'Parameter'"),
    "int": (lambda m: m.ones(1).type(3), TypeError, "dtype must be a type, str, or dtype object"),
}


@pytest.mark.parametrize("case", sorted(TYPE_ERRORS))
def test_type_errors(case):
    raises_like_torch(*TYPE_ERRORS[case])


# ---------------------------------------------------------------- set_default_tensor_type

@pytest.mark.parametrize("t,dtype", [("DoubleTensor", "float64"), ("HalfTensor", "float16"),
                                     ("BFloat16Tensor", "bfloat16"), ("FloatTensor", "float32"),
                                     ("torch.DoubleTensor", "float64")])
def test_set_default_tensor_type_sets_the_default_dtype(t, dtype):
    for m in LIBS:
        try:
            m.set_default_tensor_type(t if "." in t else getattr(m, t))
            assert m.get_default_dtype() == getattr(m, dtype)
            assert m.tensor([1.5]).dtype == getattr(m, dtype)
        finally:
            m.set_default_tensor_type(m.FloatTensor)
        assert m.get_default_dtype() == m.float32


DEFAULT_TYPE_ERRORS = {
    "long": (lambda m: m.set_default_tensor_type(m.LongTensor), TypeError,
             "^only floating-point types are supported as the default type$"),
    "long name": (lambda m: m.set_default_tensor_type("torch.IntTensor"), TypeError,
                  "^only floating-point types are supported as the default type$"),
    "bool": (lambda m: m.set_default_tensor_type(m.BoolTensor), TypeError,
             "^only floating-point types are supported"),
    "dtype": (lambda m: m.set_default_tensor_type(m.float64), TypeError,
              "invalid type object: only floating-point types are supported as the default type"),
    "int": (lambda m: m.set_default_tensor_type(3), TypeError, "invalid type object"),
    "Tensor": (lambda m: m.set_default_tensor_type(m.Tensor), TypeError, "invalid type object"),
    "unknown module": (lambda m: m.set_default_tensor_type("FloatTensor"), ModuleNotFoundError,
                       "No module named 'FloatTensor'"),
    "unknown attribute": (lambda m: m.set_default_tensor_type("torch.foo"), AttributeError,
                          "has no attribute 'foo'"),
    "cuda name": (lambda m: m.set_default_tensor_type("torch.cuda.FloatTensor"), TypeError,
                  "type torch.cuda.FloatTensor not available."),
}


@pytest.mark.parametrize("case", sorted(DEFAULT_TYPE_ERRORS))
def test_set_default_tensor_type_errors(case):
    raises_like_torch(*DEFAULT_TYPE_ERRORS[case])
    assert retorch.get_default_dtype() == retorch.float32


# ---------------------------------------------------------------- poisson and binomial

def test_poisson_shapes_dtypes_and_support():
    for dtype in ("float32", "float64", "bfloat16"):
        rates = retorch.tensor([[0.0, 0.5, 3.0], [9.99, 10.0, 250.0]]).to(getattr(retorch, dtype))
        s = retorch.poisson(rates)
        assert s.dtype == rates.dtype and s.shape == (2, 3)
        v = s.float().numpy()
        assert (v >= 0).all() and (v == np.round(v)).all() and v[0, 0] == 0
    assert retorch.poisson(retorch.tensor(3.0)).shape == ()
    assert retorch.poisson(retorch.zeros(0, 3)).shape == (0, 3)
    assert retorch.poisson(retorch.ones(2, 3).t()).shape == (3, 2)


@pytest.mark.parametrize("rate", [0.05, 1.0, 4.5, 9.9, 10.0, 37.5, 1e4])
def test_poisson_moments(rate):
    retorch.manual_seed(5)
    s = retorch.poisson(retorch.full([100000], rate, dtype=retorch.float64)).numpy()
    tol = 5 * math.sqrt(rate / 1e5)  # five standard errors of the mean
    assert abs(s.mean() - rate) < tol
    assert abs(s.var() / rate - 1) < 0.03
    if rate == 37.5:  # the rejection sampler's pmf, bin by bin
        emp = np.bincount(s.astype(np.int64), minlength=80)[:80] / s.size
        pmf = np.exp([-rate + k * math.log(rate) - math.lgamma(k + 1) for k in range(80)])
        assert np.abs(emp - pmf).max() < 3e-3


def test_poisson_is_reproducible():
    rates = retorch.tensor([0.5, 3.0, 12.0, 400.0] * 50)
    retorch.manual_seed(123)
    a = retorch.poisson(rates)
    retorch.manual_seed(123)
    b = retorch.poisson(rates)
    assert retorch.equal(a, b)
    g1, g2 = retorch.Generator().manual_seed(7), retorch.Generator().manual_seed(7)
    c, d = retorch.poisson(rates, g1), retorch.poisson(rates, generator=g2)
    assert retorch.equal(c, d) and not retorch.equal(c, retorch.poisson(rates, g1))


def test_poisson_gradient_is_zero_like_torch():
    for m in LIBS:
        r = m.tensor([3.0, 20.0], requires_grad=True)
        s = m.poisson(r)
        assert s.requires_grad
        (s * 2).sum().backward()
        assert r.grad.tolist() == [0.0, 0.0]
        with m.no_grad():
            assert not m.poisson(r).requires_grad


def test_poisson_infinite_rate_is_torchs_int64_overflow():
    same(lambda m: m.poisson(m.tensor([float("inf"), 0.0])))


POISSON_ERRORS = {
    "negative": (lambda m: m.poisson(m.tensor([1.0, -1.0])), RuntimeError,
                 "invalid Poisson rate, expected rate to be non-negative"),
    "nan": (lambda m: m.poisson(m.tensor([float("nan")])), RuntimeError,
            "invalid Poisson rate, expected rate to be non-negative"),
    "long": (lambda m: m.poisson(m.tensor([1, 2])), RuntimeError,
             "\"poisson_cpu\" not implemented for 'Long'"),
    "half": (lambda m: m.poisson(m.ones(2, dtype=m.float16)), RuntimeError,
             "\"poisson_cpu\" not implemented for 'Half'"),
    "not a tensor": (lambda m: m.poisson(2.0), TypeError,
                     r"poisson\(\): argument 'input' \(position 1\) must be Tensor, not float"),
}


@pytest.mark.parametrize("case", sorted(POISSON_ERRORS))
def test_poisson_errors(case):
    raises_like_torch(*POISSON_ERRORS[case])


def test_binomial_shapes_dtypes_and_support():
    count = retorch.tensor([[0.0, 5.0, 20.0], [100.0, 1e6, 7.0]])
    prob = retorch.tensor([[0.5, 0.3, 0.9], [0.05, 0.7, 1e-9]])
    for dtype in (retorch.float32, retorch.float64):
        s = retorch.binomial(count.to(dtype), prob.to(dtype))
        assert s.dtype == dtype and s.shape == (2, 3)
        v, n = s.numpy(), count.to(dtype).numpy()
        assert (v >= 0).all() and (v <= n).all() and (v == np.round(v)).all() and v[0, 0] == 0
    assert retorch.binomial(retorch.tensor(10.0), retorch.tensor(0.5)).shape == ()
    assert retorch.binomial(retorch.tensor([10.0]), retorch.full([3], 0.5)).shape == (3,)
    assert retorch.binomial(retorch.tensor([[10.0], [3.0]]), retorch.full([2], 0.5)).shape == \
        (2, 2)


def test_binomial_edge_values_like_torch():
    same(lambda m: m.binomial(m.tensor([-1.0, 10.0, 10.0, 10.0, 0.0, 2.5, float("inf")]),
                              m.tensor([0.5, 1.5, -0.5, 0.0, 0.5, 1.0, 1.0])))
    same(lambda m: m.binomial(m.tensor([10.0]), m.tensor([float("nan")])))


@pytest.mark.parametrize("n,p", [(5.0, 0.3), (20.0, 0.3), (20.0, 0.9), (100.0, 0.05),
                                 (100.0, 0.5), (1000.0, 0.7), (1e6, 0.3), (40.0, 0.999)])
def test_binomial_moments(n, p):
    retorch.manual_seed(9)
    s = retorch.binomial(retorch.full([100000], n, dtype=retorch.float64),
                         retorch.full([100000], p, dtype=retorch.float64)).numpy()
    var = n * p * (1 - p)
    assert abs(s.mean() - n * p) < 5 * math.sqrt(var / 1e5)
    assert abs(s.var() / var - 1) < 0.03
    if n in (20.0, 100.0):  # the inversion and the rejection samplers' pmfs, bin by bin
        k = np.arange(int(n) + 1)
        pmf = np.array([math.comb(int(n), int(i)) * p ** i * (1 - p) ** (n - i) for i in k])
        emp = np.bincount(s.astype(np.int64), minlength=k.size) / s.size
        assert np.abs(emp - pmf).max() < 3e-3


def test_binomial_is_reproducible():
    count, prob = retorch.full([300], 50.0), retorch.linspace(0.01, 0.99, 300)
    g = retorch.Generator()
    g.manual_seed(3)
    a = retorch.binomial(count, prob, generator=g)
    g.manual_seed(3)
    assert retorch.equal(a, retorch.binomial(count, prob, g))
    retorch.manual_seed(3)
    b = retorch.binomial(count, prob)
    retorch.manual_seed(3)
    assert retorch.equal(b, retorch.binomial(count, prob))


def test_binomial_backward_is_not_implemented_like_torch():
    for m in LIBS:
        c = m.tensor([10.0], requires_grad=True)
        s = m.binomial(c, m.tensor([0.5]))
        assert s.requires_grad
        with pytest.raises(RuntimeError, match="derivative for aten::binomial is not implemented"):
            s.sum().backward()


BINOMIAL_ERRORS = {
    "long count": (lambda m: m.binomial(m.tensor([10]), m.tensor([0.5])), RuntimeError,
                   "Found dtype Float but expected Long"),
    "mixed floats": (lambda m: m.binomial(m.tensor([10.0]), m.tensor([0.5], dtype=m.float64)),
                     RuntimeError, "Found dtype Double but expected Float"),
    "both long": (lambda m: m.binomial(m.tensor([10]), m.tensor([1])), RuntimeError,
                  "\"binomial_cpu\" not implemented for 'Long'"),
    "half": (lambda m: m.binomial(m.ones(1, dtype=m.float16), m.ones(1, dtype=m.float16)),
             RuntimeError, "\"binomial_cpu\" not implemented for 'Half'"),
    "bfloat16": (lambda m: m.binomial(m.ones(1, dtype=m.bfloat16), m.ones(1, dtype=m.bfloat16)),
                 RuntimeError, "not implemented for 'BFloat16'"),
    "float prob": (lambda m: m.binomial(m.tensor([10.0]), 0.5), TypeError,
                   r"binomial\(\): argument 'prob' \(position 2\) must be Tensor, not float"),
    "shapes": (lambda m: m.binomial(m.tensor([10.0, 3.0, 4.0]), m.tensor([0.5, 0.5])),
               RuntimeError, r"The size of tensor a \(3\) must match the size of tensor b \(2\)"),
}


@pytest.mark.parametrize("case", sorted(BINOMIAL_ERRORS))
def test_binomial_errors(case):
    raises_like_torch(*BINOMIAL_ERRORS[case])


# ---------------------------------------------------------------- index_reduce

SELF = np.array([[1.0, 2, 0], [3, 4, 2], [5, 6, 2]], np.float32)
SOURCE = np.array([[2.0, 0, 2], [3, 5, 2], [1, 2, 0], [3, 3, 3]], np.float32)
WEIGHT = np.random.RandomState(3).randn(3, 3).astype(np.float32)
INDEX = [0, 0, 2, 0]


def _index_reduce_case(reduce, include_self, dim, inplace):
    def run(m):
        x = m.tensor(SELF, requires_grad=True)
        s = m.tensor(SOURCE if dim == 0 else SOURCE.T.copy(), requires_grad=True)
        idx = m.tensor(INDEX)
        if inplace:
            y = (x * 1).index_reduce_(dim, idx, s, reduce, include_self=include_self)
        else:
            y = m.index_reduce(x, dim, idx, s, reduce, include_self=include_self)
        gx, gs = m.autograd.grad((y * m.tensor(WEIGHT)).sum(), [x, s])
        return [y, gx, gs]
    return run


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("inplace", [False, True])
def test_index_reduce_values_and_gradients(reduce, include_self, dim, inplace):
    same(_index_reduce_case(reduce, include_self, dim, inplace))


INDEX_REDUCE_VALUES = {
    "method": lambda m: m.tensor(SELF).index_reduce(-2, m.tensor([0, 2]), m.tensor(SOURCE[:2]),
                                                    "prod"),
    "int mean floors": lambda m: (m.arange(12).reshape(3, 4) + 1).index_reduce(
        0, m.tensor([0, 0]), m.arange(8).reshape(2, 4) - 3, "mean"),
    "int mean no self": lambda m: (m.arange(12).reshape(3, 4) + 1).index_reduce(
        0, m.tensor([0, 0]), m.arange(8).reshape(2, 4) - 3, "mean", include_self=False),
    "uint8 mean": lambda m: m.tensor([1, 2], dtype=m.uint8).index_reduce(
        0, m.tensor([0, 0]), m.tensor([5, 6], dtype=m.uint8), "mean"),
    "int32 index amax": lambda m: m.tensor(SELF).index_reduce(
        1, m.tensor([2, 2, 0], dtype=m.int32), m.tensor(SOURCE[:3]), "amax", include_self=False),
    "half mean": lambda m: m.tensor(SELF, dtype=m.float16).index_reduce(
        0, m.tensor([0, 2]), m.tensor(SOURCE[:2], dtype=m.float16), "mean"),
    "bfloat16 amin": lambda m: m.tensor(SELF, dtype=m.bfloat16).index_reduce(
        0, m.tensor([1, 1]), m.tensor(SOURCE[:2], dtype=m.bfloat16), "amin"),
    "3-d middle dim": lambda m: m.arange(24.0).reshape(2, 3, 4).index_reduce(
        1, m.tensor([2, 0]), m.arange(16.0).reshape(2, 2, 4) - 5, "prod", include_self=False),
    "broadcast source slice": lambda m: m.tensor(SELF).index_reduce(
        0, m.tensor([1]), m.tensor([[2.0]]), "prod"),
    "0-d": lambda m: m.tensor(2.0).index_reduce(0, m.tensor([0]), m.tensor(3.0), "prod"),
    "0-d index": lambda m: m.tensor(2.0).index_reduce(0, m.tensor(0), m.tensor([3.0]), "prod"),
    "empty index": lambda m: m.tensor(SELF).index_reduce(
        0, m.tensor([], dtype=m.int64), m.zeros(0, 3), "amax"),
    "empty self": lambda m: m.zeros(3, 0).index_reduce(0, m.tensor([0, 2]), m.zeros(2, 0),
                                                       "prod"),
    "in place is self": lambda m: (lambda t: [t.index_reduce_(0, m.tensor([1, 1]),
                                                              m.tensor(SOURCE[:2]), "amax")
                                              is t, t])(m.tensor(SELF)),
    "in place 0-d": lambda m: (lambda t: [t.index_reduce_(0, m.tensor([0, 0]),
                                                          m.tensor([3.0, 4.0]), "mean") is t,
                                          t])(m.tensor(2.0)),
    "in place bfloat16": lambda m: (lambda t: [t.index_reduce_(0, m.tensor([2]),
                                                               m.ones(1, 3, dtype=m.bfloat16),
                                                               "prod") is t, t])(
        m.tensor(SELF, dtype=m.bfloat16)),
}


@pytest.mark.parametrize("case", sorted(INDEX_REDUCE_VALUES))
def test_index_reduce_values(case):
    same(INDEX_REDUCE_VALUES[case])


INDEX_REDUCE_ERRORS = {
    "sum": (lambda m: m.ones(3).index_reduce(0, m.tensor([0]), m.ones(1), "sum"), RuntimeError,
            r"index_reduce\(\): Expected reduce to be one of prod, mean, amax or amin but got "
            r"sum."),
    "dim": (lambda m: m.ones(3, 4).index_reduce(2, m.tensor([0]), m.ones(1, 4), "prod"),
            IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got "
                        r"2\)"),
    "2-d index": (lambda m: m.ones(3, 4).index_reduce(0, m.tensor([[0]]), m.ones(1, 4), "prod"),
                  IndexError, r"index_reduce_\(\): Index is supposed to be a vector, but got dim:"
                              r" 2 with type: Long and size: \[1, 1\]"),
    "float index": (lambda m: m.ones(3).index_reduce(0, m.tensor([0.0]), m.ones(1), "prod"),
                    RuntimeError, "Expected dtype int32/int64 for index but got: Float"),
    "dtypes": (lambda m: m.ones(3).index_reduce(0, m.tensor([0]), m.ones(1, dtype=m.float64),
                                                "prod"),
               RuntimeError, r"index_reduce_\(\): self \(Float\) and source \(Double\) must have "
                             r"the same scalar type"),
    "count": (lambda m: m.ones(3, 4).index_reduce(0, m.tensor([0, 1, 2]), m.ones(2, 4), "prod"),
              RuntimeError, r"Number of indices \(3\) should be equal to source.size\(dim\): "
                            r"\(2\), for dim: 0"),
    "source dim": (lambda m: m.ones(3, 4).index_reduce(1, m.tensor([0]), m.ones(4), "prod"),
                   RuntimeError, "Indexing dim 1 is out of bounds of the source tensor with dim "
                                 "1"),
    "slices": (lambda m: m.ones(3, 4).index_reduce(0, m.tensor([0, 2]), m.ones(2, 3), "prod"),
               RuntimeError, r"The size of tensor a \(4\) must match the size of tensor b \(3\) "
                             r"at non-singleton dimension 0"),
    "out of range": (lambda m: m.ones(3, 4).index_reduce(0, m.tensor([0, 3]), m.ones(2, 4),
                                                         "prod"),
                     IndexError, "index out of range in self"),
    "negative index": (lambda m: m.ones(3).index_reduce(0, m.tensor([-1]), m.ones(1), "prod"),
                       IndexError, "index out of range in self"),
    "bool": (lambda m: m.tensor([True, False]).index_reduce(0, m.tensor([0]), m.tensor([False]),
                                                            "prod"),
             RuntimeError, "\"index_func_\" not implemented for 'Bool'"),
}


@pytest.mark.parametrize("case", sorted(INDEX_REDUCE_ERRORS))
def test_index_reduce_errors(case):
    raises_like_torch(*INDEX_REDUCE_ERRORS[case])


def test_index_reduce_warns_once_unless_warn_always():
    x, s, i = retorch.ones(3), retorch.ones(1), retorch.tensor([0])
    x.index_reduce(0, i, s, "prod")  # the process's first notice may already be spent
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        x.index_reduce(0, i, s, "prod")
        assert not seen
        retorch.set_warn_always(True)
        try:
            x.index_reduce(0, i, s, "prod")
            x.index_reduce_(0, i, s, "amax")
        finally:
            retorch.set_warn_always(False)
    assert [str(w.message) for w in seen] == \
        ["index_reduce() is in beta and the API may change at any time."] * 2


# ---------------------------------------------------------------- resize_

RESIZES = {
    "shrink": lambda m: (lambda t: [t.resize_(2, 3) is t, t, t.stride()])(m.arange(8.0)),
    "tuple": lambda m: (lambda t: [t.resize_((3, 2)), t.stride()])(m.arange(6.0)),
    "list": lambda m: m.arange(6.0).resize_([2]),
    "shape": lambda m: m.arange(6.0).resize_(m.zeros(2, 2).shape),
    "size kw": lambda m: m.arange(6.0).resize_(size=(2,)),
    "0-d": lambda m: m.arange(6.0).resize_([]),
    "0-d tensor size": lambda m: m.arange(6.0).resize_(m.tensor(2)),
    "zero": lambda m: m.arange(6.0).resize_(0),
    "same shape keeps strides": lambda m: (lambda t: [t.resize_(3, 2), t.stride()])(
        m.arange(6.0).reshape(2, 3).t()),
    "transposed reads storage": lambda m: m.arange(6.0).reshape(2, 3).t().resize_(6),
    "transposed shrink": lambda m: m.arange(6.0).reshape(2, 3).t().resize_(2, 2),
    "offset kept": lambda m: m.arange(6.0)[1:].resize_(2),
    "strided shrink": lambda m: m.arange(6.0)[::2].resize_(2),
    "strided within storage": lambda m: m.arange(6.0)[::2].resize_(4),
    "contiguous format": lambda m: (lambda t: [t, t.stride()])(
        m.arange(6.0).reshape(2, 3).t().resize_(3, 2, memory_format=m.contiguous_format)),
    "channels_last": lambda m: (lambda t: [tuple(t.shape), t.stride()])(
        m.arange(120.0).resize_(2, 3, 4, 5, memory_format=m.channels_last)),
    "int": lambda m: m.arange(10).resize_(2, 2),
    "grow keeps the prefix": lambda m: m.arange(4.0).resize_(3, 3).reshape(-1)[:4],
    "grow strided keeps its elements": lambda m: m.arange(6.0)[1::2].resize_(20)[:5],
    "shrink then grow within storage": lambda m: m.arange(6.0).resize_(2).resize_(6),
}


@pytest.mark.parametrize("case", sorted(RESIZES))
def test_resize_like_torch(case):
    same(RESIZES[case])


def test_resize_keeps_the_object_and_aliases_within_the_storage():
    for m in LIBS:
        base = m.arange(6.0)
        base.tag = "kept"
        view = base[:3]
        assert base.resize_(2) is base and base.tag == "kept"
        base[0] = 100.0
        assert view[0].item() == 100.0
        base.resize_(2, 3)
        assert base.shape == (2, 3) and base[1, 2].item() == 5.0
        grown = m.arange(3.0)
        assert grown.resize_(50) is grown and grown[:3].tolist() == [0.0, 1.0, 2.0]
        assert grown.shape == (50,)


def test_resize_as_follows_resize():
    same(lambda m: m.arange(6.0).reshape(2, 3).t().resize_as_(m.zeros(6)))
    same(lambda m: m.arange(6.0)[::2].resize_as_(m.zeros(2)))
    same(lambda m: m.arange(6.0).resize_as_(m.zeros(2, 3).t()).stride())


RESIZE_ERRORS = {
    "requires grad": (lambda m: m.ones(6, requires_grad=True).resize_(2), RuntimeError,
                      "cannot resize variables that require grad"),
    "requires grad same shape": (lambda m: m.ones(6, requires_grad=True).resize_(6),
                                 RuntimeError, "cannot resize variables that require grad"),
    "non-leaf": (lambda m: (m.ones(6, requires_grad=True) * 2).resize_(2), RuntimeError,
                 "cannot resize variables that require grad"),
    "no grad mode": (lambda m: _no_grad_resize(m), RuntimeError,
                     "cannot resize variables that require grad"),
    "no size": (lambda m: m.ones(2).resize_(), TypeError,
                'resize_\\(\\) missing 1 required positional arguments: "size"'),
    "float": (lambda m: m.ones(2).resize_(2.5), TypeError,
              r"resize_\(\): argument 'size' \(position 1\) must be tuple of SymInts, not float"),
    "str": (lambda m: m.ones(2).resize_("a"), TypeError, "must be tuple of SymInts, not str"),
    "None": (lambda m: m.ones(2).resize_(None), TypeError,
             "must be tuple of SymInts, not NoneType"),
    "tensor": (lambda m: m.ones(2).resize_(m.tensor([2, 3])), TypeError,
               "must be tuple of SymInts, not Tensor"),
    "str in sizes": (lambda m: m.ones(2).resize_(2, "a"), TypeError,
                     r"resize_\(\): argument 'size' must be tuple of SymInts, but found element "
                     "of type str at pos 2"),
    "float in sizes": (lambda m: m.ones(2).resize_(2, 3.0), TypeError,
                       "found element of type float at pos 2"),
    "two lists": (lambda m: m.ones(2).resize_([2], [3]), TypeError,
                  r"resize_\(\) takes 1 positional argument but 2 were given"),
    "negative": (lambda m: m.ones(2).resize_(2, -1), RuntimeError,
                 "numel: integer multiplication overflow"),
    "preserve": (lambda m: m.ones(2).resize_(2, memory_format=m.preserve_format), RuntimeError,
                 "Unsupported memory formatPreserve"),
    "channels_last rank": (lambda m: m.ones(2).resize_(2, memory_format=m.channels_last),
                           RuntimeError, "required rank 4 tensor to use channels_last format"),
    "memory_format type": (lambda m: m.ones(2).resize_(2, memory_format=3), TypeError,
                           r"resize_\(\): argument 'memory_format' must be torch.memory_format, "
                           "not int"),
}


def _no_grad_resize(m):
    with m.no_grad():
        m.ones(6, requires_grad=True).resize_(2)


@pytest.mark.parametrize("case", sorted(RESIZE_ERRORS))
def test_resize_errors(case):
    raises_like_torch(*RESIZE_ERRORS[case])


# ---------------------------------------------------------------- switches

def test_warn_always_switch():
    for m in LIBS:
        assert m.is_warn_always_enabled() is False
        try:
            m.set_warn_always(True)
            assert m.is_warn_always_enabled() is True
        finally:
            m.set_warn_always(False)
        assert m.is_warn_always_enabled() is False
    raises_like_torch(lambda m: m.set_warn_always(1), RuntimeError,
                      "setWarnOnlyOnce expects a bool, but got int")
    raises_like_torch(lambda m: m.set_warn_always(None), RuntimeError,
                      "setWarnOnlyOnce expects a bool, but got NoneType")


def test_anomaly_switch_is_detect_anomaly():
    for m in LIBS:
        assert m.is_anomaly_enabled() is False
        try:
            m.set_anomaly_enabled(True)
            assert m.is_anomaly_enabled() is True and m.is_anomaly_check_nan_enabled() is True
            with m.autograd.set_detect_anomaly(False):
                assert m.is_anomaly_enabled() is False
            assert m.is_anomaly_enabled() is True
        finally:
            m.set_anomaly_enabled(False)
        assert m.is_anomaly_enabled() is False
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's "Anomaly Detection has been enabled"
            with m.autograd.detect_anomaly():
                assert m.is_anomaly_enabled() is True
    raises_like_torch(lambda m: m.set_anomaly_enabled(1), TypeError,
                      r"set_anomaly_enabled\(\): argument 'enabled' \(position 1\) must be bool, "
                      "not int")
    raises_like_torch(lambda m: m.set_anomaly_enabled(True, "x"), TypeError,
                      "argument 'check_nan' \\(position 2\\) must be bool, not str")
    assert retorch.is_anomaly_enabled() is False


def test_anomaly_switch_turns_on_the_nan_check():
    x = retorch.tensor([0.0], requires_grad=True)
    try:
        retorch.set_anomaly_enabled(True)
        with pytest.raises(RuntimeError, match="returned nan values"):
            (x / x).sum().backward()
    finally:
        retorch.set_anomaly_enabled(False)
    (x / x).sum().backward()  # off again: NaN gradients pass
    assert math.isnan(x.grad.item())


def test_build_facts():
    assert retorch.compiled_with_cxx11_abi() is True and torch.compiled_with_cxx11_abi() is True
    parent = os.path.dirname(os.path.dirname(os.path.abspath(retorch.__file__)))
    assert retorch.get_file_path("a", "b") == os.path.join(parent, "a", "b")
    assert retorch.get_file_path() == parent
    assert torch.get_file_path("a") == os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__))), "a")
