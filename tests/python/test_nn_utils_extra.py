"""nn.utils.weight_norm/remove_weight_norm and fuse_conv_bn_eval/weights against torch: the same
parameters, outputs and gradients from the same starting weights."""
import numpy as np
import pytest
import torch

import retorch

RNG = np.random.RandomState(7)


def copy_params(src, dst):
    """torch module parameters/buffers into the retorch module (by name)."""
    with retorch.no_grad():
        for name, p in src.named_parameters():
            dst.get_parameter(name).copy_(retorch.tensor(p.detach().numpy()))
        for name, b in src.named_buffers():
            if b.is_floating_point():
                dst.get_buffer(name).copy_(retorch.tensor(b.numpy()))


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_torch(dim):
    tm = torch.nn.Linear(5, 3)
    rm = retorch.nn.Linear(5, 3)
    copy_params(tm, rm)
    torch.nn.utils.weight_norm(tm, dim=dim)
    retorch.nn.utils.weight_norm(rm, dim=dim)
    assert sorted(n for n, _ in rm.named_parameters()) == sorted(
        n for n, _ in tm.named_parameters())
    for name, p in tm.named_parameters():
        np.testing.assert_allclose(rm.get_parameter(name).detach().numpy(),
                                   p.detach().numpy(), rtol=1e-6, err_msg=name)
    x = RNG.randn(4, 5).astype(np.float32)
    w = RNG.randn(4, 3).astype(np.float32)
    (tm(torch.tensor(x)) * torch.tensor(w)).sum().backward()
    (rm(retorch.tensor(x)) * retorch.tensor(w)).sum().backward()
    for name, p in tm.named_parameters():
        np.testing.assert_allclose(rm.get_parameter(name).grad.numpy(), p.grad.numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=name)
    torch.nn.utils.remove_weight_norm(tm)
    retorch.nn.utils.remove_weight_norm(rm)
    assert sorted(n for n, _ in rm.named_parameters()) == ["bias", "weight"]
    np.testing.assert_allclose(rm.weight.detach().numpy(), tm.weight.detach().numpy(),
                               rtol=1e-6)


def test_weight_norm_errors():
    m = retorch.nn.Linear(2, 2)
    retorch.nn.utils.weight_norm(m)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        retorch.nn.utils.weight_norm(m)
    with pytest.raises(ValueError, match="weight_norm of 'bias' not found"):
        retorch.nn.utils.remove_weight_norm(m, "bias")


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval_matches_torch_and_the_unfused_pair(transpose):
    mk = (lambda m: m.nn.ConvTranspose2d(3, 4, 3)) if transpose else \
        (lambda m: m.nn.Conv2d(3, 4, 3))
    tc, tb = mk(torch), torch.nn.BatchNorm2d(4)
    rc, rb = mk(retorch), retorch.nn.BatchNorm2d(4)
    with torch.no_grad():
        tb.running_mean.copy_(torch.tensor(RNG.randn(4).astype(np.float32)))
        tb.running_var.copy_(torch.tensor(RNG.rand(4).astype(np.float32) + 0.5))
        tb.weight.copy_(torch.tensor(RNG.randn(4).astype(np.float32)))
        tb.bias.copy_(torch.tensor(RNG.randn(4).astype(np.float32)))
    copy_params(tc, rc)
    copy_params(tb, rb)
    for m in (tc, tb, rc, rb):
        m.eval()
    tf = torch.nn.utils.fuse_conv_bn_eval(tc, tb, transpose)
    rf = retorch.nn.utils.fuse_conv_bn_eval(rc, rb, transpose)
    np.testing.assert_allclose(rf.weight.detach().numpy(), tf.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rf.bias.detach().numpy(), tf.bias.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    x = retorch.tensor(RNG.randn(2, 3, 6, 6).astype(np.float32))
    np.testing.assert_allclose(rf(x).detach().numpy(), rb(rc(x)).detach().numpy(), rtol=1e-4,
                               atol=1e-5)
    assert type(rf.weight).__name__ == "Parameter"
