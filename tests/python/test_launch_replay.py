"""retorch.runtime.capture/replay against torch: a captured op, replayed after its inputs were
overwritten in place, writes torch's result for the new inputs into the tensor the capture
returned (same buffer). Cases cover each argument kind a direct kernel converts (Note [Direct
replay]): tensors, scalars, int lists, optionals, bools, strings, tensor lists, index lists."""
import numpy as np
import pytest
import torch

import retorch

F32 = np.float32


def rand(rng, *shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype(F32)


def ints(rng, hi, *shape):
    return rng.integers(0, hi, size=shape).astype(np.int64)


# name -> (make inputs from rng: list of numpy arrays, the program over a library and inputs)
CASES = {
    "relu": (lambda r: [rand(r, 6, 7)], lambda L, x: L.relu(x)),
    "exp": (lambda r: [rand(r, 33)], lambda L, x: L.exp(x)),
    "log": (lambda r: [rand(r, 5, 5, lo=0.1)], lambda L, x: L.log(x)),
    "sqrt": (lambda r: [rand(r, 9, lo=0.0)], lambda L, x: L.sqrt(x)),
    "tanh_sigmoid": (lambda r: [rand(r, 40)], lambda L, x: L.tanh(x) + L.sigmoid(x)),
    "erfinv": (lambda r: [rand(r, 17, lo=-0.9, hi=0.9)], lambda L, x: L.erfinv(x)),
    "round_frac_sign": (lambda r: [rand(r, 12) * 3], lambda L, x: L.round(x) + L.frac(x) * L.sign(x)),
    "lgamma_digamma": (lambda r: [rand(r, 8, lo=0.5, hi=5)], lambda L, x: L.lgamma(x) + L.digamma(x)),
    "polygamma": (lambda r: [rand(r, 8, lo=0.5, hi=5)], lambda L, x: L.polygamma(1, x)),
    "elu": (lambda r: [rand(r, 4, 8)], lambda L, x: L.nn.functional.elu(x, alpha=0.7)),
    "leaky_relu": (lambda r: [rand(r, 4, 8)], lambda L, x: L.nn.functional.leaky_relu(x, 0.2)),
    "hardtanh": (lambda r: [rand(r, 4, 8)], lambda L, x: L.nn.functional.hardtanh(x, -0.5, 0.75)),
    "hardswish_hardsigmoid": (lambda r: [rand(r, 4, 8) * 4],
                              lambda L, x: L.nn.functional.hardswish(x) * L.nn.functional.hardsigmoid(x)),
    "gelu_tanh": (lambda r: [rand(r, 30)], lambda L, x: L.nn.functional.gelu(x, approximate="tanh")),
    "softplus": (lambda r: [rand(r, 30) * 5],
                 lambda L, x: L.nn.functional.softplus(x, beta=2.0, threshold=3.0)),
    "nan_to_num": (lambda r: [rand(r, 10)], lambda L, x: L.nan_to_num(L.log(x), nan=0.5, neginf=-9.0)),
    "add_alpha": (lambda r: [rand(r, 3, 5), rand(r, 5)], lambda L, a, b: L.add(a, b, alpha=2.5)),
    "sub_mul_div": (lambda r: [rand(r, 3, 5), rand(r, 3, 5, lo=0.5)],
                    lambda L, a, b: (a - b) * a / b),
    "div_floor": (lambda r: [rand(r, 16) * 9, rand(r, 16, lo=0.5)],
                  lambda L, a, b: L.div(a, b, rounding_mode="floor")),
    "pow": (lambda r: [rand(r, 16, lo=0.2), rand(r, 16)], lambda L, a, b: L.pow(a, b) + L.pow(a, 3.0)),
    "binary_math": (lambda r: [rand(r, 24), rand(r, 24, lo=0.3)],
                    lambda L, a, b: L.atan2(a, b) + L.hypot(a, b) + L.fmod(a, b) + L.remainder(a, b)
                    + L.maximum(a, b) + L.logaddexp(a, b) + L.xlogy(b, b) + L.copysign(b, a)),
    "compare": (lambda r: [rand(r, 5, 6), rand(r, 6)],
                lambda L, a, b: L.logical_and(a < b, a.ge(0.0)) | L.eq(a, b)),
    "lerp": (lambda r: [rand(r, 10), rand(r, 10), rand(r, 10, lo=0, hi=1)],
             lambda L, a, b, w: L.lerp(a, b, 0.3) + L.lerp(a, b, w)),
    "addcmul_addcdiv": (lambda r: [rand(r, 10), rand(r, 10), rand(r, 10, lo=0.5)],
                        lambda L, a, b, c: L.addcmul(a, b, c, value=0.5) + L.addcdiv(a, b, c, value=2)),
    "clamp": (lambda r: [rand(r, 20), rand(r, 20, lo=-1, hi=0)],
              lambda L, x, lo: L.clamp(x, -0.5, 0.5) + L.clamp(x, min=lo)),
    "sum_mean_dims": (lambda r: [rand(r, 3, 4, 5)],
                      lambda L, x: L.sum(x, (0, 2), keepdim=True) + L.mean(x, (0, 2), keepdim=True)),
    "amax_amin": (lambda r: [rand(r, 3, 4, 5)], lambda L, x: L.amax(x, 1) - L.amin(x, (1,))),
    "mm_bmm_addmm": (lambda r: [rand(r, 4, 6), rand(r, 6, 3), rand(r, 2, 4, 6), rand(r, 3)],
                     lambda L, a, b, c, bias: L.mm(a, b) + L.bmm(c, b.expand(2, 6, 3)).sum(0)
                     + L.addmm(bias, a, b, beta=0.5, alpha=2.0)),
    "gather_index_select": (lambda r: [rand(r, 5, 6), ints(r, 6, 5, 3), ints(r, 5, 4)],
                            lambda L, x, i, j: L.gather(x, 1, i).sum(1) + L.index_select(x, 0, j).sum(0)[:5]),
    "scatter": (lambda r: [rand(r, 5, 6), rand(r, 5, 3), ints(r, 6, 5, 3)],
                lambda L, x, s, i: L.scatter(x, 1, i, s) + L.scatter(x, 1, i, 0.5)
                + L.scatter_add(x, 1, i, s) + L.scatter_reduce(x, 1, i, s, "amax")),
    "masked_fill": (lambda r: [rand(r, 4, 5), rand(r, 4, 5)],
                    lambda L, x, m: x.masked_fill(m > 0, 2.0) + x.masked_fill(m < 0, L.tensor(-3.0))),
    "index_put": (lambda r: [rand(r, 6, 4), rand(r, 3, 4), ints(r, 6, 3)],
                  lambda L, x, v, i: L.index_put(x, (i,), v, accumulate=True)),
    "cat": (lambda r: [rand(r, 2, 3), rand(r, 4, 3)], lambda L, a, b: L.cat([a, b.relu(), a], 0)),
}


def to_torch(arrays):
    return [torch.from_numpy(a.copy()) for a in arrays]


def to_retorch(arrays):
    return [retorch.from_numpy(a.copy()) for a in arrays]


@pytest.mark.parametrize("name", sorted(CASES))
def test_replay_matches_torch_on_new_inputs(name):
    make, program = CASES[name]
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    first = make(rng)
    inputs = to_retorch(first)
    out = {}
    graph = retorch.runtime.capture(lambda: out.update(y=program(retorch, *inputs)))
    assert len(graph) >= 1
    ptr = out["y"].data_ptr()
    np.testing.assert_allclose(out["y"].numpy(), program(torch, *to_torch(first)).numpy(),
                               rtol=1e-5, atol=1e-5)
    for _ in range(2):  # new values in the captured input buffers, then replay
        new = make(rng)
        for k, arr in enumerate(new):
            if arr.dtype == F32:
                inputs[k].copy_(retorch.from_numpy(arr))
            else:
                new[k] = inputs[k].numpy()  # index inputs keep their captured values
        graph.replay()
        want = program(torch, *to_torch(new)).numpy()
        assert out["y"].data_ptr() == ptr
        np.testing.assert_allclose(out["y"].numpy(), want, rtol=1e-5, atol=1e-5)


def test_replay_of_an_op_without_an_out_overload_writes_its_captured_buffer():
    # relu has no out= overload; its direct kernel still writes the captured result itself.
    x = retorch.randn(64)
    out = {}
    graph = retorch.runtime.capture(lambda: out.update(y=x.relu()))
    ptr = out["y"].data_ptr()
    x.copy_(retorch.randn(64))
    graph.replay()
    assert out["y"].data_ptr() == ptr
    np.testing.assert_array_equal(out["y"].numpy(), np.maximum(x.numpy(), 0))


def test_records_and_errors():
    a, b = retorch.randn(8, 8), retorch.randn(8, 8)
    graph = retorch.runtime.capture(lambda: (a @ b + a).relu())
    names = [r["name"] for r in graph.records()]
    assert names == ["cpu::matmul", "cpu::add", "cpu::relu"]
    assert graph.records()[0]["shapes"] == [[8, 8], [8, 8]]
    assert graph.records()[0]["device"] == "cpu"
    with pytest.raises(TypeError, match="expected a callable"):
        retorch.runtime.capture(3)

    def nested():
        retorch.runtime.capture(lambda: None)

    with pytest.raises(RuntimeError, match="already capturing"):
        retorch.runtime.capture(nested)
    retorch.runtime.capture(lambda: a + b)  # the failed capture left the thread able to capture
