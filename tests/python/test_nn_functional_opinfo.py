"""torch.nn.functional ops that torch 1.13's OpInfo samples found apart from torch: 1-d and bicubic
interpolate, grid_sample's reflection/bicubic/5-D modes, 0-d multilabel_margin_loss, empty
fractional pools and batch norms, 2-D per-sample bag weights, integer avg_pool3d and sparse
embeddings; values and float64 gradients against torch, and torch's errors."""
import warnings

import numpy as np
import pytest
import torch

import retorch
from oracle import assert_close

RNG = np.random.RandomState(7)
TORCH_DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16}


def pair(a, dtype="float64", grad=False):
    """The same values as a torch and a retorch tensor (floats in dtype)."""
    t = torch.tensor(a)
    if not t.is_floating_point():
        return t, retorch.tensor(a)
    t = t.to(TORCH_DTYPES[dtype])
    r = retorch.tensor(t.double().numpy()).to(getattr(retorch, dtype))
    return t.requires_grad_(grad), r.requires_grad_(grad)


def check(fn, arrays, dtype="float64", grads=True, **tol):
    """fn(lib, *tensors) on both libraries: the outputs, then (float64, grads) the gradients of
    sum(output * fixed weights) with respect to every floating input."""
    pairs = [pair(a, dtype, grads and a.dtype.kind == "f") for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecation and dense-gradient warnings
        want = fn(torch, *[t for t, _ in pairs])
        got = fn(retorch, *[r for _, r in pairs])
    assert_close(got, want, "output", **tol)
    if not grads:
        return
    probe = RNG.randn(*want.shape)
    (want * torch.tensor(probe)).sum().backward()
    (got * retorch.tensor(probe)).sum().backward()
    for i, (t, r) in enumerate(pairs):
        if t.requires_grad:
            assert r.grad is not None, f"input {i}: no gradient"
            want_grad = t.grad.to_dense() if t.grad.is_sparse else t.grad
            assert_close(r.grad, want_grad, f"gradient of input {i}", **tol)


def raises_like(fn, same_message=True):
    """fn(lib) raises the same exception class (with the same message) in both libraries."""
    with pytest.raises(Exception) as want:
        fn(torch)
    with pytest.raises(type(want.value)) as got:
        fn(retorch)
    if same_message:
        assert str(got.value) == str(want.value)


# interpolate ----------------------------------------------------------------------------------
# Scale factors whose output size is neither the input's nor twice it: there torch's nearest
# backward (and its bicubic backward, for an unchanged size) ignores the scale its forward used,
# so its gradient is not its forward's (see test_interpolate_gradient_is_its_forwards).
SIZES = [dict(size=3), dict(size=9), dict(scale_factor=1.7), dict(scale_factor=0.6),
         dict(scale_factor=1.7, recompute_scale_factor=True)]
MODES = [((2, 3, 5), "nearest", None), ((2, 3, 5), "nearest-exact", None),
         ((2, 3, 5), "linear", False), ((2, 3, 5), "linear", True), ((2, 3, 5), "area", None),
         ((2, 3, 4, 5), "bicubic", False), ((2, 3, 4, 5), "bicubic", True),
         ((2, 3, 4, 5), "nearest-exact", None), ((2, 3, 4, 5), "area", None),
         ((2, 2, 3, 4, 5), "nearest", None)]


@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16"])
@pytest.mark.parametrize("mode", range(len(MODES)))
@pytest.mark.parametrize("kw", range(len(SIZES)))
def test_interpolate_matches_torch(kw, mode, dtype):
    shape, name, corners = MODES[mode]
    if dtype == "bfloat16" and name in ("area", "nearest-exact"):
        pytest.skip("torch 1.13 has no bfloat16 kernel for these")
    check(lambda m, x: m.nn.functional.interpolate(x, mode=name, align_corners=corners,
                                                   **SIZES[kw]),
          [RNG.randn(*shape)], dtype, grads=dtype == "float64")


@pytest.mark.parametrize("shape", [(2, 3, 6, 7), (2, 1, 6, 7), (1, 1, 6, 3, 7)])
@pytest.mark.parametrize("scale", [1.04, 2.1, (1.3, 2.0)])
def test_interpolate_nearest_copies_unchanged_dims_as_torchs_kernels(shape, scale):
    """torch's channels-last nearest kernel (which one-channel input takes) copies a dim whose
    size is unchanged and halves a doubled one's index whatever the scale; its plain one
    doesn't."""
    if isinstance(scale, tuple):
        scale = scale + (1.1,) * (len(shape) - 4)
    check(lambda m, x: m.nn.functional.interpolate(x, scale_factor=scale), [RNG.randn(*shape)],
          grads=False)
    check(lambda m, x: m.nn.functional.interpolate(
        x, scale_factor=scale, mode="bilinear" if len(shape) == 4 else "trilinear"),
        [RNG.randn(*shape)])


@pytest.mark.parametrize("mode,shape", [("nearest", (2, 3, 5)), ("nearest", (2, 3, 4, 5)),
                                        ("bicubic", (1, 2, 4, 5))])
def test_interpolate_gradient_is_its_forwards(mode, shape):
    x = retorch.tensor(RNG.randn(*shape), requires_grad=True)
    assert retorch.autograd.gradcheck(
        lambda t: retorch.nn.functional.interpolate(t, scale_factor=1.04, mode=mode), (x,))


def test_upsample_nearest_of_1d_input_matches_torch():
    check(lambda m, x: m.nn.functional.upsample_nearest(x, scale_factor=1.7),
          [RNG.randn(2, 3, 4)])


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.interpolate(m.zeros(1, 1, 4), size=3, mode="bicubic"),
    lambda m: m.nn.functional.interpolate(m.zeros(1, 1, 4), size=3, mode="bilinear"),
    lambda m: m.nn.functional.interpolate(m.zeros(1, 1, 4, 4), size=3, mode="linear"),
    lambda m: m.nn.functional.interpolate(m.zeros(1, 1, 4, 4), size=3, mode="cubic"),
    lambda m: m.nn.functional.interpolate(m.zeros(1, 1, 4), size=3, align_corners=True),
    lambda m: m.nn.functional.interpolate(m.zeros(1, 1, 4), size=(3, 3)),
    lambda m: m.nn.functional.interpolate(m.zeros(1, 1, 4), scale_factor=(2, 2)),
    lambda m: m.nn.functional.interpolate(m.zeros(1, 1, 4), size=3, scale_factor=2),
    lambda m: m.nn.functional.interpolate(m.zeros(1, 1, 4)),
    lambda m: m.nn.functional.interpolate(m.zeros(1, 1, 4), size=3,
                                          recompute_scale_factor=True),
    lambda m: m.nn.functional.interpolate(m.zeros(1, 1, 4), size=3, mode="linear",
                                          antialias=True),
], ids=["bicubic_3d", "bilinear_3d", "linear_4d", "unknown_mode", "corners_nearest",
        "size_len", "scale_len", "both", "neither", "recompute_with_size", "antialias_1d"])
def test_interpolate_errors_like_torch(call):
    raises_like(call)


def test_interpolate_refuses_integer_linear_input():
    for m in (torch, retorch):
        with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
            m.nn.functional.interpolate(m.arange(4).reshape(1, 1, 4), size=3, mode="linear")


# grid_sample ----------------------------------------------------------------------------------
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("dims", [2, 3])
def test_grid_sample_matches_torch(dims, mode, padding_mode, align_corners):
    if dims == 3 and mode == "bicubic":
        pytest.skip("torch's bicubic grid sampling is 2-d only")
    shape, grid = ((2, 3, 4, 5), (2, 3, 4, 2)) if dims == 2 else ((2, 2, 3, 4, 5), (2, 2, 3, 4, 3))
    x = RNG.randn(*shape)
    g = RNG.rand(*grid) * 4.4 - 2.2  # many points outside [-1, 1], some reflected twice
    def sample(m, a, b=None):
        b = m.tensor(g, dtype=a.dtype) if b is None else b
        return m.nn.functional.grid_sample(a, b, mode=mode, padding_mode=padding_mode,
                                           align_corners=align_corners)
    # torch gives nearest sampling a zero grid gradient; here the grid gets none.
    for dtype in ("float64", "float32"):
        check(sample, [x] if mode == "nearest" else [x, g], dtype, grads=dtype == "float64")


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.grid_sample(m.zeros(1, 1, 3, 3), m.zeros(2, 2, 2, 2),
                                          align_corners=False),
    lambda m: m.nn.functional.grid_sample(m.zeros(1, 1, 3, 3), m.zeros(1, 2, 2, 3),
                                          align_corners=False),
    lambda m: m.nn.functional.grid_sample(m.zeros(1, 1, 3, 3, 3), m.zeros(1, 2, 2, 2, 3),
                                          mode="bicubic", align_corners=False),
    lambda m: m.nn.functional.grid_sample(m.zeros(1, 1, 0, 3), m.zeros(1, 2, 2, 2),
                                          align_corners=False),
    lambda m: m.nn.functional.grid_sample(m.zeros(1, 1, 3, 3), m.zeros(1, 2, 2, 2),
                                          mode="linear", align_corners=False),
    lambda m: m.nn.functional.grid_sample(m.zeros(1, 1, 3, 3), m.zeros(1, 2, 2, 2),
                                          padding_mode="reflect", align_corners=False),
], ids=["batch", "last_dim", "bicubic_3d", "empty_spatial", "mode", "padding"])
def test_grid_sample_errors_like_torch(call):
    raises_like(call)


def test_grid_sample_warns_of_the_align_corners_default_and_takes_empty_batches():
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        retorch.nn.functional.grid_sample(retorch.zeros(1, 1, 3, 3), retorch.zeros(1, 2, 2, 2))
    out = retorch.nn.functional.grid_sample(retorch.zeros(0, 2, 3, 3), retorch.zeros(0, 4, 5, 2),
                                            align_corners=True)
    assert tuple(out.shape) == (0, 2, 4, 5)


# multilabel_margin_loss -----------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("target", [0, -1])
def test_multilabel_margin_loss_of_0d_input_matches_torch(target, reduction):
    check(lambda m, x, t: m.nn.functional.multilabel_margin_loss(x, t, reduction=reduction),
          [np.array(0.7), np.array(target)])


def test_multilabel_margin_loss_of_an_empty_batch_matches_torch():
    check(lambda m, x, t: m.nn.functional.multilabel_margin_loss(x, t, reduction="none"),
          [np.zeros((0, 3)), np.zeros((0, 3), np.int64)], grads=False)
    # torch 1.13 returns uninitialized memory for the sum and mean of an empty batch (mostly
    # ~1e-35, at times 3e17): retorch's are 0
    for reduction in ("mean", "sum"):
        loss = retorch.nn.functional.multilabel_margin_loss(
            retorch.zeros(0, 3), retorch.zeros(0, 3, dtype=retorch.int64), reduction=reduction)
        assert loss.shape == () and loss.item() == 0


@pytest.mark.parametrize("shape,target", [((3,), [0, 1]), ((2, 3), [0, 1, 2]), ((3,), [3, 0, -1]),
                                          ((3,), [0, -2, 1]), ((), [1]), ((2, 3, 4), [0] * 24)])
def test_multilabel_margin_loss_errors_like_torch(shape, target):
    raises_like(lambda m: m.nn.functional.multilabel_margin_loss(m.zeros(shape),
                                                                 m.tensor(target)))


# fractional max pools -------------------------------------------------------------------------
@pytest.mark.parametrize("shape,kw", [((0, 1, 4, 5, 4), dict(output_size=2)),
                                      ((0, 1, 4, 5, 4), dict(output_ratio=(0.5, 0.5, 0.5))),
                                      ((0, 4, 5, 4), dict(output_size=(2, 3, 2)))])
def test_fractional_max_pool3d_of_empty_input_matches_torch(shape, kw):
    for m in (torch, retorch):
        out, idx = m.nn.functional.fractional_max_pool3d(m.zeros(shape), (2, 2, 1),
                                                          return_indices=True, **kw)
        assert out.numel() == 0 and idx.dtype == m.int64
    want = torch.nn.functional.fractional_max_pool3d(torch.zeros(shape), (2, 2, 1), **kw)
    got = retorch.nn.functional.fractional_max_pool3d(retorch.zeros(shape), (2, 2, 1), **kw)
    assert_close(got, want)


def test_fractional_max_pools_refuse_empty_non_batch_dims_like_torch():
    raises_like(lambda m: m.nn.functional.fractional_max_pool3d(m.zeros(1, 0, 4, 5, 4), 2,
                                                                output_size=2))
    raises_like(lambda m: m.nn.functional.fractional_max_pool2d(m.zeros(1, 0, 4, 5), 2,
                                                                output_size=2))


# embedding_bag --------------------------------------------------------------------------------
WEIGHT = RNG.randn(5, 4)
BAGS = np.array([[0, 2, 2], [4, 0, 1]])


def BAG_OFFSETS_2D(m):
    return m.nn.functional.embedding_bag(m.tensor(BAGS), m.zeros(5, 4), m.tensor([0, 1]))


@pytest.mark.parametrize("kw", [dict(), dict(padding_idx=2), dict(max_norm=1.0)])
def test_embedding_bag_takes_2d_per_sample_weights_like_torch(kw):
    check(lambda m, w, p: m.nn.functional.embedding_bag(
        m.tensor(BAGS), w, mode="sum", per_sample_weights=p, **kw), [WEIGHT, RNG.randn(2, 3)])


def test_embedding_bag_leaves_indices_past_the_last_offset_out():
    """torch 1.13 reads out of bounds for them (so it is not called here): they are in no bag,
    and their per-sample weights get no gradient."""
    F = retorch.nn.functional
    w = retorch.tensor(WEIGHT)
    p = retorch.tensor(RNG.randn(2, 3), requires_grad=True)
    out = F.embedding_bag(retorch.tensor(BAGS), w, mode="sum", per_sample_weights=p,
                          include_last_offset=True)
    want = (WEIGHT[BAGS[0]] * p.detach().numpy()[0, :, None]).sum(0, keepdims=True)
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-12)
    out.sum().backward()
    assert (p.grad.numpy()[1] == 0).all()
    assert retorch.autograd.gradcheck(lambda q: F.embedding_bag(
        retorch.tensor(BAGS), w, mode="sum", per_sample_weights=q, include_last_offset=True),
        (p.detach().requires_grad_(True),))


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.embedding_bag(m.tensor(BAGS), m.zeros(5, 4), mode="sum",
                                            per_sample_weights=m.zeros(6)),
    lambda m: m.nn.functional.embedding_bag(m.tensor(BAGS), m.zeros(5, 4), mode="mean",
                                            per_sample_weights=m.zeros(2, 3)),
    BAG_OFFSETS_2D,
    lambda m: m.nn.functional.embedding_bag(m.zeros(1, 2, 3, dtype=m.int64), m.zeros(5, 4)),
    lambda m: m.nn.functional.embedding_bag(m.tensor([0, 1]), m.zeros(5, 4)),
    lambda m: m.nn.functional.embedding_bag(m.tensor(BAGS), m.zeros(5, 4), mode="max",
                                            sparse=True),
    lambda m: m.nn.functional.embedding_bag(m.tensor(BAGS), m.zeros(5, 4), mode="min"),
], ids=["psw_shape", "psw_mean", "offsets_2d", "input_3d", "no_offsets", "max_sparse", "mode"])
def test_embedding_bag_errors_like_torch(call):
    raises_like(call, same_message=call is not BAG_OFFSETS_2D)  # that one names the class


# avg_pool3d -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=(2, 3, 4), stride=(1, 2, 2),
                                                          padding=(0, 1, 2)),
                                dict(kernel_size=3, padding=1, count_include_pad=False),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                     count_include_pad=False),
                                dict(kernel_size=(3, 2, 3), stride=2, padding=1,
                                     divisor_override=5)])
def test_avg_pool3d_of_integers_truncates_once_like_torch(kw):
    x = RNG.randint(-50, 50, (2, 3, 5, 5, 5))
    check(lambda m, t: m.nn.functional.avg_pool3d(t, **kw), [x], grads=False)
    check(lambda m, t: m.nn.functional.avg_pool3d(t, **kw), [x[0]], grads=False)


# batch_norm -----------------------------------------------------------------------------------
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", [(0,), (0, 3), (0, 3, 4), (2, 0)])
def test_batch_norm_of_empty_input_matches_torch(shape, training):
    c = shape[1] if len(shape) > 1 else 0
    check(lambda m, x, mean, var: m.nn.functional.batch_norm(x, mean, var, training=training),
          [np.zeros(shape), np.zeros(c), np.ones(c)], grads=False)
    stats = retorch.zeros(c), retorch.ones(c)
    retorch.nn.functional.batch_norm(retorch.zeros(shape), *stats, training=training)
    assert stats[0].sum().item() == 0 and stats[1].sum().item() == c  # left alone


def test_batch_norm_refuses_one_value_per_channel_like_torch():
    for shape in [(1,), (1, 3), (1, 3, 1)]:
        raises_like(lambda m: m.nn.functional.batch_norm(m.zeros(shape), None, None,
                                                         training=True))


# sparse embedding gradients -------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(), dict(padding_idx=0, max_norm=1.0)])
def test_sparse_embedding_gives_torchs_gradient_densely(kw):
    tw = torch.tensor(WEIGHT, requires_grad=True)
    rw = retorch.tensor(WEIGHT, requires_grad=True)
    want = torch.nn.functional.embedding(torch.tensor(BAGS), tw, sparse=True, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = retorch.nn.functional.embedding(retorch.tensor(BAGS), rw, sparse=True, **kw)
    assert_close(got, want)
    probe = RNG.randn(*want.shape)
    (want * torch.tensor(probe)).sum().backward()
    (got * retorch.tensor(probe)).sum().backward()
    assert_close(rw.grad, tw.grad.to_dense())
    assert_close(rw, tw)  # max_norm renormed the same rows in place


def test_sparse_embedding_bag_gives_torchs_gradient_densely():
    check(lambda m, w, p: m.nn.functional.embedding_bag(
        m.tensor([0, 2, 2, 4]), w, m.tensor([0, 1]), mode="sum", sparse=True,
        per_sample_weights=p), [WEIGHT, RNG.randn(4)])


def test_sparse_embeddings_warn_once_that_the_gradient_is_dense():
    F = retorch.nn.functional
    F._DENSE_WARNED.clear()
    with pytest.warns(UserWarning, match="sparse=True gives a dense gradient"):
        F.embedding(retorch.tensor([0, 1]), retorch.zeros(3, 2), sparse=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second call says nothing
        F.embedding(retorch.tensor([0, 1]), retorch.zeros(3, 2), sparse=True)


def test_sparse_embedding_refuses_frequency_scaling_in_backward_like_torch():
    for m in (torch, retorch):
        w = m.zeros(5, 4, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = m.nn.functional.embedding(m.tensor([0, 1, 1]), w, sparse=True,
                                            scale_grad_by_freq=True)
        with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse"):
            out.sum().backward()
