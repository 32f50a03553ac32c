"""Python numbers where tensors are expected, across every top-level function retorch and torch
share: where torch raises TypeError retorch must not fail with an AttributeError from inside
its Python code (python/retorch/_arg_errors.py), the arithmetic aliases take a number for either
operand as torch's, and a tensor given as a size is a TypeError (it crashed the process)."""
import warnings

import pytest
import torch

import retorch

# Functions that change global state or read files.
_SKIP = {"load", "save", "set_default_dtype", "manual_seed", "seed", "set_printoptions",
         "compile", "set_num_threads", "set_num_interop_threads", "use_deterministic_algorithms",
         "set_default_tensor_type", "set_grad_enabled", "set_anomaly_enabled", "from_file",
         "set_flush_denormal", "set_rng_state", "set_warn_always", "Size"}
_NAMES = sorted(n for n in dir(torch) if not n.startswith("_") and not n[0].isupper()
                and n not in _SKIP and callable(getattr(torch, n, None)) and hasattr(retorch, n))
_PATTERNS = [("x", 2.0), (2.0, "x"), ("x", True)]


def _outcome(L, name, pattern):
    x = L.ones(2, 2)
    args = [x if a == "x" else a for a in pattern]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            getattr(L, name)(*args)
            return "ok"
        except Exception as e:  # noqa: BLE001 (the class is the outcome)
            return type(e).__name__


def test_numbers_for_tensors_never_raise_attribute_errors():
    bad = []
    for name in _NAMES:
        for pattern in _PATTERNS:
            got = _outcome(retorch, name, pattern)
            if got == "AttributeError" and _outcome(torch, name, pattern) != "AttributeError":
                bad.append((name, pattern))
    assert not bad, bad


def test_the_message_names_the_function_and_argument():
    with pytest.raises(TypeError, match=r"square\(\): argument \(position 1\) must be Tensor, "
                                        r"not float"):
        retorch.square(2.0)
    with pytest.raises(TypeError, match="take_along_dim"):
        retorch.take_along_dim(retorch.ones(2), 2.0)


@pytest.mark.parametrize("name", ["subtract", "multiply", "divide", "true_divide",
                                  "floor_divide"])
def test_arithmetic_aliases_take_numbers(name):
    for pattern in [(2.0, "x"), ("x", 3)]:
        got, want = [[getattr(L, name)(*[L.tensor([1.0, 4.0]) if a == "x" else a
                                          for a in pattern]).tolist()] for L in (retorch, torch)]
        assert got == want, (name, pattern)


@pytest.mark.parametrize("call", [
    lambda L, t: L.empty(t), lambda L, t: L.zeros(2, t), lambda L, t: L.ones(6).view(t),
    lambda L, t: L.ones(2).new_zeros(t), lambda L, t: L.ones(6).reshape(t)])
def test_a_tensor_as_a_size(call):
    for value in ([2, 3], [[1, 2], [3, 4]], [2.0]):
        for L in (retorch, torch):
            with pytest.raises(TypeError):
                call(L, L.tensor(value))
    for L in (retorch, torch):  # one integer is a size
        assert call(L, L.tensor(6)).shape[-1] == 6
