"""nn.utils.parametrize, parametrizations.spectral_norm and the hook spectral_norm against torch
1.13: the same parametrized values, originals, outputs, gradients, state_dict keys and power
iterations (u and v copied from torch, whose random draw retorch cannot repeat)."""
import copy
import pickle

import numpy as np
import pytest
import torch

import retorch

RNG = np.random.RandomState(3)


def to_np(t):
    return t.detach().numpy()


def pair(make):
    """The same module in torch and retorch (float64, retorch given torch's values)."""
    tm, rm = make(torch).double(), make(retorch).double()
    with retorch.no_grad():
        for name, p in tm.named_parameters():
            rm.get_parameter(name).copy_(retorch.tensor(to_np(p)))
    return tm, rm


def modules(lib):
    """Parametrizations written once for both libraries."""
    class Symmetric(lib.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(0, 1)

        def right_inverse(self, a):
            return a.triu()

    class Scale(lib.nn.Module):
        calls = 0

        def forward(self, x):
            type(self).calls += 1
            return x * 2.0

        def right_inverse(self, x):
            return x / 2.0

    class Outer(lib.nn.Module):
        """A 2-d weight from two vectors (right_inverse returns a tuple)."""

        def forward(self, a, b):
            return a.unsqueeze(-1) * b.unsqueeze(-2)

        def right_inverse(self, z):
            return z.sum(1), z.sum(0) / z.sum()

    class Transpose(lib.nn.Module):
        def forward(self, x):
            return x.transpose(0, 1)

    class ToFloat(lib.nn.Module):
        def forward(self, x):
            return x.float()

    return Symmetric, Scale, Outer, Transpose, ToFloat


def param_of(lib):
    return lib.nn.utils.parametrize


def check_same(tm, rm, rtol=1e-12):
    assert [n for n, _ in rm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert list(rm.state_dict()) == list(tm.state_dict())
    for (name, r), (_, t) in zip(rm.state_dict().items(), tm.state_dict().items()):
        np.testing.assert_allclose(to_np(r), to_np(t), rtol=rtol, atol=1e-14, err_msg=name)
    np.testing.assert_allclose(to_np(rm.weight), to_np(tm.weight), rtol=rtol, atol=1e-14)


def forward_backward(tm, rm):
    x = RNG.randn(3, tm.in_features)
    gy = RNG.randn(3, tm.out_features)
    yt, yr = tm(torch.tensor(x)), rm(retorch.tensor(x))
    np.testing.assert_allclose(to_np(yr), to_np(yt), rtol=1e-12)
    (yt * torch.tensor(gy)).sum().backward()
    (yr * retorch.tensor(gy)).sum().backward()
    for (name, r), (_, t) in zip(rm.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-14,
                                   err_msg=name)


def test_register_applies_right_inverse_and_keeps_the_parameter():
    tm, rm = pair(lambda lib: lib.nn.Linear(5, 5))
    w_before = rm.weight
    for lib, m in ((torch, tm), (retorch, rm)):
        param_of(lib).register_parametrization(m, "weight", modules(lib)[0]())
    assert type(rm).__name__ == type(tm).__name__ == "ParametrizedLinear"
    assert repr(rm) == repr(tm)  # ... (parametrizations): ModuleDict((weight): ParametrizationList
    assert isinstance(rm, retorch.nn.Linear)
    assert retorch.nn.utils.parametrize.type_before_parametrizations(rm) is retorch.nn.Linear
    assert rm.parametrizations.weight.original is w_before  # optimizers keep working
    assert isinstance(rm.parametrizations.weight, param_of(retorch).ParametrizationList)
    P = param_of(retorch)
    assert P.is_parametrized(rm) and P.is_parametrized(rm, "weight")
    assert not P.is_parametrized(rm, "bias") and not P.is_parametrized(retorch.nn.Linear(2, 2))
    check_same(tm, rm)
    np.testing.assert_allclose(to_np(rm.weight), to_np(rm.weight).T)
    forward_backward(tm, rm)


def test_assignment_goes_through_right_inverse_of_the_chain():
    tm, rm = pair(lambda lib: lib.nn.Linear(4, 4))
    for lib, m in ((torch, tm), (retorch, rm)):
        Symmetric, Scale = modules(lib)[:2]
        param_of(lib).register_parametrization(m, "weight", Symmetric())
        param_of(lib).register_parametrization(m, "weight", Scale())
    assert len(rm.parametrizations.weight) == 2
    check_same(tm, rm)
    a = RNG.randn(4, 4)
    a = a + a.T
    tm.weight = torch.tensor(a)
    rm.weight = retorch.tensor(a)
    check_same(tm, rm)
    np.testing.assert_allclose(to_np(rm.weight), a, rtol=1e-12)
    forward_backward(tm, rm)


def test_tuple_right_inverse_gives_original0_original1():
    tm, rm = pair(lambda lib: lib.nn.Linear(4, 3))
    for lib, m in ((torch, tm), (retorch, rm)):
        param_of(lib).register_parametrization(m, "weight", modules(lib)[2]())
    chain = rm.parametrizations.weight
    assert not hasattr(chain, "original") and chain.ntensors == 2
    assert isinstance(chain.original0, retorch.nn.Parameter) and chain.original1.requires_grad
    check_same(tm, rm)
    forward_backward(tm, rm)
    with pytest.raises(ValueError, match="in terms of a sequence of tensors"):
        param_of(retorch).remove_parametrizations(rm, "weight", leave_parametrized=False)
    for lib, m in ((torch, tm), (retorch, rm)):
        param_of(lib).remove_parametrizations(m, "weight")
    assert type(rm) is retorch.nn.Linear and isinstance(rm.weight, retorch.nn.Parameter)
    check_same(tm, rm)


@pytest.mark.parametrize("leave", [True, False])
def test_remove_restores_the_class_and_the_parameter(leave):
    tm, rm = pair(lambda lib: lib.nn.Linear(3, 3))
    for lib, m in ((torch, tm), (retorch, rm)):
        Symmetric, Scale = modules(lib)[:2]
        param_of(lib).register_parametrization(m, "weight", Symmetric())
        param_of(lib).register_parametrization(m, "bias", Scale())
    original = rm.parametrizations.weight.original
    for lib, m in ((torch, tm), (retorch, rm)):
        param_of(lib).remove_parametrizations(m, "weight", leave_parametrized=leave)
    assert type(rm).__name__ == "ParametrizedLinear"  # bias is still parametrized
    assert rm.weight is original and "weight" in rm._parameters
    check_same(tm, rm)
    for lib, m in ((torch, tm), (retorch, rm)):
        param_of(lib).remove_parametrizations(m, "bias", leave_parametrized=leave)
    assert type(rm) is retorch.nn.Linear and "parametrizations" not in rm._modules
    check_same(tm, rm)
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        param_of(retorch).remove_parametrizations(rm, "weight")


def test_cached_computes_once_per_context():
    counts = {}
    for lib in (torch, retorch):
        m = lib.nn.Linear(2, 2)
        Scale = modules(lib)[1]
        param_of(lib).register_parametrization(m, "weight", Scale())
        Scale.calls = 0
        first, second = m.weight, m.weight
        assert first is not second
        with param_of(lib).cached():
            with param_of(lib).cached():
                a, b = m.weight, m.weight
            c = m.weight
        assert a is b is c
        m.weight
        counts[lib.__name__] = Scale.calls
    assert counts["retorch"] == counts["torch"] == 4


def test_buffers_training_mode_and_unsafe():
    tm, rm = pair(lambda lib: lib.nn.BatchNorm1d(3))
    with torch.no_grad():
        tm.running_mean.copy_(torch.tensor(RNG.randn(3)))
    rm.running_mean.copy_(retorch.tensor(to_np(tm.running_mean)))
    for lib, m in ((torch, tm), (retorch, rm)):
        m.eval()
        scale = modules(lib)[1]()
        param_of(lib).register_parametrization(m, "running_mean", scale)
        assert not scale.training  # follows the host module
    assert "original" in rm.parametrizations.running_mean._buffers
    np.testing.assert_allclose(to_np(rm.running_mean), to_np(tm.running_mean), rtol=1e-14)
    rm.train()
    assert rm.parametrizations.running_mean[0].training
    # unsafe=True lets a parametrization change the shape (torch allows it the same way).
    tl, rl = pair(lambda lib: lib.nn.Linear(4, 3))
    for lib, m in ((torch, tl), (retorch, rl)):
        param_of(lib).register_parametrization(m, "weight", modules(lib)[3](), unsafe=True)
    assert tuple(rl.weight.shape) == tuple(tl.weight.shape) == (4, 3)
    np.testing.assert_allclose(to_np(rl.weight), to_np(tl.weight))


def test_refused_input():
    P = param_of(retorch)
    Symmetric, Scale, Outer, Transpose, ToFloat = modules(retorch)
    m = retorch.nn.Linear(4, 3)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a "
                                         "parametrized element with name 'weights'"):
        P.register_parametrization(m, "weights", Scale())
    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(m, "weight", Transpose())
    with pytest.raises(ValueError, match="may not change the dtype"):
        P.register_parametrization(m.double(), "weight", ToFloat())
    with pytest.raises(TypeError, match="must be an nn.Module"):
        P.register_parametrization(m, "weight", lambda x: x)
    assert type(m) is retorch.nn.Linear  # nothing was half-registered
    P.register_parametrization(m, "weight", Transpose(), unsafe=True)
    with pytest.raises(RuntimeError, match="Transpose does not implement right_inverse"):
        m.weight = retorch.zeros(3, 4, dtype=retorch.float64)
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        m.weight = retorch.nn.Parameter(retorch.zeros(3, 4))
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(m)
    tm = torch.nn.Linear(4, 3)
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", modules(torch)[3](),
                                                        unsafe=True)
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        tm.weight = torch.nn.Parameter(torch.zeros(3, 4))


def test_deepcopy_is_independent():
    m = retorch.nn.Linear(3, 3)
    param_of(retorch).register_parametrization(m, "weight", modules(retorch)[0]())
    c = copy.deepcopy(m)
    assert type(c) is type(m) and c.parametrizations.weight.original is not \
        m.parametrizations.weight.original
    np.testing.assert_allclose(to_np(c.weight), to_np(m.weight))
    with retorch.no_grad():
        c.parametrizations.weight.original.add_(1.0)
    assert not np.allclose(to_np(c.weight), to_np(m.weight))


def test_transfer_parametrizations_and_params():
    tm, rm = pair(lambda lib: lib.nn.Linear(3, 3))
    for lib, m in ((torch, tm), (retorch, rm)):
        param_of(lib).register_parametrization(m, "weight", modules(lib)[0]())
    dst = retorch.nn.Linear(3, 3)
    param_of(retorch).transfer_parametrizations_and_params(rm, dst)
    assert dst.parametrizations.weight.original is rm.parametrizations.weight.original
    np.testing.assert_allclose(to_np(dst.weight), to_np(tm.weight), rtol=1e-14)


# Spectral norm ------------------------------------------------------------------------------

LAYERS = {
    "linear": (lambda lib: lib.nn.Linear(5, 4), (3, 5)),
    "conv2d": (lambda lib: lib.nn.Conv2d(3, 4, 3), (2, 3, 6, 6)),
    "conv_transpose2d": (lambda lib: lib.nn.ConvTranspose2d(3, 2, 3), (2, 3, 4, 4)),
}


def copy_buffers(src, dst):
    with retorch.no_grad():
        for name, b in src.named_buffers():
            dst.get_buffer(name).copy_(retorch.tensor(to_np(b)))


def run_passes(tm, rm, shape, passes=3):
    """Forward + backward `passes` times in training mode, then twice in eval mode; outputs,
    u/v buffers and accumulated gradients must follow torch's."""
    for i in range(passes + 2):
        if i == passes:
            tm.eval()
            rm.eval()
        x = RNG.randn(*shape)
        yt, yr = tm(torch.tensor(x)), rm(retorch.tensor(x))
        np.testing.assert_allclose(to_np(yr), to_np(yt), rtol=1e-10, atol=1e-12,
                                   err_msg=f"output, pass {i}")
        gy = RNG.randn(*yt.shape)
        (yt * torch.tensor(gy)).sum().backward()
        (yr * retorch.tensor(gy)).sum().backward()
        for (name, b), (_, tb) in zip(rm.named_buffers(), tm.named_buffers()):
            np.testing.assert_allclose(to_np(b), to_np(tb), rtol=1e-10, atol=1e-12,
                                       err_msg=f"{name}, pass {i}")
        for (name, p), (_, tp) in zip(rm.named_parameters(), tm.named_parameters()):
            np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-10, atol=1e-12,
                                       err_msg=f"grad {name}, pass {i}")


@pytest.mark.parametrize("layer", sorted(LAYERS))
@pytest.mark.parametrize("n_power_iterations", [1, 2])
def test_parametrized_spectral_norm_matches_torch(layer, n_power_iterations):
    make, shape = LAYERS[layer]
    torch.manual_seed(0)
    tm, rm = pair(make)
    for lib, m in ((torch, tm), (retorch, rm)):
        lib.nn.utils.parametrizations.spectral_norm(m, n_power_iterations=n_power_iterations)
    assert [n for n, _ in rm.named_buffers()] == [n for n, _ in tm.named_buffers()] == \
        ["parametrizations.weight.0._u", "parametrizations.weight.0._v"]
    assert rm.parametrizations.weight[0].dim == tm.parametrizations.weight[0].dim
    copy_buffers(tm, rm)
    assert list(rm.state_dict()) == list(tm.state_dict())
    run_passes(tm, rm, shape)
    np.testing.assert_allclose(to_np(rm.weight), to_np(tm.weight), rtol=1e-10)  # eval: no iter
    for lib, m in ((torch, tm), (retorch, rm)):
        lib.nn.utils.parametrize.remove_parametrizations(m, "weight")
    np.testing.assert_allclose(to_np(rm.weight), to_np(tm.weight), rtol=1e-10)


def test_parametrized_spectral_norm_of_a_vector_normalizes_it():
    tm, rm = pair(lambda lib: lib.nn.Linear(3, 4))
    for lib, m in ((torch, tm), (retorch, rm)):
        lib.nn.utils.parametrizations.spectral_norm(m, "bias")
    np.testing.assert_allclose(to_np(rm.bias), to_np(tm.bias), rtol=1e-12)
    forward_backward(tm, rm)


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_hook_spectral_norm_matches_torch(layer):
    make, shape = LAYERS[layer]
    torch.manual_seed(1)
    tm, rm = pair(make)
    for lib, m in ((torch, tm), (retorch, rm)):
        lib.nn.utils.spectral_norm(m, n_power_iterations=2)
    assert [n for n, _ in rm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert [n for n, _ in rm.named_buffers()] == ["weight_u", "weight_v"]
    assert sorted(rm.state_dict()) == sorted(tm.state_dict())
    assert not isinstance(rm.weight, retorch.nn.Parameter)  # unnormalized until a forward
    np.testing.assert_allclose(to_np(rm.weight), to_np(tm.weight_orig))
    copy_buffers(tm, rm)
    run_passes(tm, rm, shape)
    np.testing.assert_allclose(to_np(rm.weight), to_np(tm.weight), rtol=1e-10)
    for lib, m in ((torch, tm), (retorch, rm)):
        lib.nn.utils.remove_spectral_norm(m)
    assert [n for n, _ in rm.named_parameters()] == ["bias", "weight"]
    assert list(rm.named_buffers()) == []
    np.testing.assert_allclose(to_np(rm.weight), to_np(tm.weight), rtol=1e-10)


def test_spectral_norm_errors():
    m = retorch.nn.Linear(3, 2)
    with pytest.raises(ValueError, match="n_power_iterations to be positive"):
        retorch.nn.utils.spectral_norm(m, n_power_iterations=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        retorch.nn.utils.parametrizations.spectral_norm(m, dim=2)
    with pytest.raises(ValueError, match="no parameter or buffer with name 'kernel'"):
        retorch.nn.utils.parametrizations.spectral_norm(m, "kernel")
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        retorch.nn.utils.remove_spectral_norm(m)
    retorch.nn.utils.spectral_norm(m)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        retorch.nn.utils.spectral_norm(m)
    with pytest.raises(ValueError, match="no parameter `kernel`"):
        retorch.nn.utils.spectral_norm(retorch.nn.Linear(3, 2), "kernel")
