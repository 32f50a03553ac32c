"""nn/_functional_extra.py and nn/modules/extra.py against torch.nn: values and gradients of the
functions, the modules' outputs, and LazyLinear's initialization."""
import warnings

import numpy as np
import pytest
import torch

import retorch
from test_functional_api import assert_same, plain

RNG = np.random.RandomState(2)
X4 = RNG.randn(2, 4, 6, 6).astype(np.float32)
X3 = RNG.randn(2, 4, 9).astype(np.float32)
M = RNG.randn(5, 4).astype(np.float32)
Y = RNG.randn(5, 4).astype(np.float32)
VAR = (RNG.rand(5, 4) + 0.1).astype(np.float32)
LABELS = (RNG.rand(5, 4) > 0.5).astype(np.float32)
MULTI = np.array([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 2, 1, 0], [2, -1, 3, 3], [0, 0, -1, 2]],
                 np.int64)
THETA = np.array([[[0.9, -0.2, 0.1], [0.3, 1.1, -0.2]], [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]],
                 np.float32)


def T(m, a, grad=False):
    return m.tensor(a.copy(), requires_grad=grad)


def pool_unpool(m, n):
    F = m.nn.functional
    x = T(m, X4 if n == 2 else X3)
    pool = F.max_pool2d if n == 2 else F.max_pool1d
    unpool = F.max_unpool2d if n == 2 else F.max_unpool1d
    out, idx = pool(x, 2, 2, return_indices=True)
    return unpool(out, idx, 2, 2), unpool(out, idx, 2, 2, output_size=x.shape)


CASES = {
    "elu_": lambda m: m.nn.functional.elu_(T(m, M), 0.5),
    "celu_": lambda m: m.nn.functional.celu_(T(m, M), 1.5),
    "selu_": lambda m: m.nn.functional.selu_(T(m, M)),
    "leaky_relu_": lambda m: m.nn.functional.leaky_relu_(T(m, M), 0.2),
    "hardtanh_": lambda m: m.nn.functional.hardtanh_(T(m, M), -0.5, 0.5),
    "threshold_": lambda m: m.nn.functional.threshold_(T(m, M), 0.1, 20.0),
    "max_pool2d_with_indices": lambda m: m.nn.functional.max_pool2d_with_indices(T(m, X4), 3, 2,
                                                                                 1),
    "max_pool1d_with_indices": lambda m: m.nn.functional.max_pool1d_with_indices(T(m, X3), 2),
    "adaptive_max_pool2d_with_indices": lambda m:
        m.nn.functional.adaptive_max_pool2d_with_indices(T(m, X4), (2, 3)),
    "upsample_nearest": lambda m: m.nn.functional.upsample_nearest(T(m, X4), scale_factor=2),
    "upsample_bilinear": lambda m: m.nn.functional.upsample_bilinear(T(m, X4), size=(9, 7)),
    "lp_pool1d": lambda m: m.nn.functional.lp_pool1d(T(m, X3), 2.0, 3, 2),
    "lp_pool2d": lambda m: m.nn.functional.lp_pool2d(T(m, X4), 3.0, (2, 3)),
    "lp_pool2d ceil": lambda m: m.nn.functional.lp_pool2d(T(m, X4).abs(), 1.5, 4, 3, True),
    "max_unpool2d": lambda m: pool_unpool(m, 2),
    "max_unpool1d": lambda m: pool_unpool(m, 1),
    "channel_shuffle": lambda m: m.nn.functional.channel_shuffle(T(m, X4), 2),
    "affine_grid": lambda m: m.nn.functional.affine_grid(T(m, THETA), (2, 1, 3, 4),
                                                         align_corners=False),
    "affine_grid corners": lambda m: m.nn.functional.affine_grid(T(m, THETA), (2, 1, 5, 2),
                                                                 align_corners=True),
    "pdist": lambda m: m.nn.functional.pdist(T(m, M)),
    "pdist p1": lambda m: m.nn.functional.pdist(T(m, M), 1),
    "gaussian_nll_loss": lambda m: m.nn.functional.gaussian_nll_loss(T(m, M), T(m, Y), T(m, VAR)),
    "gaussian_nll_loss full sum": lambda m: m.nn.functional.gaussian_nll_loss(
        T(m, M), T(m, Y), T(m, VAR[:, 0]), full=True, reduction="sum"),
    "gaussian_nll_loss none": lambda m: m.nn.functional.gaussian_nll_loss(
        T(m, M), T(m, Y), T(m, VAR[:, :1] * 0), reduction="none"),
    "multilabel_soft_margin_loss": lambda m: m.nn.functional.multilabel_soft_margin_loss(
        T(m, M), T(m, LABELS)),
    "multilabel_soft_margin_loss weight": lambda m: m.nn.functional.multilabel_soft_margin_loss(
        T(m, M), T(m, LABELS), weight=T(m, VAR[0]), reduction="none"),
    "multilabel_margin_loss": lambda m: m.nn.functional.multilabel_margin_loss(T(m, M),
                                                                               T(m, MULTI)),
    "multilabel_margin_loss none": lambda m: m.nn.functional.multilabel_margin_loss(
        T(m, M), T(m, MULTI), reduction="none"),
    "multilabel_margin_loss 1d": lambda m: m.nn.functional.multilabel_margin_loss(
        T(m, M[0]), T(m, MULTI[1])),
    "triplet_margin_with_distance_loss": lambda m:
        m.nn.functional.triplet_margin_with_distance_loss(T(m, M), T(m, Y), T(m, VAR)),
    "triplet_margin_with_distance_loss fn swap": lambda m:
        m.nn.functional.triplet_margin_with_distance_loss(
            T(m, M), T(m, Y), T(m, VAR), distance_function=lambda a, b: (a - b).abs().sum(1),
            margin=2.0, swap=True, reduction="none"),
    "Unfold Fold": lambda m: m.nn.Fold((6, 6), 3, padding=1)(m.nn.Unfold(3, padding=1)(
        T(m, X4))),
    "LPPool2d": lambda m: m.nn.LPPool2d(2, 2)(T(m, X4)),
    "MaxUnpool2d": lambda m: m.nn.MaxUnpool2d(2)(*m.nn.MaxPool2d(2, return_indices=True)(
        T(m, X4))),
    "ChannelShuffle": lambda m: m.nn.ChannelShuffle(4)(T(m, X4)),
    "GaussianNLLLoss": lambda m: m.nn.GaussianNLLLoss(full=True)(T(m, M), T(m, Y), T(m, VAR)),
    "MultiLabelSoftMarginLoss": lambda m: m.nn.MultiLabelSoftMarginLoss()(T(m, M),
                                                                         T(m, LABELS)),
    "MultiLabelMarginLoss": lambda m: m.nn.MultiLabelMarginLoss(reduction="sum")(T(m, M),
                                                                                T(m, MULTI)),
    "TripletMarginWithDistanceLoss": lambda m: m.nn.TripletMarginWithDistanceLoss(margin=0.5)(
        T(m, M), T(m, Y), T(m, VAR)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's and retorch's deprecation warnings
        want = plain(CASES[case](torch))
        got = plain(CASES[case](retorch))
    assert_same(got, want, case)


@pytest.mark.parametrize("case", ["gaussian_nll_loss", "multilabel_soft_margin_loss",
                                  "multilabel_margin_loss", "triplet_margin_with_distance_loss",
                                  "pdist", "lp_pool2d", "affine_grid"])
def test_gradients_match_torch(case):
    grads = []
    for m in (torch, retorch):
        F = m.nn.functional
        a = T(m, M, grad=True)
        if case == "gaussian_nll_loss":
            v = T(m, VAR, grad=True)
            out = F.gaussian_nll_loss(a, T(m, Y), v)
            extra = v
        elif case == "multilabel_soft_margin_loss":
            out, extra = F.multilabel_soft_margin_loss(a, T(m, LABELS)), None
        elif case == "multilabel_margin_loss":
            out, extra = F.multilabel_margin_loss(a, T(m, MULTI)), None
        elif case == "triplet_margin_with_distance_loss":
            out, extra = F.triplet_margin_with_distance_loss(a, T(m, Y), T(m, VAR)), None
        elif case == "pdist":
            out, extra = F.pdist(a).sum(), None
        elif case == "lp_pool2d":
            a = T(m, X4, grad=True)
            out, extra = F.lp_pool2d(a, 2.0, 2).sum(), None
        else:
            a = T(m, THETA, grad=True)
            out, extra = (F.affine_grid(a, (2, 1, 3, 4), align_corners=False) *
                          m.arange(48.0).reshape(2, 3, 4, 2)).sum(), None
        out.backward()
        grads.append([a.grad.numpy()] + ([extra.grad.numpy()] if extra is not None else []))
    for g, w in zip(grads[1], grads[0]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=case)


def test_lazy_linear_takes_its_input_size_on_the_first_call():
    retorch.manual_seed(0)
    m = retorch.nn.LazyLinear(3)
    assert m.has_uninitialized_params()
    y = m(retorch.randn(4, 7))
    assert y.shape == (4, 3) and m.in_features == 7 and tuple(m.weight.shape) == (3, 7)
    bound = 1 / np.sqrt(7)  # Linear's init: kaiming_uniform(a=sqrt(5)) and bias U(-b, b)
    assert np.abs(m.weight.detach().numpy()).max() <= bound + 1e-6
    assert np.abs(m.bias.detach().numpy()).max() <= bound + 1e-6
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    y.sum().backward()
    assert m.weight.grad.shape == (3, 7)


def test_errors_like_torch():
    F = retorch.nn.functional
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(retorch.zeros(2), retorch.zeros(2), -retorch.ones(2))
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(retorch.zeros(2, 3), retorch.zeros(2, 3), retorch.ones(3))
    with pytest.raises(RuntimeError, match="divisible by groups"):
        F.channel_shuffle(retorch.zeros(1, 3, 2, 2), 2)
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors"):
        F.pdist(retorch.zeros(3))


def test_gumbel_softmax_samples_the_softmax_and_passes_gradients_straight_through():
    F = retorch.nn.functional
    retorch.manual_seed(4)
    logits = retorch.tensor([[1.0, 2.0, 0.5]]).expand(6000, 3).contiguous()
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(1).numpy(), np.ones(6000), rtol=1e-5)
    hard = F.gumbel_softmax(logits, hard=True)
    assert set(np.unique(hard.detach().numpy()).tolist()) == {0.0, 1.0}
    assert (hard.sum(1) == 1).all().item()
    freq = hard.detach().numpy().mean(0)
    p = np.exp([1.0, 2.0, 0.5]) / np.exp([1.0, 2.0, 0.5]).sum()
    np.testing.assert_allclose(freq, p, atol=0.03)
    x = retorch.tensor([[1.0, 2.0, 0.5]], requires_grad=True)
    (F.gumbel_softmax(x, hard=True) * retorch.tensor([[1.0, 2.0, 3.0]])).sum().backward()
    assert x.grad is not None and np.abs(x.grad.numpy()).sum() > 0


GRID = (RNG.rand(2, 5, 7, 2).astype(np.float32) * 2.4 - 1.2)  # some points outside [-1, 1]


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_torch(mode, padding_mode, align_corners):
    got, want = [], []
    for m, out in ((torch, want), (retorch, got)):
        x = T(m, X4, grad=True)
        g = T(m, GRID, grad=mode == "bilinear")
        y = m.nn.functional.grid_sample(x, g, mode=mode, padding_mode=padding_mode,
                                        align_corners=align_corners)
        (y * m.tensor(np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape)).astype(
            np.float32))).sum().backward()
        out += [y.detach().numpy(), x.grad.numpy()] + (
            [g.grad.numpy()] if mode == "bilinear" else [])
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"output {i}")


def test_grid_sample_with_affine_grid_is_the_identity_for_the_identity_transform():
    x = retorch.tensor(X4)
    theta = retorch.tensor([[[1.0, 0, 0], [0, 1.0, 0]]] * 2)
    grid = retorch.nn.functional.affine_grid(theta, (2, 4, 6, 6), align_corners=False)
    y = retorch.nn.functional.grid_sample(x, grid, align_corners=False)
    np.testing.assert_allclose(y.numpy(), X4, rtol=1e-5, atol=1e-6)
    y = retorch.nn.functional.grid_sample(x, grid, padding_mode="reflection", align_corners=False)
    np.testing.assert_allclose(y.numpy(), X4, rtol=1e-5, atol=1e-6)


def test_normalize_writes_into_out_like_torch():
    for p, dim in ((2.0, 1), (1.0, 0), (3.0, -1)):
        t_out, r_out = torch.empty(1), retorch.empty(1)
        t = torch.nn.functional.normalize(torch.from_numpy(M), p, dim, out=t_out)
        r = retorch.nn.functional.normalize(retorch.from_numpy(M), p, dim, out=r_out)
        assert r is r_out and t is t_out
        np.testing.assert_allclose(r_out.numpy(), t_out.numpy(), rtol=1e-6, atol=1e-7)
