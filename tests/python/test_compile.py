"""retorch.compile against torch: compiled functions and modules give torch's values and
gradients (pointwise chains, broadcasting, transposed inputs, externs in between), one generated
kernel per fused chain, guards recompile only for new signatures, and the decorator form."""
import re

import numpy as np
import pytest
import torch

import retorch


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RETORCH_CACHE_DIR", str(tmp_path / "cache"))


def both(arrays):
    return ([retorch.from_numpy(a.copy()) for a in arrays],
            [torch.from_numpy(a.copy()) for a in arrays])


def close(r, t, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


def chain(lib):
    def f(a, b):
        y = (a * 2 + 1).tanh() * lib.sigmoid(b) + a.relu()
        return y, lib.where(y > 0.5, y, (a - b).exp())
    return f


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["same", "broadcast", "transposed"])
def test_values_match_torch(dtype, layout):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((48, 33)).astype(dtype)
    b = rng.standard_normal((33,) if layout == "broadcast" else (48, 33)).astype(dtype)
    (ra, rb), (ta, tb) = both([a, b])
    if layout == "transposed":
        (ra, rb), (ta, tb) = both([np.ascontiguousarray(a.T), b])
        ra, ta = ra.t(), ta.t()
    f = retorch.compile(chain(retorch))
    got = f(ra, rb)
    want = chain(torch)(ta, tb)
    for g, w in zip(got, want):
        close(g, w)
    assert len(f.kernel_names) >= 1
    assert "#pragma omp simd" in f.source


def test_one_kernel_named_after_its_ops():
    f = retorch.compile(lambda a: (a * 2 + 1).tanh())
    a = np.linspace(-5, 5, 1001, dtype=np.float32)
    close(f(retorch.from_numpy(a)), (torch.from_numpy(a) * 2 + 1).tanh())
    assert f.kernel_names == ["cpp_fused_add_mul_tanh_0"]
    assert "aten::tanh" in f.source  # the nodes it came from, as a comment


def test_externs_between_kernels_and_gradients():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((16, 8)).astype(np.float32), rng.standard_normal((8, 4)).astype(np.float32)
    (rx, rw), (tx, tw) = both([x, w])
    rw.requires_grad_(True)
    tw.requires_grad_(True)

    def f(lib):
        return lambda x, w: (lib.mm(x.tanh(), w) * 0.5 + 1).relu().sum()
    cf = retorch.compile(f(retorch))
    out = cf(rx, rw)
    ref = f(torch)(tx, tw)
    close(out, ref)
    out.backward()
    ref.backward()
    close(rw.grad, tw.grad)


def test_module_and_decorator():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(10, 12), torch.nn.GELU(), torch.nn.Linear(12, 3))
    rm = retorch.nn.Sequential(retorch.nn.Linear(10, 12), retorch.nn.GELU(), retorch.nn.Linear(12, 3))
    rm.load_state_dict({k: retorch.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    x = np.random.default_rng(2).standard_normal((5, 10)).astype(np.float32)
    cm = retorch.compile(rm)
    with retorch.no_grad():
        close(cm(retorch.from_numpy(x)), tm(torch.from_numpy(x)))

    @retorch.compile
    def g(a):
        return retorch.nn.functional.silu(a) * a

    @retorch.compile(max_fusion_size=2)
    def h(a):
        return (a + 1).exp().neg()

    ra, ta = both([x])
    close(g(ra[0]), torch.nn.functional.silu(ta[0]) * ta[0])
    close(h(ra[0]), (ta[0] + 1).exp().neg())
    assert len(h.kernel_names) == 2  # three ops, at most two per kernel


def test_guards_recompile_for_new_signatures_only():
    f = retorch.compile(lambda a: a.sin() + 1)
    for shape in [(4, 4), (4, 4), (3,), (4, 4)]:
        a = retorch.randn(*shape)
        close(f(a), a.sin() + 1)
    assert f.num_compiled == 2
    f(retorch.randn(4, 4, dtype=retorch.float64))
    assert f.num_compiled == 3


def test_bad_input_is_a_clear_error():
    f = retorch.compile(lambda a: a + 1)
    with pytest.raises(TypeError, match="retorch.compile: input 0 is a int"):
        f(3)
    with pytest.raises(TypeError, match="not callable"):
        retorch.compile(5)


def test_integer_and_bool_values_match_torch():
    a = np.arange(-6, 6, dtype=np.int64).reshape(3, 4)
    (ra,), (ta,) = both([a])

    def f(x):
        return (x * 3 + 1) > 0.5, (x * 2).abs() - x, x / 4, (x > 0) & (x < 4)
    cf = retorch.compile(f)
    for g, w in zip(cf(ra), f(ta)):
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        np.testing.assert_array_equal(g.numpy(), w.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reductions_with_prologue_and_epilogue_match_torch(dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 17, 12)).astype(dtype)
    x[0, 1, 2] = np.nan
    (rx,), (tx,) = both([x])

    def f(x):
        return ((x * x).sum(-1) / 12 + 1).sqrt(), x.exp().mean((1, 2), keepdim=True), \
            x.amax(-1) - x.amax(-1).abs()
    cf = retorch.compile(f)
    for g, w in zip(cf(rx), f(tx)):
        close(g, w, rtol=1e-5, atol=1e-5)
    assert any("sum" in k for k in cf.kernel_names)
    assert "reduction(+:acc0)" in cf.source


def test_build_failure_runs_eagerly(monkeypatch, capfd):
    monkeypatch.setenv("RETORCH_CXX", "/nonexistent/c++")
    f = retorch.compile(lambda a, b: ((a + b).exp(), a * b))
    a, b = retorch.randn(5), retorch.randn(5)
    got = f(a, b)
    close(got[0], (a + b).exp())
    close(got[1], a * b)
    assert f.eager_calls == 1 and f.num_compiled == 0
    assert "running eagerly" in capfd.readouterr().err


def test_empty_reductions_behave_like_eager():
    f = retorch.compile(lambda x: (x.sum(-1) + 1, x.mean(-1)))
    x = retorch.zeros(3, 0)
    s, m = f(x)
    close(s, torch.zeros(3, 0).sum(-1) + 1)
    assert np.isnan(m.numpy()).all()
    g = retorch.compile(lambda x: x.amax(-1) * 2)
    with pytest.raises(IndexError, match="amax"):  # like torch: the eager error, not a value
        g(x)


def row_ops(lib, F):
    def f(x, w, b):
        n = x.shape[-1]
        e = (x - x.amax(-1, keepdim=True)).exp()
        rms = x * ((x * x).mean(-1, keepdim=True) + 1e-6).rsqrt() * w
        return (F.softmax(x, -1), F.log_softmax(x, dim=-1), F.layer_norm(x, [n], w, b),
                F.layer_norm(x, [x.shape[-2], n]), x.var(-1), x.var(-1, unbiased=False, keepdim=True),
                e / e.sum(-1, keepdim=True), rms, F.gelu(F.layer_norm(x, [n], w, b)) + x * 0.5)
    return f


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("target", ["cpu", "cuda_emulated"])  # see test_compile_cuda.py
def test_row_ops_match_torch(dtype, layout, target):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((6, 20, 96)) * 3 + 1).astype(dtype)
    w, b = rng.standard_normal(96).astype(dtype), rng.standard_normal(96).astype(dtype)
    (rx, rw, rb), (tx, tw, tb) = both([x, w, b])
    if layout == "transposed":  # rows read with a stride
        (rx,), (tx,) = both([np.ascontiguousarray(x.transpose(0, 2, 1))])
        rx, tx = rx.transpose(1, 2), tx.transpose(1, 2)
    cf = retorch.compile(row_ops(retorch, retorch.nn.functional), target=target)
    got = cf(rx, rw, rb)
    want = row_ops(torch, torch.nn.functional)(tx, tw, tb)
    for g, w_ in zip(got, want):
        assert tuple(g.shape) == tuple(w_.shape)
        close(g, w_, rtol=2e-5, atol=2e-5)
    # Rows of the last dim share kernels; the two-dim layer_norm has its own.
    assert len(cf.kernel_names) <= 3
    if target == "cpu":
        assert "reduction(max:acc0)" in cf.source
        # Note [Next-row prefetch]: the last-dim kernel prefetches x's next row where rows are
        # row-major (not the transposed ones; never w and b, which every row shares).
        forward = "".join(k for k in cf.source.split('extern "C" void ')[1:]
                          if not k.split("(")[0].endswith("_backward"))
        prefetched = re.findall(r"__builtin_prefetch\(&in(\d+)\[b\d+ \+ (\d+) \+ p\]\)", forward)
        rows_of_96 = {i for i, n in prefetched if n == "96"}
        assert rows_of_96 == ({"0"} if layout == "contiguous" else set())
    else:  # a thread per row, its passes plain loops
        assert "blockIdx.x" in cf.source and "#pragma omp simd" not in cf.cuda_source


def test_layer_norm_gelu_residual_is_one_kernel():
    rng = np.random.default_rng(5)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in [(64, 256), (256,), (256,)])
    (rx, rw, rb), (tx, tw, tb) = both([x, w, b])

    def f(lib, F):
        return lambda x, w, b: F.gelu(F.layer_norm(x, [256], w, b)) + x
    cf = retorch.compile(f(retorch, retorch.nn.functional))
    close(cf(rx, rw, rb), f(torch, torch.nn.functional)(tx, tw, tb), rtol=1e-5, atol=1e-5)
    assert cf.kernel_names == ["cpp_fused_add_gelu_layer_norm_0"]
    fwd = cf.source.split("void cpp_fused_add_gelu_layer_norm_0(")[1].split('extern "C"')[0]
    bwd = cf.source.split("void cpp_fused_add_gelu_layer_norm_0_backward(")[1]
    assert fwd.count("reduction(+:") == 2  # the mean, then the centered squares
    # The backward recomputes both, then reduces the adjoints of rstd and of the mean.
    assert bwd.count("reduction(+:") == 4
    assert "rows of the last 1 dims" in cf.loop_ir


def test_arithmetic_rows_prefetch_through_the_last_pass():
    # Note [Next-row prefetch]: a row with a math call per element (GELU's erf) runs its last
    # pass in chunks that prefetch the next row; rows of 1000 floats end on a partial chunk.
    rng = np.random.default_rng(15)
    x, w, b, gy = (rng.standard_normal(s).astype(np.float32)
                   for s in [(24, 1000), (1000,), (1000,), (24, 1000)])
    (rx, rw, rb, rgy), (tx, tw, tb, tgy) = both([x, w, b, gy])
    for t in (rx, rw, rb, tx, tw, tb):
        t.requires_grad_()

    def f(F):
        return lambda x, w, b: F.gelu(F.layer_norm(x, [1000], w, b)) + x
    cf = retorch.compile(f(retorch.nn.functional))
    got, want = cf(rx, rw, rb), f(torch.nn.functional)(tx, tw, tb)
    got.backward(rgy)
    want.backward(tgy)
    close_values_and_grads([rx, rw, rb], [tx, tw, tb], [got], [want], 2e-5)
    for name in ("cpp_fused_add_gelu_layer_norm_0(", "cpp_fused_add_gelu_layer_norm_0_backward("):
        body = cf.source.split("void " + name)[1].split('extern "C"')[0]
        chunks = body.index("for (int64_t c = 0; c < 1000; c += 256)")
        assert body.rindex("reduction(+:") < chunks  # after every sum: in the last pass
        assert "p < (c + 256 < 1000 ? c + 256 : 1000)" in body[chunks:]
        assert "i < (c + 256 < 1000 ? c + 256 : 1000)" in body[chunks:]
    # A light row (no math call per element) prefetches before its first pass.
    rms = retorch.compile(lambda x: x * ((x * x).mean(-1, keepdim=True) + 1e-6).rsqrt())
    close(rms(rx.detach()), tx.detach() * ((tx.detach() ** 2).mean(-1, keepdim=True) + 1e-6).rsqrt())
    assert "c += 256" not in rms.source
    assert rms.source.index("__builtin_prefetch") < rms.source.index("reduction(+:")


def test_softmax_special_rows_and_bfloat16_match_torch():
    x = np.random.default_rng(6).standard_normal((5, 40)).astype(np.float32)
    x[1, 3] = np.nan
    x[2, :] = -np.inf
    x[3, :7] = np.inf
    (rx,), (tx,) = both([x])
    sm = retorch.compile(lambda x: (retorch.softmax(x, -1), retorch.log_softmax(x, -1)))
    for g, w in zip(sm(rx), (torch.softmax(tx, -1), torch.log_softmax(tx, -1))):
        close(g, w)  # NaN where torch has NaN
    y = x[[0, 4]]
    (ry,), (ty,) = both([y])
    h = retorch.compile(lambda x: (retorch.softmax(x, -1), x.var(-1)))
    got = h(ry.to(retorch.bfloat16))
    want = (torch.softmax(ty.to(torch.bfloat16), -1), ty.to(torch.bfloat16).var(-1))
    for g, w in zip(got, want):
        assert g.dtype == retorch.bfloat16
        close(g.to(retorch.float32), w.to(torch.float32), rtol=1e-2, atol=1e-2)


def test_softmax_exp_of_shifted_values_matches_torch_to_underflow():
    # softmax's row kernel takes exp of x - max (always <= 0): rt_exp_shifted, without the
    # overflow check. Rows spread from 0 down past exp's underflow at -87.34 relative to the max.
    rng = np.random.default_rng(4)
    x = np.stack([np.concatenate([[0.0], rng.uniform(-100.0, 0.0, 63)]),
                  np.concatenate([[5.0], 5.0 - np.linspace(80.0, 90.0, 63)]),
                  rng.standard_normal(64) * 3]).astype(np.float32)
    (rx,), (tx,) = both([x])
    f = retorch.compile(lambda v: (retorch.softmax(v, -1), retorch.log_softmax(v, -1)))
    got = f(rx)
    assert "rt_exp_shifted(" in f.source
    np.testing.assert_allclose(got[0].numpy(), torch.softmax(tx, -1).numpy(), rtol=4e-6,
                               atol=1e-30)
    close(got[1], torch.log_softmax(tx, -1))


def test_generated_math_matches_torch_across_the_float_range():
    # The prelude's own exp, tanh and GELU (Notes [Vector exp], [Rational tanh]) over every
    # range that takes a different path: tiny, around the polynomial switch points, near exp's
    # overflow (exp(88.5) is finite) and underflow, past tanh's and erf's saturation, specials.
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-100, 100, 4000), rng.uniform(-10, 10, 4000),
                        rng.standard_normal(4000) * 1e-3, np.linspace(86.0, 88.72, 500),
                        [88.5, 88.72, 88.73, 89.0, 1e30, -87.3, -87.4, -104.0, -1e30, 0.0, -0.0,
                         9.0, 9.0109, 9.0110, -9.0110, 3.9192, 3.9193, np.inf, -np.inf, np.nan]])
    x = x.astype(np.float32)
    (rx,), (tx,) = both([x])
    f = retorch.compile(lambda v: (v.exp(), v.tanh(), retorch.nn.functional.gelu(v),
                                   retorch.sigmoid(v)))
    want = (tx.exp(), tx.tanh(), torch.nn.functional.gelu(tx), torch.sigmoid(tx))
    # exp flushes results below ~1.8e-38 to 0; GELU's 1 + erf is good to ~4e-7 absolute, so
    # where gelu(x) nears 0 for negative x only an absolute tolerance holds.
    for name, g, w in zip(("exp", "tanh", "gelu", "sigmoid"), f(rx), want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=4e-6,
                                   atol=2e-6 if name == "gelu" else 1e-30, equal_nan=True,
                                   err_msg=name)


def row_grad_ops(lib, F):
    def g(x, w, b, z):
        n = x.shape[-1]
        e = (x - x.amax(-1, keepdim=True)).exp()
        rms = x * ((x * x).mean(-1, keepdim=True) + 1e-6).rsqrt() * w
        return (F.softmax(x, -1) * z, F.log_softmax(x, dim=-1),
                F.gelu(F.layer_norm(x, [n], w, b)) + x, x.var(-1), e / e.sum(-1, keepdim=True),
                rms, x.amax(-1) * 2, x.sum(-1).tanh())
    return g


def compile_both(make, arrs):
    """make(lib, F) compiled by retorch and run eagerly by torch on leaf copies of arrs."""
    rs = [retorch.from_numpy(a.copy()).requires_grad_() for a in arrs]
    ts = [torch.from_numpy(a.copy()).requires_grad_() for a in arrs]
    cf = retorch.compile(make(retorch, retorch.nn.functional))
    return cf, rs, ts, cf(*rs), make(torch, torch.nn.functional)(*ts)


def close_values_and_grads(rs, ts, got, want, tol):
    for g, w in zip(got, want):
        close(g, w, rtol=tol, atol=tol)
    for r, t in zip(rs, ts):
        close(r.grad, t.grad, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_op_gradients_match_torch(dtype):
    rng = np.random.default_rng(7)
    arrs = [rng.standard_normal(s).astype(dtype) for s in [(6, 20, 24), (24,), (24,), (6, 20, 24)]]
    arrs[0][0, 0, :3] = 5.0  # a row whose max is tied: amax splits its gradient
    cf, rs, ts, got, want = compile_both(row_grad_ops, arrs)
    assert cf.kernel_names == ["cpp_fused_add_amax_div_exp_gelu_layer_norm_0"]
    assert all(g.grad_fn.name() == "CompiledKernelBackward" for g in got)
    ws = [rng.standard_normal(tuple(o.shape)).astype(dtype) for o in want]
    sum((o * torch.from_numpy(w)).sum() for o, w in zip(want, ws)).backward()
    sum((o * retorch.from_numpy(w.copy())).sum() for o, w in zip(got, ws)).backward()
    close_values_and_grads(rs, ts, got, want, 1e-9 if dtype == np.float64 else 3e-4)


@pytest.mark.parametrize("wshape", [(256,), (1, 256)])
def test_broadcast_weight_gradients_are_summed_in_the_kernel(wshape):
    """Note [Column gradients in the kernel]: the backward row kernel sums a broadcast weight's
    and bias's gradients over the rows itself, in per-thread rows (4096 rows: both threads),
    and returns them in the weight's shape; values and gradients match torch."""
    rng = np.random.default_rng(11)
    arrs = [rng.standard_normal(s).astype(np.float32) for s in [(4096, 256), wshape, wshape]]

    def make(lib, F):
        return lambda x, w, b: F.gelu(F.layer_norm(x, [256], w.reshape(256), b.reshape(256))) + x
    cf, rs, ts, got, want = compile_both(make, arrs)
    bwd = cf.source.split("void cpp_fused_add_gelu_layer_norm_0_backward(")[1]
    assert bwd.count("col_part[") == 2 and "omp_get_thread_num" in bwd
    # gelu's derivative is computed once per element, in the first pass that needs it
    assert bwd.count("rt_gelu_grad(") == 1
    g = rng.standard_normal((4096, 256)).astype(np.float32)
    want.backward(torch.from_numpy(g))
    got.backward(retorch.from_numpy(g.copy()))
    assert tuple(rs[1].grad.shape) == wshape and tuple(rs[2].grad.shape) == wshape
    close_values_and_grads(rs, ts, [got], [want], 2e-3)


def test_benchmark_harness():
    calls = []
    f = retorch.compile(lambda a: (a * 2 + 1).tanh())
    a = retorch.randn(1000)
    r = retorch.compiler.benchmark(lambda: calls.append(f(a)), warmup_ms=2, rep_ms=5)
    assert r.reps >= 1 and r.warmup >= 1
    assert len(calls) == 1 + 5 + r.warmup + r.reps  # first call, estimate, warm-up, timed
    assert 0 < r.min <= r.p20 <= r.median <= r.p80
    with pytest.raises(TypeError, match="callable"):
        retorch.compiler.benchmark(3)
    with pytest.raises(ValueError, match="rep_ms"):
        retorch.compiler.benchmark(lambda: None, rep_ms=0)


def grad_chain(lib, F):
    def g(a, b, c):
        y = (a * 2 + 1).tanh() * lib.sigmoid(b) + F.gelu(a) - F.silu(c) / (b.abs() + 1)
        z = lib.where(y > 0.1, y, (a - b).exp()) + lib.clamp(a, -0.5, 0.5) * F.leaky_relu(b, 0.2)
        w = (z * z + 1).sqrt().relu() + y.pow(2) + F.gelu(c, approximate="tanh") * lib.rsqrt(b * b + 1)
        return y, w, F.hardtanh(a * 3) - F.threshold(b, 0.1, 2.0), lib.maximum(a.t(), c.t() * 2)
    return g


def grad_roots(lib):
    return lambda outs: outs[0].sum() * 2 + (outs[1] * outs[1]).sum() + outs[2].sum() + \
        (outs[3] * outs[3]).sum()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_backward_matches_torch(dtype):
    rng = np.random.default_rng(8)
    arrs = [rng.standard_normal(s).astype(dtype) for s in [(40, 33), (33,), (40, 1)]]
    cf, rs, ts, got, want = compile_both(grad_chain, arrs)
    # The kernels with derivative rules differentiate through generated backward kernels; the
    # one with maximum (no rule) runs its nodes eagerly.
    assert got[0].grad_fn.name() == "CompiledKernelBackward"
    assert got[3].grad_fn.name() == "MaximumBackward0"
    assert "_backward(void* const* args)" in cf.source
    grad_roots(retorch)(got).backward()
    grad_roots(torch)(want).backward()
    close_values_and_grads(rs, ts, got, want, 1e-5 if dtype == np.float64 else 2e-4)


def test_compiled_backward_errors_like_torch():
    a = retorch.randn(8, 5, requires_grad=True)
    cf = retorch.compile(lambda x: (x * 2).tanh())
    y = cf(a)
    assert y.grad_fn.name() == "CompiledKernelBackward"
    (g,) = retorch.autograd.grad(y.sum(), a, create_graph=False, retain_graph=True)
    close(g, 2 * (1 - (a * 2).tanh() ** 2))
    y.sum().backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="create_graph"):
        retorch.autograd.grad(cf(a).sum(), a, create_graph=True)


def test_gradient_outlives_the_compiled_function():
    import gc
    a = retorch.randn(6, 7, requires_grad=True)
    z = retorch.compile(lambda x: (x * 3).sin())(a)  # the compiled function is dropped here
    gc.collect()
    assert z.grad_fn.name() == "CompiledKernelBackward"
    (g,) = retorch.autograd.grad(z.sum(), a)  # its node keeps the kernel's code loaded
    close(g, 3 * (a * 3).cos(), rtol=1e-5, atol=1e-5)
