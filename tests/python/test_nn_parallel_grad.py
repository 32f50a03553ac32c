"""nn.DataParallel, nn.parallel (DistributedDataParallel over one process), nn.SyncBatchNorm,
nn.grad and F.max_unpool1d/2d's checks against torch 1.13 on a machine without a GPU: values,
gradients, state_dict keys, attributes and errors."""
import warnings

import numpy as np
import pytest
import torch
import torch.distributed as tdist

import retorch
import retorch.distributed as rdist

LIBS = (torch, retorch)
TOL = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=1e-5, atol=1e-6)}


def _data(shape, dtype="float64", seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(dtype)


def run_both(fn, arrays):
    """[output, grads of sum(output * fixed weights) w.r.t. every array] for torch and
    retorch."""
    results = []
    for m in LIBS:
        ts = [m.tensor(a.copy(), requires_grad=True) for a in arrays]
        out = fn(m, *ts)
        res = [out.detach().numpy()]
        w = np.random.RandomState(99).randn(*res[0].shape).astype(res[0].dtype)
        (out * m.tensor(w)).sum().backward()
        res += [t.grad.numpy() for t in ts]
        results.append(res)
    return results


def assert_both_close(fn, arrays):
    want, got = run_both(fn, arrays)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"result {i}: shape {g.shape} != {w.shape}"
        np.testing.assert_allclose(g, w, err_msg=f"result {i}", **TOL[str(w.dtype)])


def raises_like_torch(fn, match=None):
    """fn(torch) and fn(retorch) raise the same exception type (retorch's matching `match`)."""
    with pytest.raises(Exception) as want:
        fn(torch)
    with pytest.raises(type(want.value), match=match):
        fn(retorch)


def same_linear(m, shape=(3, 2), seed=1):
    lin = m.nn.Linear(*shape).double()
    with m.no_grad():
        lin.weight.copy_(m.tensor(_data(shape[::-1], seed=seed)))
        lin.bias.copy_(m.tensor(_data(shape[1:], seed=seed + 1)))
    return lin


# DataParallel ---------------------------------------------------------------------------------
def test_nn_parallel_names_exist_as_in_torch():
    for name in ("DataParallel", "DistributedDataParallel", "data_parallel"):
        assert hasattr(torch.nn.parallel, name)
        assert hasattr(retorch.nn.parallel, name), name
    assert retorch.nn.DataParallel is retorch.nn.parallel.DataParallel
    assert issubclass(retorch.nn.DataParallel, retorch.nn.Module)
    assert issubclass(retorch.nn.parallel.DistributedDataParallel, retorch.nn.Module)


def test_data_parallel_without_a_gpu_calls_its_module():
    assert not torch.cuda.is_available() and not retorch.cuda.is_available()
    x = _data((4, 3))
    res = []
    for m in LIBS:
        lin = same_linear(m)
        dp = m.nn.DataParallel(lin, device_ids=[0, 1], output_device=1, dim=1)
        assert dp.module is lin and dp.device_ids == []
        # torch's CPU-only branch sets no dim or output_device.
        assert not hasattr(dp, "dim") and not hasattr(dp, "output_device")
        xt = m.tensor(x, requires_grad=True)
        y = dp(xt)
        y.sum().backward()
        res.append((y.detach().numpy(), lin.weight.grad.numpy(), xt.grad.numpy(),
                    list(dp.state_dict()), repr(dp), [n for n, _ in dp.named_parameters()]))
    (ty, tgw, tgx, tkeys, trepr, tnames), (ry, rgw, rgx, rkeys, rrepr, rnames) = res
    np.testing.assert_allclose(ry, ty, **TOL["float64"])
    np.testing.assert_allclose(rgw, tgw, **TOL["float64"])
    np.testing.assert_allclose(rgx, tgx, **TOL["float64"])
    assert rkeys == tkeys == ["module.weight", "module.bias"]
    assert rnames == tnames
    assert rrepr == trepr


def test_data_parallel_passes_keyword_arguments_and_loads_torch_state():
    class Scale:
        def __init__(self, m):
            class S(m.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = m.nn.Linear(3, 2)

                def forward(self, x, scale=1.0):
                    return self.lin(x) * scale
            self.module = S()

    tdp = torch.nn.DataParallel(Scale(torch).module)
    rdp = retorch.nn.DataParallel(Scale(retorch).module)
    state = {k: retorch.tensor(v.numpy()) for k, v in tdp.state_dict().items()}
    assert list(state) == ["module.lin.weight", "module.lin.bias"]
    rdp.load_state_dict(state)
    x = _data((5, 3), "float32")
    np.testing.assert_allclose(rdp(retorch.tensor(x), scale=3.0).detach().numpy(),
                               tdp(torch.tensor(x), scale=3.0).detach().numpy(),
                               **TOL["float32"])


def test_functional_data_parallel_needs_a_gpu_as_torch_does():
    lin = lambda m: m.nn.Linear(3, 2)  # noqa: E731
    raises_like_torch(lambda m: m.nn.parallel.data_parallel(lin(m), m.ones(2, 3)),
                      "no GPU is available")
    raises_like_torch(lambda m: m.nn.parallel.data_parallel(lin(m), m.ones(2, 3), [0]),
                      "no GPU is available")


def test_data_parallel_refuses_to_fake_a_multi_gpu_split(monkeypatch):
    monkeypatch.setattr(retorch.cuda, "is_available", lambda: True)
    with pytest.raises(NotImplementedError, match="several GPUs .* not implemented"):
        retorch.nn.DataParallel(retorch.nn.Linear(3, 2))
    with pytest.raises(NotImplementedError, match="not implemented"):
        retorch.nn.parallel.data_parallel(retorch.nn.Linear(3, 2), retorch.ones(2, 3))


# DistributedDataParallel ----------------------------------------------------------------------
@pytest.fixture
def groups(tmp_path):
    """torch's and retorch's default groups, one process each."""
    tdist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0,
                             world_size=1)
    rdist.init_process_group("gloo")
    yield
    tdist.destroy_process_group()
    rdist.destroy_process_group()


class _TwoHeads:
    """A module class per library whose forward uses only `a` (b is the unused parameter)."""

    def __init__(self, m):
        class TwoHeads(m.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = same_linear(m, (3, 3), 1)
                self.b = same_linear(m, (3, 3), 3)

            def forward(self, x):
                return self.a(x)
        self.cls = TwoHeads


def test_ddp_needs_an_initialized_group():
    assert not tdist.is_initialized() and not rdist.is_initialized()
    raises_like_torch(lambda m: m.nn.parallel.DistributedDataParallel(m.nn.Linear(3, 2)),
                      "Default process group has not been initialized")


def test_ddp_constructor_checks_like_torch(groups):
    DDP = lambda m: m.nn.parallel.DistributedDataParallel  # noqa: E731
    raises_like_torch(lambda m: DDP(m)(m.nn.ReLU()), "not needed when a module doesn't have")
    frozen = lambda m: m.nn.Linear(3, 2).requires_grad_(False)  # noqa: E731
    raises_like_torch(lambda m: DDP(m)(frozen(m)), "any parameter that requires a gradient")
    raises_like_torch(lambda m: DDP(m)(m.nn.Linear(3, 2), device_ids=[0, 1]),
                      "device_ids can only be None or contain a single element")
    raises_like_torch(lambda m: DDP(m)(m.nn.Linear(3, 2), device_ids=[0]),
                      "only work with single-device/multiple-device GPU modules or CPU")
    raises_like_torch(lambda m: DDP(m)(m.nn.Linear(3, 2), output_device=1),
                      "output_device 1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raises_like_torch(lambda m: DDP(m)(m.nn.LazyLinear(3)), "uninitialized parameters")
    for m in LIBS:
        with pytest.warns(UserWarning, match="`check_reduction` argument"):
            DDP(m)(m.nn.Linear(3, 2), check_reduction=True)


def test_ddp_attributes_state_dict_and_gradients_match_torch(groups):
    x = _data((4, 3))
    got = []
    for m in LIBS:
        lin = same_linear(m)
        d = m.nn.parallel.DistributedDataParallel(lin, bucket_cap_mb=2, static_graph=True)
        attrs = (d.device_ids, d.output_device, d.dim, d.broadcast_buffers,
                 d.find_unused_parameters, d.require_backward_grad_sync,
                 d.require_forward_param_sync, d.gradient_as_bucket_view, d.static_graph,
                 d.bucket_bytes_cap, d.broadcast_bucket_size, d.parameters_to_ignore,
                 str(d.device), d.module is lin)
        xt = m.tensor(x, requires_grad=True)
        for _ in range(2):  # the second synced iteration checks the first one's reduction
            y = d(xt)
            (y * y).sum().backward()
        got.append((attrs, list(d.state_dict()), repr(d), y.detach().numpy(),
                    lin.weight.grad.numpy(), lin.bias.grad.numpy(), xt.grad.numpy()))
    (ta, tk, tr, *tv), (ra, rk, rr, *rv) = got
    assert ra == ta
    assert rk == tk == ["module.weight", "module.bias"]
    assert rr == tr
    for g, w in zip(rv, tv):
        np.testing.assert_allclose(g, w, **TOL["float64"])


def test_ddp_raises_torchs_error_for_parameters_without_gradients(groups):
    x = lambda m: m.tensor(_data((2, 3)))  # noqa: E731

    def unused(m):
        d = m.nn.parallel.DistributedDataParallel(_TwoHeads(m).cls())
        d(x(m)).sum().backward()
        with m.no_grad():
            d(x(m))  # a forward without grad does not check the previous backward
        d(x(m))

    raises_like_torch(unused, r"(?s)Expected to have finished reduction in the prior "
                      r"iteration.*find_unused_parameters=True.*for rank 0: 2 3")

    def unsynced_then_synced(m):
        d = m.nn.parallel.DistributedDataParallel(_TwoHeads(m).cls())
        with d.no_sync():
            for _ in range(2):
                d(x(m)).sum().backward()
        assert d.require_backward_grad_sync
        d(x(m)).sum().backward()  # no error: the no_sync backwards are not checked
        d(x(m))

    raises_like_torch(unsynced_then_synced, "Expected to have finished reduction")

    for m in LIBS:  # none of these raise, in torch or here
        d = m.nn.parallel.DistributedDataParallel(_TwoHeads(m).cls(),
                                                  find_unused_parameters=True)
        for _ in range(3):
            d(x(m)).sum().backward()
        assert d.module.b.weight.grad is None
        mod = _TwoHeads(m).cls()
        mod.b.requires_grad_(False)
        d = m.nn.parallel.DistributedDataParallel(mod)
        for _ in range(3):
            d(x(m)).sum().backward()
        d = m.nn.parallel.DistributedDataParallel(m.nn.Linear(3, 3).double())
        d(x(m))
        d(x(m)).sum().backward()  # forwards without a backward in between are fine
        d(x(m))


# SyncBatchNorm --------------------------------------------------------------------------------
def test_sync_batch_norm_defaults_state_dict_and_repr_match_torch():
    got = []
    for m in LIBS:
        for kw in ({}, dict(eps=1e-3, momentum=None, affine=False, track_running_stats=False,
                            process_group="pg")):
            s = m.nn.SyncBatchNorm(5, **kw)
            got.append((m.__name__, repr(s), list(s.state_dict()), s.process_group, s.eps,
                        s.momentum, s.affine, s.track_running_stats, s.training))
    t, r = got[:2], got[2:]
    assert [g[1:] for g in r] == [g[1:] for g in t]
    assert isinstance(retorch.nn.SyncBatchNorm(2), retorch.nn.modules.normalization._BatchNorm)


@pytest.mark.parametrize("train", [True, False])
def test_sync_batch_norm_refuses_cpu_input_as_torch_does(train):
    def fwd(m, shape=(4, 3, 2)):
        s = m.nn.SyncBatchNorm(3).train(train)
        return s(m.ones(*shape))
    raises_like_torch(fwd, "^SyncBatchNorm expected input tensor to be on GPU$")
    raises_like_torch(lambda m: fwd(m, (3,)), "expected input tensor to be on GPU")


def test_convert_sync_batchnorm_shares_parameters_and_buffers():
    def build(m):
        seq = m.nn.Sequential(
            m.nn.Conv2d(3, 4, 1), m.nn.BatchNorm2d(4),
            m.nn.Sequential(m.nn.BatchNorm1d(2, affine=False, momentum=None), m.nn.ReLU()),
            m.nn.BatchNorm3d(3, eps=1e-3, track_running_stats=False), m.nn.InstanceNorm2d(3))
        with m.no_grad():
            seq[0].weight.copy_(m.tensor(_data((4, 3, 1, 1), "float32", 4)))
            seq[0].bias.copy_(m.tensor(_data((4,), "float32", 5)))
            seq[1].weight.copy_(m.tensor(_data((4,), "float32")))
            seq[1].running_mean.copy_(m.tensor(_data((4,), "float32", 2)))
            seq[1].num_batches_tracked.fill_(7)
        return seq.eval()

    got = []
    for m in LIBS:
        seq = build(m)
        old = [seq[1].weight, seq[1].bias, seq[1].running_mean, seq[1].running_var,
               seq[1].num_batches_tracked, seq[2][0].running_mean, seq[0].weight]
        c = m.nn.SyncBatchNorm.convert_sync_batchnorm(seq, process_group="pg")
        assert c is seq  # a container is kept; its batch norms are swapped
        new = [c[1].weight, c[1].bias, c[1].running_mean, c[1].running_var,
               c[1].num_batches_tracked, c[2][0].running_mean, c[0].weight]
        assert all(a is b for a, b in zip(old, new))
        state = c.state_dict()
        got.append(([type(c[i]).__name__ for i in range(5)], type(c[2][0]).__name__,
                     [c[i].training for i in range(5)], c[1].process_group, c[3].eps,
                     c[3].track_running_stats, c[2][0].momentum, c[2][0].affine, repr(c),
                     list(state), {k: v.numpy() for k, v in state.items()}))
        bare = m.nn.SyncBatchNorm.convert_sync_batchnorm(m.nn.BatchNorm1d(3))
        assert type(bare) is m.nn.SyncBatchNorm and bare.process_group is None
    t, r = got
    assert r[:-1] == t[:-1]
    assert r[0] == ["Conv2d", "SyncBatchNorm", "Sequential", "SyncBatchNorm", "InstanceNorm2d"]
    for k in t[-1]:
        np.testing.assert_array_equal(r[-1][k], t[-1][k], err_msg=k)


# nn.grad --------------------------------------------------------------------------------------
_SPATIAL = {1: ((11,), (3,)), 2: ((9, 8), (3, 2)), 3: ((7, 8, 6), (3, 2, 2))}
_CONFIGS = [(1, 0, 1, 1), (2, 1, 1, 2), (2, 0, 2, 1), (3, 2, 1, 2), ((2, 1, 1), 1, 1, 1)]


def _conv_case(n, stride, padding, dilation, groups):
    size, k = _SPATIAL[n]
    if isinstance(stride, tuple):
        stride = stride[:n]
    x, w = _data((2, 4) + size), _data((6, 4 // groups) + k, seed=1)
    conv = getattr(torch.nn.functional, f"conv{n}d")
    go_shape = conv(torch.tensor(x), torch.tensor(w), None, stride, padding, dilation,
                    groups).shape
    return x, w, _data(tuple(go_shape), seed=2), stride


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("stride,padding,dilation,groups", _CONFIGS)
def test_conv_input_grad_and_its_gradients_match_torch(n, stride, padding, dilation, groups):
    x, w, go, stride = _conv_case(n, stride, padding, dilation, groups)
    fn = f"conv{n}d_input"
    assert_both_close(lambda m, wt, gt: getattr(m.nn.grad, fn)(x.shape, wt, gt, stride, padding,
                                                               dilation, groups), [w, go])


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("stride,padding,dilation,groups", _CONFIGS)
def test_conv_weight_grad_and_its_gradients_match_torch(n, stride, padding, dilation, groups):
    x, w, go, stride = _conv_case(n, stride, padding, dilation, groups)
    fn = f"conv{n}d_weight"
    assert_both_close(lambda m, xt, gt: getattr(m.nn.grad, fn)(xt, w.shape, gt, stride, padding,
                                                               dilation, groups), [x, go])


def test_conv_grads_equal_autograd_of_the_convolution():
    x, w, go, _ = _conv_case(2, 2, 1, 1, 2)
    xt, wt = retorch.tensor(x, requires_grad=True), retorch.tensor(w, requires_grad=True)
    retorch.nn.functional.conv2d(xt, wt, None, 2, 1, 1, 2).backward(retorch.tensor(go))
    gi = retorch.nn.grad.conv2d_input(list(x.shape), retorch.tensor(w), retorch.tensor(go),
                                      stride=[2, 2], padding=1, groups=2)
    gw = retorch.nn.grad.conv2d_weight(retorch.tensor(x), tuple(w.shape), retorch.tensor(go),
                                       stride=2, padding=(1, 1), groups=2)
    np.testing.assert_allclose(gi.numpy(), xt.grad.numpy(), **TOL["float64"])
    np.testing.assert_allclose(gw.numpy(), wt.grad.numpy(), **TOL["float64"])


def test_conv_grad_errors_match_torch():
    w, go = _data((6, 2, 3)), _data((2, 6, 4))
    x = _data((2, 4, 9))

    def inp(size, weight=w, grad=go, stride=2, padding=0, dilation=1, groups=2):
        return lambda m: m.nn.grad.conv1d_input(size, m.tensor(weight), m.tensor(grad), stride,
                                                padding, dilation, groups)

    raises_like_torch(inp((4, 9), grad=go[0]), r"Expected 3-dimensional input for "
                      r"3-dimensional weight \[6, 2, 3\], but got 2-dimensional input")
    raises_like_torch(inp((2, 4, 9), groups=1), r"Given groups=1, weight of size \[6, 2, 3\], "
                      r"expected input\[2, 4, 9\] to have 2 channels, but got 4 channels")
    raises_like_torch(inp((2, 4, 9), weight=_data((5, 2, 3))), "expected weight to be divisible")
    raises_like_torch(inp((2, 4, 9), stride=(2, 2)), "a list of 1 values to match")
    raises_like_torch(inp((2, 4, 9), padding=-1), "negative padding is not supported")
    raises_like_torch(inp((2, 4, 9), stride=0), "non-positive stride is not supported")
    raises_like_torch(inp((2, 4, 2)), "Kernel size can't be greater than actual input size")
    # A grad_output that is not the convolution's output (torch: a shape error of its kernel).
    raises_like_torch(inp((2, 4, 9), grad=go[:, :, :3]), r"grad_output of size \[2, 6, 3\] "
                      r"does not match the output size \[2, 6, 4\]")
    raises_like_torch(inp((2, 4, 12)), "does not match the output size")
    raises_like_torch(lambda m: m.nn.grad.conv1d_weight(m.tensor(x), (6, 2, 3),
                                                        m.tensor(go[:, :5]), 2, 0, 1, 2),
                      "does not match the output size")
    raises_like_torch(lambda m: m.nn.grad.conv1d_weight(m.tensor(x[0]), (6, 2, 3),
                                                        m.tensor(go[0]), 2, 0, 1, 2),
                      "Expected 3-dimensional input")
    raises_like_torch(lambda m: m.nn.grad.conv2d_input(
        (2, 4, 9, 9), m.tensor(_data((6, 2, 3, 3))), m.tensor(_data((2, 6, 4, 4))),
        (2, 2, 2), 0, 1, 2), "a list of 2 values to match")


# max_unpool1d / max_unpool2d ------------------------------------------------------------------
def _pooled(m, shape, k, n, dtype="float64"):
    pool = m.nn.functional.max_pool2d if n == 2 else m.nn.functional.max_pool1d
    return pool(m.tensor(_data(shape, dtype, 3)), k, return_indices=True)


@pytest.mark.parametrize("n,shape,k,s,p,size", [
    (2, (2, 3, 6, 8), 2, None, 0, None), (2, (2, 3, 6, 7), 2, None, 0, (7, 7)),
    (2, (3, 6, 7), (3, 2), (2, 2), (1, 0), [1, 3, 6, 7]), (1, (2, 3, 9), 3, 2, 1, None),
    (1, (3, 9), 3, 2, 0, [10]), (1, (2, 3, 9), 3, 3, 0, (2, 3, 10))])
def test_max_unpool_values_and_gradients_match_torch(n, shape, k, s, p, size):
    def fn(m, v):
        pool = m.nn.functional.max_pool2d if n == 2 else m.nn.functional.max_pool1d
        out, idx = pool(v, k, s, p, return_indices=True)
        unpool = m.nn.functional.max_unpool2d if n == 2 else m.nn.functional.max_unpool1d
        return unpool(out, idx, k, s, p, size)
    assert_both_close(fn, [_data(shape)])


def test_max_unpool2d_checks_like_torch():
    unpool = lambda m, size=None, cut=lambda t: t, icut=None, **kw: (  # noqa: E731
        m.nn.functional.max_unpool2d(
            cut(_pooled(m, (1, 2, 4, 4), 2, 2, **kw)[0]),
            (icut or cut)(_pooled(m, (1, 2, 4, 4), 2, 2, **kw)[1]), 2, output_size=size))
    raises_like_torch(lambda m: unpool(m, (6, 5)),
                      r'^invalid output_size "\(6, 5\)" \(dim 0 must be between 2 and 6\)$')
    raises_like_torch(lambda m: unpool(m, [1, 2, 6, 5]), r'^invalid output_size "\[6, 5\]"')
    raises_like_torch(lambda m: unpool(m, (2,)), "sequence containing 2 or 4 elements, but it "
                      "has a length of '1'")
    raises_like_torch(lambda m: unpool(m, 5), "has no len")
    raises_like_torch(lambda m: unpool(m, (3, 3)), r"^Found an invalid max index: 15 \(output "
                      r"volumes are of size 3x3$")
    raises_like_torch(lambda m: unpool(m, icut=lambda t: t + 20),
                      r"^Found an invalid max index: 35 \(")
    raises_like_torch(lambda m: unpool(m, icut=lambda t: t - 20),
                      r"^Found an invalid max index: -5 \(")
    raises_like_torch(lambda m: unpool(m, cut=lambda t: t[0, 0]), "should be a 3d or 4d "
                      "Tensor, but got a tensor with 2 dimensions")
    raises_like_torch(lambda m: unpool(m, cut=lambda t: t[None]), "with 5 dimensions")
    raises_like_torch(lambda m: unpool(m, icut=lambda t: t[:, :1]), r"Expected shape of indices "
                      r"to be same as that of the input tensor \(\[1, 2, 2, 2\]\) but got "
                      r"indices tensor with shape: \[1, 1, 2, 2\]")
    raises_like_torch(lambda m: unpool(m, icut=lambda t: t.int()), "^elements in indices should "
                      "be type int64 but got: Int$")
    raises_like_torch(lambda m: unpool(m, cut=lambda t: t[:, :0]), r"non-zero size for "
                      r"non-batch dimensions, but got \[1, 0, 2, 2\] with dimension 1 being empty")
    raises_like_torch(lambda m: m.nn.functional.max_unpool2d(
        _pooled(m, (1, 2, 4, 4), 2, 2)[0].half(), _pooled(m, (1, 2, 4, 4), 2, 2)[1], 2),
        "\"max_unpool2d\" not implemented for 'Half'")
    for m in LIBS:  # an empty batch and a float64 input are fine
        out, idx = _pooled(m, (1, 2, 4, 4), 2, 2)
        assert tuple(m.nn.functional.max_unpool2d(out[:0], idx[:0], 2).shape) == (0, 2, 4, 4)
        assert m.nn.functional.max_unpool2d(out.double(), idx, 2).dtype == m.float64


def test_max_unpool1d_checks_like_torch_as_the_2d_op():
    unpool = lambda m, size=None, cut=lambda t: t, icut=None: (  # noqa: E731
        m.nn.functional.max_unpool1d(cut(_pooled(m, (2, 3, 9), 3, 1)[0]),
                                     (icut or cut)(_pooled(m, (2, 3, 9), 3, 1)[1]), 3,
                                     output_size=size))
    raises_like_torch(lambda m: unpool(m, [12]), r'^invalid output_size "\[12\]" \(dim 0 must '
                      r"be between 6 and 12\)$")
    raises_like_torch(lambda m: unpool(m, [2, 9]), "containing 1 or 3 elements, but it has a "
                      "length of '2'")
    raises_like_torch(lambda m: unpool(m, cut=lambda t: t[0, 0]), "max_unpooling2d should be a "
                      "3d or 4d Tensor, but got a tensor with 2 dimensions")
    raises_like_torch(lambda m: unpool(m, icut=lambda t: t + 20), r"^Found an invalid max "
                      r"index: 28 \(output volumes are of size 9x1$")
    for m in LIBS:
        out, idx = _pooled(m, (2, 3, 9), 3, 1)
        assert tuple(m.nn.functional.max_unpool1d(out[0], idx[0], 3).shape) == (3, 9)
