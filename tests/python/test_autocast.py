"""torch.autocast against PyTorch's: on the cpu, each listed op (and some unlisted ones) under
retorch.autocast("cpu") against torch.autocast("cpu") — result dtype, values and gradients of
float32 leaves; on cuda (the fallback here, the device where there is one) the policies of
PyTorch's CUDA op reference; the region's state functions, custom_fwd/custom_bwd, and
GradScaler."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retorch
import retorch.nn.functional as RF

from oracle import dtype_name


def spd(n, seed):
    a = np.random.default_rng(seed).standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def rnd(*shape, seed=0, positive=False, unit=False):
    x = np.random.default_rng(seed).standard_normal(shape)
    if positive:
        x = np.abs(x) + 0.5
    if unit:
        x = 1 / (1 + np.exp(-x))
    return x


def sign(*shape, seed=0):
    return np.sign(rnd(*shape, seed=seed)) + (rnd(*shape, seed=seed) == 0)


# name -> (call(lib, F, *tensors), float inputs, integer inputs appended as int64)
CASES = {
    # lower_precision_fp on the cpu
    "mm": (lambda m, F, a, b: m.mm(a, b), [rnd(4, 6), rnd(6, 5, seed=1)], []),
    "matmul": (lambda m, F, a, b: a @ b, [rnd(2, 4, 6), rnd(6, 5, seed=1)], []),
    "bmm": (lambda m, F, a, b: m.bmm(a, b), [rnd(2, 3, 4), rnd(2, 4, 5, seed=1)], []),
    "addmm": (lambda m, F, c, a, b: m.addmm(c, a, b),
              [rnd(4, 5, seed=2), rnd(4, 6), rnd(6, 5, seed=1)], []),
    "baddbmm": (lambda m, F, c, a, b: m.baddbmm(c, a, b, beta=0.5),
                [rnd(2, 3, 5, seed=2), rnd(2, 3, 4), rnd(2, 4, 5, seed=1)], []),
    "addbmm": (lambda m, F, c, a, b: m.addbmm(c, a, b),
               [rnd(3, 5, seed=2), rnd(2, 3, 4), rnd(2, 4, 5, seed=1)], []),
    "linear": (lambda m, F, x, w, b: F.linear(x, w, b),
               [rnd(3, 6), rnd(5, 6, seed=1), rnd(5, seed=2)], []),
    "conv1d": (lambda m, F, x, w, b: F.conv1d(x, w, b, padding=1),
               [rnd(2, 3, 7), rnd(4, 3, 3, seed=1), rnd(4, seed=2)], []),
    "conv2d": (lambda m, F, x, w: F.conv2d(x, w, stride=2),
               [rnd(2, 3, 6, 6), rnd(4, 3, 3, 3, seed=1)], []),
    "conv2d_same": (lambda m, F, x, w: F.conv2d(x, w, padding="same"),
                    [rnd(1, 2, 5, 5), rnd(3, 2, 3, 3, seed=1)], []),
    # composites of listed ops: their matmuls are cast
    "einsum": (lambda m, F, a, b: m.einsum("ij,jk->ik", a, b), [rnd(3, 4), rnd(4, 5, seed=1)], []),
    "tensordot": (lambda m, F, a, b: m.tensordot(a, b, 1), [rnd(3, 4), rnd(4, 5, seed=1)], []),
    # fp32 on the cpu
    "conv_transpose1d": (lambda m, F, x, w: F.conv_transpose1d(x, w),
                         [rnd(1, 2, 5), rnd(2, 3, 3, seed=1)], []),
    "conv_transpose2d": (lambda m, F, x, w: F.conv_transpose2d(x, w, stride=2),
                         [rnd(1, 2, 4, 4), rnd(2, 3, 3, 3, seed=1)], []),
    "mse_loss": (lambda m, F, a, b: F.mse_loss(a, b), [rnd(3, 4), rnd(3, 4, seed=1)], []),
    "l1_loss": (lambda m, F, a, b: F.l1_loss(a, b), [rnd(3, 4), rnd(3, 4, seed=1)], []),
    "smooth_l1_loss": (lambda m, F, a, b: F.smooth_l1_loss(a, b), [rnd(3, 4), rnd(3, 4, seed=1)],
                       []),
    "huber_loss": (lambda m, F, a, b: F.huber_loss(a, b, delta=0.5),
                   [rnd(3, 4), rnd(3, 4, seed=1)], []),
    "kl_div": (lambda m, F, a, b: F.kl_div(a, b, reduction="batchmean"),
               [rnd(3, 4), rnd(3, 4, seed=1, positive=True)], []),
    "nll_loss": (lambda m, F, a, t: F.nll_loss(a, t), [rnd(3, 4)], [[0, 3, 1]]),
    "cross_entropy": (lambda m, F, a, t: F.cross_entropy(a, t), [rnd(3, 4)], [[0, 3, 1]]),
    "bce_with_logits": (lambda m, F, a, b: F.binary_cross_entropy_with_logits(a, b),
                        [rnd(3, 4), rnd(3, 4, seed=1, unit=True)], []),
    "binary_cross_entropy": (lambda m, F, a, b: F.binary_cross_entropy(a, b),
                             [rnd(3, 4, unit=True), rnd(3, 4, seed=1, unit=True)], []),
    "soft_margin_loss": (lambda m, F, a, b: F.soft_margin_loss(a, b), [rnd(3, 4), sign(3, 4)],
                         []),
    "margin_ranking_loss": (lambda m, F, a, b, y: F.margin_ranking_loss(a, b, y),
                            [rnd(5), rnd(5, seed=1), sign(5, seed=2)], []),
    "hinge_embedding_loss": (lambda m, F, a, y: F.hinge_embedding_loss(a, y),
                             [rnd(3, 4), sign(3, 4, seed=1)], []),
    "poisson_nll_loss": (lambda m, F, a, b: F.poisson_nll_loss(a, b),
                         [rnd(3, 4), rnd(3, 4, seed=1, positive=True)], []),
    "cosine_embedding_loss": (lambda m, F, a, b, y: F.cosine_embedding_loss(a, b, y),
                              [rnd(3, 4), rnd(3, 4, seed=1), sign(3, seed=2)], []),
    "triplet_margin_loss": (lambda m, F, a, p, n: F.triplet_margin_loss(a, p, n),
                            [rnd(3, 4), rnd(3, 4, seed=1), rnd(3, 4, seed=2)], []),
    "multi_margin_loss": (lambda m, F, a, t: F.multi_margin_loss(a, t), [rnd(3, 4)], [[0, 3, 1]]),
    "cdist": (lambda m, F, a, b: m.cdist(a, b), [rnd(3, 4), rnd(2, 4, seed=1)], []),
    "prod": (lambda m, F, a: m.prod(a), [rnd(5, positive=True)], []),
    "prod_dim": (lambda m, F, a: m.prod(a, 1), [rnd(3, 4, positive=True)], []),
    "trace": (lambda m, F, a: m.trace(a), [rnd(4, 4)], []),
    "inverse": (lambda m, F, a: m.inverse(a), [spd(3, 0)], []),
    "linalg_inv": (lambda m, F, a: m.linalg.inv(a), [spd(3, 1)], []),
    "linalg_solve": (lambda m, F, a, b: m.linalg.solve(a, b), [spd(3, 2), rnd(3, 2)], []),
    "linalg_cholesky": (lambda m, F, a: m.linalg.cholesky(a), [spd(3, 3)], []),
    "linalg_eigvalsh": (lambda m, F, a: m.linalg.eigvalsh(a), [spd(3, 4)], []),
    "linalg_svdvals": (lambda m, F, a: m.linalg.svdvals(a), [spd(3, 5)], []),
    "linalg_matrix_norm": (lambda m, F, a: m.linalg.matrix_norm(a), [rnd(3, 3)], []),
    "reflection_pad2d": (lambda m, F, a: F.pad(a, (1, 1, 1, 1), mode="reflect"),
                         [rnd(1, 2, 4, 4)], []),
    "replication_pad1d": (lambda m, F, a: F.pad(a, (2, 1), mode="replicate"), [rnd(1, 2, 4)], []),
    # promote on the cpu (a float32 and a bfloat16 input run in float32)
    "cat": (lambda m, F, a, b: m.cat([a, b.to(m.bfloat16)]), [rnd(2, 3), rnd(1, 3, seed=1)], []),
    "stack": (lambda m, F, a, b: m.stack([a.to(m.bfloat16), b]), [rnd(2, 3), rnd(2, 3, seed=1)],
              []),
    "index_copy": (lambda m, F, a, b, i: m.index_copy(a.to(m.bfloat16), 0, i, b),
                   [rnd(3, 2), rnd(1, 2, seed=1)], [[2]]),
    # unlisted on the cpu: the inputs' dtype
    "add": (lambda m, F, a, b: a + b, [rnd(3), rnd(3, seed=1)], []),
    "exp": (lambda m, F, a: m.exp(a), [rnd(3)], []),
    "softmax": (lambda m, F, a: F.softmax(a, 1), [rnd(3, 4)], []),
    "layer_norm": (lambda m, F, a: F.layer_norm(a, (4,)), [rnd(3, 4)], []),
    "sum": (lambda m, F, a: m.sum(a), [rnd(3, 4)], []),
    "gelu": (lambda m, F, a: F.gelu(a), [rnd(3, 4)], []),
    "convolution": (lambda m, F, x, w: m.convolution(x, w, None, [1, 1], [0, 0], [1, 1], False,
                                                    [0, 0], 1),
                    [rnd(1, 2, 5, 5), rnd(3, 2, 3, 3, seed=1)], []),
}


def inputs(lib, case, dtype):
    _, floats, ints = CASES[case]
    ts = [lib.tensor(np.asarray(x)).to(dtype) for x in floats]
    return ts + [lib.tensor(np.asarray(i, dtype=np.int64)) for i in ints]


def run(lib, F, case, dtype_name_, grad=False):
    dtype = getattr(lib, dtype_name_)
    args = inputs(lib, case, dtype)
    if grad:
        for a in args:
            if a.dtype == lib.float32:
                a.requires_grad_(True)
    with lib.autocast("cpu"):
        out = CASES[case][0](lib, F, *args)
    return out, args


def close(r, t, dtype):
    r = np.asarray(r.detach().float().numpy(), dtype=np.float64)
    t = np.asarray(t.detach().float().numpy(), dtype=np.float64)
    # Both round the same bfloat16 inputs; their sums differ in order and accumulation width.
    tol = {"bfloat16": 3e-2, "float16": 4e-3}.get(dtype, 2e-5)
    np.testing.assert_allclose(r, t, rtol=tol, atol=tol * max(1.0, np.abs(t).max()))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_cpu_autocast_matches_torch(case, dtype):
    t, _ = run(torch, TF, case, dtype)
    r, _ = run(retorch, RF, case, dtype)
    assert dtype_name(r.dtype) == dtype_name(t.dtype), (case, r.dtype, t.dtype)
    close(r, t, dtype_name(t.dtype))


GRAD_CASES = ["mm", "linear", "conv2d", "addmm", "mse_loss", "cross_entropy", "cat", "einsum",
              "conv_transpose2d", "layer_norm"]


@pytest.mark.parametrize("case", GRAD_CASES)
def test_cpu_autocast_gradients_reach_float32_leaves_as_torch(case):
    t, targs = run(torch, TF, case, "float32", grad=True)
    r, rargs = run(retorch, RF, case, "float32", grad=True)
    t.float().square().sum().backward()
    r.float().square().sum().backward()
    for ta, ra in zip(targs, rargs):
        if ta.requires_grad:
            assert ra.grad is not None and ra.grad.dtype == retorch.float32
            close(ra.grad, ta.grad, dtype_name(t.dtype))


def test_autocast_region_state_nests_and_restores():
    a, b = retorch.randn(3, 4), retorch.randn(4, 5)
    assert not retorch.is_autocast_cpu_enabled()
    assert retorch.get_autocast_cpu_dtype() == retorch.bfloat16
    assert retorch.get_autocast_gpu_dtype() == retorch.float16
    with retorch.autocast("cpu"):
        assert retorch.is_autocast_cpu_enabled() and not retorch.is_autocast_enabled()
        assert retorch.mm(a, b).dtype == retorch.bfloat16
        with retorch.autocast("cpu", enabled=False):
            assert retorch.mm(a, b).dtype == retorch.float32
        assert retorch.mm(a, b).dtype == retorch.bfloat16
        with retorch.autocast("cpu", dtype=retorch.float16):
            assert retorch.get_autocast_dtype("cpu") == retorch.float16
            assert retorch.mm(a, b).dtype == retorch.float16
        assert retorch.get_autocast_dtype("cpu") == retorch.bfloat16
        # in-place, out= and explicit dtypes are not autocast (PyTorch's eligibility rules)
        out = retorch.empty(3, 5)
        assert retorch.mm(a, b, out=out).dtype == retorch.float32
        assert retorch.mm(a.double(), b.double()).dtype == retorch.float64
    assert not retorch.is_autocast_cpu_enabled()
    assert retorch.mm(a, b).dtype == retorch.float32

    @retorch.autocast("cpu")
    def f(x, y):
        return x @ y

    assert f(a, b).dtype == retorch.bfloat16 and not retorch.is_autocast_cpu_enabled()
    assert retorch.cpu.amp.autocast()(f)(a, b).dtype == retorch.bfloat16
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'mps'"):
        retorch.autocast("mps")
    with pytest.warns(UserWarning, match="not supported"):
        region = retorch.autocast("cpu", dtype=retorch.float64)
    with region:
        assert retorch.mm(a, b).dtype == retorch.float32


def test_autocast_caches_weight_casts_within_the_region():
    from retorch.profiler import profile
    x = retorch.randn(3, 4)
    w = retorch.randn(5, 4, requires_grad=True)

    def casts(cache_enabled):
        with profile() as p:
            with retorch.autocast("cpu", cache_enabled=cache_enabled):
                for _ in range(3):
                    y = RF.linear(x, w)
        return sum(e["name"] == "aten::_to_copy" for e in p.events()), y

    cached, y = casts(True)
    uncached, _ = casts(False)
    assert cached == 1 + 3 and uncached == 3 + 3  # the weight once, the input each call
    with retorch.autocast("cpu"):
        y1 = RF.linear(x, w)
        with retorch.no_grad():
            w.mul_(2)  # a changed weight is cast again
        y2 = RF.linear(x, w)
    np.testing.assert_allclose(y2.detach().float().numpy(), 2 * y1.detach().float().numpy(),
                               rtol=1e-2, atol=1e-2)


def test_autocast_model_trains_like_torch():
    """A Linear-ReLU-Linear classifier, 5 SGD steps under autocast: the same losses and weights
    as torch's to bfloat16 accuracy."""
    rng = np.random.default_rng(3)
    w1, b1 = rng.standard_normal((16, 8)) * 0.3, rng.standard_normal(16) * 0.1
    w2, b2 = rng.standard_normal((4, 16)) * 0.3, rng.standard_normal(4) * 0.1
    xs, ys = rng.standard_normal((5, 10, 8)), rng.integers(0, 4, (5, 10))

    def train(lib, F):
        ps = [lib.tensor(p).float().requires_grad_(True) for p in (w1, b1, w2, b2)]
        opt = lib.optim.SGD(ps, lr=0.1)
        losses = []
        for x, y in zip(xs, ys):
            with lib.autocast("cpu"):
                h = F.relu(F.linear(lib.tensor(x).float(), ps[0], ps[1]))
                logits = F.linear(h, ps[2], ps[3])
                loss = F.cross_entropy(logits, lib.tensor(y))
            assert dtype_name(logits.dtype) == "bfloat16" and dtype_name(loss.dtype) == "float32"
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.detach().numpy() for p in ps]

    tl, tp = train(torch, TF)
    rl, rp = train(retorch, RF)
    np.testing.assert_allclose(rl, tl, rtol=2e-2)
    for r, t in zip(rp, tp):
        np.testing.assert_allclose(r, t, rtol=2e-2, atol=2e-2)


# PyTorch's CUDA op reference: float16 ops, float32 ops, promoting ops.
CUDA_F16 = {
    "mm": lambda m, a, b: m.mm(a, b),
    "matmul": lambda m, a, b: a @ b,
    "linear": lambda m, a, b: m.nn.functional.linear(a, b.t()),
    "addmm": lambda m, a, b: m.addmm(a @ b, a, b),
    "einsum": lambda m, a, b: m.einsum("ij,jk->ik", a, b),
    "bmm": lambda m, a, b: m.bmm(a[None], b[None]),
    "conv2d": lambda m, a, b: m.nn.functional.conv2d(a[None, None], b[None, None]),
    "prelu": lambda m, a, b: m.nn.functional.prelu(a, b[0, :1]),
}
CUDA_F32 = {
    "exp": lambda m, a: m.exp(a),
    "log": lambda m, a: m.log(a.abs()),  # abs is exact in float16
    "pow": lambda m, a: m.pow(a, 2),
    "rsqrt": lambda m, a: m.rsqrt(a.abs()),
    "softplus": lambda m, a: m.nn.functional.softplus(a),
    "sum": lambda m, a: m.sum(a),
    "sum_dim": lambda m, a: m.sum(a, 1),
    "cumsum": lambda m, a: m.cumsum(a, 0),
    "prod": lambda m, a: m.prod(a),
    "softmax": lambda m, a: m.softmax(a, 1),
    "log_softmax": lambda m, a: m.nn.functional.log_softmax(a, 1),
    "layer_norm": lambda m, a: m.nn.functional.layer_norm(a, (a.shape[1],)),
    "group_norm": lambda m, a: m.nn.functional.group_norm(a[None], 2),
    "mse_loss": lambda m, a: m.nn.functional.mse_loss(a, a.flip(0)),
    "cross_entropy": lambda m, a: m.nn.functional.cross_entropy(
        a, m.zeros(a.shape[0], dtype=m.int64, device=a.device)),
    "logsumexp": lambda m, a: m.logsumexp(a, 1),
    "norm": lambda m, a: m.norm(a),
    "linalg_vector_norm": lambda m, a: m.linalg.vector_norm(a),
    "cosine_similarity": lambda m, a: m.nn.functional.cosine_similarity(a, a.flip(0)),
}
CUDA_PROMOTE = {
    "addcmul": lambda m, a, b: m.addcmul(a, a, b),
    "atan2": lambda m, a, b: m.atan2(a, b),
    "dot": lambda m, a, b: m.dot(a[0], b[0]),
    "linalg_cross": lambda m, a, b: m.linalg.cross(a[:, :3], b[:, :3]),
}


def cuda_pair(lib, seed=0):
    a = lib.tensor(rnd(4, 4, seed=seed)).float()
    b = lib.tensor(rnd(4, 4, seed=seed + 1)).float()
    return a.to("cuda"), b.to("cuda")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(CUDA_F16))
def test_cuda_autocast_runs_matmuls_in_the_lower_dtype(name, dtype):
    a, b = cuda_pair(retorch)
    with retorch.autocast("cuda", dtype=getattr(retorch, dtype)):
        r = CUDA_F16[name](retorch, a, b)
    assert dtype_name(r.dtype) == dtype and r.device.type == "cuda"
    ta, tb = (torch.tensor(rnd(4, 4, seed=s)).float() for s in (0, 1))
    # the oracle: the op on inputs rounded to the dtype, computed in float32
    t = CUDA_F16[name](torch, ta.to(getattr(torch, dtype)).float(),
                       tb.to(getattr(torch, dtype)).float())
    close(r.cpu(), t, dtype)


@pytest.mark.parametrize("name", sorted(CUDA_F32))
def test_cuda_autocast_runs_unstable_ops_in_float32(name):
    a, _ = cuda_pair(retorch)
    with retorch.autocast("cuda"):
        r = CUDA_F32[name](retorch, a.half())
        r32 = CUDA_F32[name](retorch, a)
    assert r.dtype == retorch.float32 and r32.dtype == retorch.float32
    t = CUDA_F32[name](torch, torch.tensor(rnd(4, 4)).half().float())
    close(r.cpu(), t, "float32")


@pytest.mark.parametrize("name", sorted(CUDA_PROMOTE))
def test_cuda_autocast_promotes_to_the_widest_input(name):
    a, b = cuda_pair(retorch)
    with retorch.autocast("cuda"):
        mixed = CUDA_PROMOTE[name](retorch, a.half(), b)
        low = CUDA_PROMOTE[name](retorch, a.half(), b.half())
    assert mixed.dtype == retorch.float32 and low.dtype == retorch.float16
    ta, tb = (torch.tensor(rnd(4, 4, seed=s)).float() for s in (0, 1))
    close(mixed.cpu(), CUDA_PROMOTE[name](torch, ta.half().float(), tb), "float32")


def test_cuda_autocast_rules():
    a, b = cuda_pair(retorch)
    c, d = retorch.randn(4, 4), retorch.randn(4, 4)
    with retorch.cuda.amp.autocast():
        assert retorch.is_autocast_enabled() and not retorch.is_autocast_cpu_enabled()
        assert retorch.mm(c, d).dtype == retorch.float32  # cpu tensors: cpu autocast is off
        assert retorch.sum(a.half(), dtype=retorch.float16).dtype == retorch.float16
        assert retorch.mm(a.double(), b.double()).dtype == retorch.float64
        assert retorch.mm(a, b.half()).dtype == retorch.float16
        with pytest.raises(RuntimeError, match="binary_cross_entropy is unsafe to autocast"):
            RF.binary_cross_entropy(a.sigmoid(), b.sigmoid())
        RF.binary_cross_entropy_with_logits(a, b.sigmoid())
    with retorch.autocast("cpu"):
        assert retorch.mm(a, b).dtype == retorch.float32  # cuda tensors: cuda autocast is off
    assert RF.binary_cross_entropy(a.sigmoid(), b.sigmoid()).dtype == retorch.float32


def test_custom_fwd_casts_inputs_and_custom_bwd_restores_the_state():
    seen = {}

    class Scale(retorch.autograd.Function):
        @staticmethod
        @retorch.cuda.amp.custom_fwd(cast_inputs=retorch.float32)
        def forward(ctx, x):
            seen["fwd"] = (x.dtype, retorch.is_autocast_enabled())
            return x * 2

        @staticmethod
        @retorch.cuda.amp.custom_bwd
        def backward(ctx, g):
            seen["bwd"] = retorch.is_autocast_enabled()
            return g * 2

    x = retorch.randn(3, device="cuda").half().requires_grad_(True)
    with retorch.cuda.amp.autocast():
        y = Scale.apply(x)
    assert seen["fwd"] == (retorch.float32, False) and y.dtype == retorch.float32
    y.sum().backward()
    assert seen["bwd"] is False  # forward ran with autocast off
    np.testing.assert_array_equal(x.grad.float().cpu().numpy(), np.full(3, 2.0))

    class Plain(retorch.autograd.Function):
        @staticmethod
        @retorch.amp.custom_fwd(device_type="cuda")
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        @retorch.amp.custom_bwd(device_type="cuda")
        def backward(ctx, g):
            seen["plain_bwd"] = retorch.is_autocast_enabled()
            return g

    x32 = retorch.randn(3, device="cuda", requires_grad=True)
    with retorch.cuda.amp.autocast():
        z = Plain.apply(x32)
    z.sum().backward()
    assert seen["plain_bwd"] is True  # the forward's autocast state, outside the region


def mlp_params(lib, device):
    rng = np.random.default_rng(5)
    shapes = [(8, 6), (8,), (3, 8), (3,)]
    return [lib.tensor(rng.standard_normal(s) * 0.4).float().to(device).requires_grad_(True)
            for s in shapes]


def mlp_loss(lib, ps, x, y):
    F = lib.nn.functional
    return F.cross_entropy(F.linear(F.relu(F.linear(x, ps[0], ps[1])), ps[2], ps[3]), y)


def batches(lib, device, n=6):
    rng = np.random.default_rng(6)
    return [(lib.tensor(rng.standard_normal((10, 6))).float().to(device),
             lib.tensor(rng.integers(0, 3, 10)).to(device)) for _ in range(n)]


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_grad_scaler_steps_as_unscaled_training(device):
    """Scaling by a power of two and unscaling is exact, so SGD through GradScaler takes retorch's
    unscaled steps bit for bit, and torch's to float32 accuracy."""
    def train(lib, scaler=None):
        ps = mlp_params(lib, device if lib is retorch else "cpu")
        opt = lib.optim.SGD(ps, lr=0.2, momentum=0.9)
        for x, y in batches(lib, device if lib is retorch else "cpu"):
            opt.zero_grad()
            loss = mlp_loss(lib, ps, x, y)
            if scaler is None:
                loss.backward()
                opt.step()
            else:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
        return [p.detach().cpu().numpy() for p in ps]

    scaler = retorch.amp.GradScaler(device)
    scaled = train(retorch, scaler)
    assert scaler.get_scale() == 2.0 ** 16 and scaler._get_growth_tracker() == 6
    for s, r, t in zip(scaled, train(retorch), train(torch)):
        np.testing.assert_array_equal(s, r)
        np.testing.assert_allclose(s, t, rtol=1e-5, atol=1e-6)


def test_grad_scaler_skips_non_finite_steps_and_adapts_the_scale():
    """torch.amp's documented rule: a step with an inf/NaN gradient is skipped and multiplies the
    scale by backoff_factor; growth_interval clean steps in a row multiply it by growth_factor."""
    ps = mlp_params(retorch, "cuda")
    opt = retorch.optim.SGD(ps, lr=0.1)
    scaler = retorch.cuda.amp.GradScaler(init_scale=8.0, growth_factor=4.0, backoff_factor=0.25,
                                         growth_interval=3)
    x, y = batches(retorch, "cuda", 1)[0]
    scales, moved = [], []
    for poison in [False, True, False, False, False, False, True, False]:
        before = [p.detach().clone() for p in ps]
        opt.zero_grad()
        scaler.scale(mlp_loss(retorch, ps, x, y)).backward()
        if poison:
            ps[2].grad[0, 0] = float("nan") if len(scales) == 1 else float("inf")
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        moved.append(any(not retorch.equal(b, p.detach()) for b, p in zip(before, ps)))
    assert scales == [8.0, 2.0, 2.0, 2.0, 8.0, 8.0, 2.0, 2.0]
    assert moved == [True, False, True, True, True, True, False, True]
    assert scaler._get_growth_tracker() == 1


def test_grad_scaler_unscale_clip_state_and_errors():
    ps = mlp_params(retorch, "cpu")
    ref = mlp_params(retorch, "cpu")
    x, y = batches(retorch, "cpu", 1)[0]
    mlp_loss(retorch, ref, x, y).backward()
    opt = retorch.optim.SGD(ps, lr=0.1)
    scaler = retorch.amp.GradScaler("cpu", init_scale=1024.0)
    with pytest.raises(RuntimeError, match="_scale is None"):
        scaler.unscale_(opt)
    scaler.scale(mlp_loss(retorch, ps, x, y)).backward()
    scaler.unscale_(opt)
    for p, r in zip(ps, ref):
        np.testing.assert_array_equal(p.grad.numpy(), r.grad.numpy())
    retorch.nn.utils.clip_grad_norm_(ps, 0.5)
    with pytest.raises(RuntimeError, match="already been called on this optimizer"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="after step"):
        scaler.unscale_(opt)
    scaler.update()
    state = scaler.state_dict()
    assert state == {"scale": 1024.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                     "growth_interval": 2000, "_growth_tracker": 1}
    other = retorch.amp.GradScaler("cpu")
    other.load_state_dict(state)
    assert other.get_scale() == 1024.0 and other._get_growth_tracker() == 1
    scaler.update(new_scale=64.0)
    assert scaler.get_scale() == 64.0
    off = retorch.amp.GradScaler("cpu", enabled=False)
    loss = mlp_loss(retorch, ps, x, y)
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    with pytest.raises(RuntimeError, match="source state dict is empty"):
        other.load_state_dict({})
    with pytest.raises(ValueError, match="growth factor must be > 1.0"):
        retorch.amp.GradScaler("cpu", growth_factor=1.0)
    half = [retorch.randn(3).half().requires_grad_(True)]
    (half[0].float().sum() * scaler.scale(retorch.ones(()))).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
        scaler.unscale_(retorch.optim.SGD(half, lr=0.1))


def test_mixed_precision_training_on_cuda_follows_float32_training():
    """autocast + GradScaler (torch's AMP recipe) on cuda: float16 matmuls, float32 loss and
    weights; after 6 steps the weights are torch's float32 training's to float16 accuracy."""
    ps = mlp_params(retorch, "cuda")
    opt = retorch.optim.SGD(ps, lr=0.2)
    scaler = retorch.cuda.amp.GradScaler()
    for x, y in batches(retorch, "cuda"):
        opt.zero_grad()
        with retorch.autocast("cuda"):
            loss = mlp_loss(retorch, ps, x, y)
        assert loss.dtype == retorch.float32
        scaler.scale(loss).backward()
        assert all(p.grad.dtype == retorch.float32 for p in ps)
        scaler.step(opt)
        scaler.update()
    tps = mlp_params(torch, "cpu")
    topt = torch.optim.SGD(tps, lr=0.2)
    for x, y in batches(torch, "cpu"):
        topt.zero_grad()
        mlp_loss(torch, tps, x, y).backward()
        topt.step()
    for p, t in zip(ps, tps):
        np.testing.assert_allclose(p.detach().cpu().numpy(), t.detach().numpy(), atol=5e-3)


def test_compiled_functions_guard_on_the_autocast_state():
    """retorch.compile traces under the caller's autocast settings (the casts go into the graph)
    and recompiles when they change, as torch.compile's guards do."""
    x, w = retorch.randn(8, 16), retorch.randn(16, 4)

    def f(x, w):
        return (x @ w).relu() * 2 + 1

    g = retorch.compile(f)
    plain = g(x, w)
    with retorch.autocast("cpu"):
        low = g(x, w)
        eager_low = f(x, w)
    again = g(x, w)
    assert plain.dtype == retorch.float32 and again.dtype == retorch.float32
    assert low.dtype == retorch.bfloat16
    np.testing.assert_array_equal(low.float().numpy(), eager_low.float().numpy())
    np.testing.assert_array_equal(again.numpy(), f(x, w).numpy())
    traced = retorch.jit.trace(f, (x, w))
    with retorch.autocast("cpu"):
        traced_low = retorch.jit.trace(f, (x, w))
    assert "bfloat16" not in str(traced.graph).lower()
    assert traced_low(x, w).dtype == retorch.bfloat16
    assert traced(x, w).dtype == retorch.float32
