"""retorch.utils.checkpoint, retorch.testing, retorch.random, retorch.utils.hooks,
retorch.multiprocessing, utils.data.DistributedSampler, the jit annotation names and nn.init's
deprecated aliases, against torch 1.13 (values, gradients, warnings and messages)."""
import collections
import math
import os
import pickle
import typing
import warnings

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as torch_ckpt
import torch.utils.hooks as torch_hooks
from torch.utils.data.distributed import DistributedSampler as TorchDistributedSampler

import api_modules_workers as workers
import retorch
import retorch.multiprocessing as rmp
from retorch.utils import checkpoint as ret_ckpt
from retorch.utils import hooks as ret_hooks

LIBS = (torch, retorch)
CKPT = {torch: torch_ckpt, retorch: ret_ckpt}


def error_of(fn, m):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(m)
        except Exception as e:  # noqa: BLE001  (the type and text are what is compared)
            return type(e).__name__, str(e)
    return None


def warnings_of(fn, m):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn(m)
    return [(w_.category.__name__, str(w_.message)) for w_ in w]


# checkpoint ----------------------------------------------------------------------------------
W1 = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
B1 = np.random.default_rng(1).standard_normal(5).astype(np.float32)
W2 = np.random.default_rng(2).standard_normal((3, 5)).astype(np.float32)
X = np.random.default_rng(3).standard_normal((6, 4)).astype(np.float32)


def mlp(m):
    net = m.nn.Sequential(m.nn.Linear(4, 5), m.nn.Tanh(), m.nn.Linear(5, 3, bias=False),
                          m.nn.Sigmoid())
    with m.no_grad():
        net[0].weight.copy_(m.tensor(W1))
        net[0].bias.copy_(m.tensor(B1))
        net[2].weight.copy_(m.tensor(W2))
    return net


def grads_of(m, run, x_requires_grad=True):
    """Output and gradients (input, parameters) of loss = sum(run(net, x) ** 2)."""
    net = mlp(m)
    x = m.tensor(X, requires_grad=x_requires_grad)
    out = run(net, x)
    (out ** 2).sum().backward()
    grads = [p.grad.numpy().copy() for p in net.parameters()]
    return [out.detach().numpy()] + ([x.grad.numpy()] if x_requires_grad else []) + grads


def assert_all_close(got, want, rtol=1e-5, atol=1e-6):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_gradients_match_plain_run_and_torch(reentrant):
    results = {}
    for m in LIBS:
        plain = grads_of(m, lambda net, x: net(x))
        ck = grads_of(m, lambda net, x: CKPT[m].checkpoint(net, x, use_reentrant=reentrant))
        assert_all_close(ck, plain)
        results[m] = ck
    assert_all_close(results[retorch], results[torch])


def test_checkpoint_keeps_no_activations_in_forward():
    net = mlp(retorch)
    x = retorch.tensor(X, requires_grad=True)
    out = ret_ckpt.checkpoint(net, x)
    assert out.requires_grad and out.grad_fn is not None
    assert out.grad_fn.name() == "CheckpointFunctionBackward"
    # the recorded graph is the one checkpoint node, whose only edge goes to x's leaf: none of
    # the layers' ops (which would hold their activations) were recorded
    ((edge, _),) = out.grad_fn.next_functions
    assert edge.name() == "AccumulateGrad"
    assert net(x).grad_fn.name() == "SigmoidBackward0"  # what a plain run records


def dropout_run(m, reentrant, use_checkpoint, preserve=True):
    m.manual_seed(0)
    net = mlp(m)
    x = m.tensor(X, requires_grad=True)

    def f(a):
        return m.nn.functional.dropout(net(a), 0.5, training=True)
    m.manual_seed(11)
    out = (CKPT[m].checkpoint(f, x, use_reentrant=reentrant, preserve_rng_state=preserve)
           if use_checkpoint else f(x))
    state_before_backward = m.get_rng_state().clone()
    (out * out).sum().backward()
    # with preserve_rng_state, fork_rng restores the generator the recomputation used
    assert m.equal(m.get_rng_state(), state_before_backward) == preserve
    return [out.detach().numpy(), x.grad.numpy(), net[0].weight.grad.numpy()]


@pytest.mark.parametrize("m", LIBS, ids=["torch", "retorch"])
@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_replays_dropout_masks(m, reentrant):
    assert_all_close(dropout_run(m, reentrant, True), dropout_run(m, reentrant, False))


@pytest.mark.parametrize("m", LIBS, ids=["torch", "retorch"])
def test_checkpoint_without_preserved_rng_draws_new_masks(m):
    ck = dropout_run(m, True, True, preserve=False)
    plain = dropout_run(m, True, False)
    np.testing.assert_allclose(ck[0], plain[0])  # the forward is the same draw
    assert not np.allclose(ck[1], plain[1])  # the recomputation drew another mask


def test_checkpoint_reentrant_warns_when_no_input_requires_grad():
    msgs = {}
    for m in LIBS:
        net = mlp(m)
        x = m.tensor(X)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = CKPT[m].checkpoint(net, x)
        msgs[m] = [str(i.message) for i in w if "requires_grad" in str(i.message)]
        assert not out.requires_grad
    assert msgs[retorch] == msgs[torch] == [
        "None of the inputs have requires_grad=True. Gradients will be None"]


def test_checkpoint_non_reentrant_gives_parameter_grads_without_input_grad():
    results = {}
    for m in LIBS:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "None of the inputs" warning here
            results[m] = grads_of(m, lambda net, x: CKPT[m].checkpoint(net, x,
                                                                       use_reentrant=False),
                                  x_requires_grad=False)
    assert_all_close(results[retorch], results[torch])


def test_checkpoint_keyword_arguments():
    def run(m, reentrant):
        net = mlp(m)
        x = m.tensor(X, requires_grad=True)
        out = CKPT[m].checkpoint(lambda a, scale: net(a) * scale, x, scale=3.0,
                                 use_reentrant=reentrant)
        out.sum().backward()
        return [out.detach().numpy(), x.grad.numpy()]
    assert error_of(lambda m: run(m, True), torch) == error_of(lambda m: run(m, True), retorch) \
        == ("ValueError", "Unexpected keyword arguments: scale")
    assert_all_close(run(retorch, False), run(torch, False))


def test_checkpoint_non_tensor_arguments_and_tuple_outputs():
    def run(m):
        x = m.tensor(X, requires_grad=True)
        y = m.tensor(X[::-1].copy(), requires_grad=True)
        a, b = CKPT[m].checkpoint(lambda p, k, q: (p * k + q, (p * q).tanh()), x, 2.5, y)
        (a.sum() + (b * b).sum()).backward()
        return [a.detach().numpy(), b.detach().numpy(), x.grad.numpy(), y.grad.numpy()]
    assert_all_close(run(retorch), run(torch))


def test_checkpoint_output_without_grad_raises_in_backward():
    def run(m):
        x = m.tensor(X, requires_grad=True)
        CKPT[m].checkpoint(lambda a: a.detach() * 2, x).sum().backward()
    want = error_of(run, torch)
    assert want == ("RuntimeError",
                    "none of output has requires_grad=True, this checkpoint() is not necessary")
    assert error_of(run, retorch) == want


def test_checkpoint_non_reentrant_works_with_autograd_grad():
    def run(m):
        net = mlp(m)
        x = m.tensor(X, requires_grad=True)
        out = CKPT[m].checkpoint(net, x, use_reentrant=False)
        (g,) = m.autograd.grad((out ** 2).sum(), [x])
        return [g.numpy()]
    assert_all_close(run(retorch), run(torch))


@pytest.mark.parametrize("segments", [1, 2, 4])
def test_checkpoint_sequential_matches_plain_run_and_torch(segments):
    results = {}
    for m in LIBS:
        plain = grads_of(m, lambda net, x: net(x))
        ck = grads_of(m, lambda net, x: CKPT[m].checkpoint_sequential(net, segments, x))
        assert_all_close(ck, plain)
        results[m] = ck
    assert_all_close(results[retorch], results[torch])
    ck = grads_of(retorch, lambda net, x: ret_ckpt.checkpoint_sequential(
        list(net.children()), segments, x, use_reentrant=False, preserve_rng_state=False))
    assert_all_close(ck, results[torch])


def test_checkpoint_sequential_rejects_unknown_keywords():
    def run(m):
        CKPT[m].checkpoint_sequential(mlp(m), 2, m.tensor(X), scale=2)
    assert error_of(run, retorch) == error_of(run, torch) == (
        "ValueError", "Unexpected keyword arguments: scale")


def test_checkpoint_helpers():
    for m in LIBS:
        x = m.ones(2, requires_grad=True)
        out = CKPT[m].detach_variable((x, 3))
        assert out[1] == 3 and out[0].requires_grad and out[0].is_leaf and out[0] is not x
    assert error_of(lambda m: CKPT[m].detach_variable([1]), retorch) == \
        error_of(lambda m: CKPT[m].detach_variable([1]), torch)
    assert ret_ckpt.get_device_states(retorch.ones(1)) == ([], [])


# testing -------------------------------------------------------------------------------------
def normalized(err):
    if err is None:
        return None
    kind, text = err
    return kind, text.replace("retorch._C.Tensor", "torch.Tensor").replace(
        "retorch.nn.parameter", "torch.nn.parameter")


ASSERT_CLOSE_CASES = [
    (lambda m: m.tensor([1., 2., 3., 4.]), lambda m: m.tensor([1., 2., 3., 4.5]), {}),
    (lambda m: m.tensor([[1., 2.], [3., 4.]]), lambda m: m.tensor([[1., 2.5], [3., 0.]]), {}),
    (lambda m: m.tensor([1, 2, 3]), lambda m: m.tensor([1, 2, 4]), {}),
    (lambda m: m.tensor([1., 2.]), lambda m: m.tensor([1., 2.], dtype=m.float64), {}),
    (lambda m: m.tensor([1., 2.]), lambda m: m.tensor([1., 2., 3.]), {}),
    (lambda m: m.tensor(1.5), lambda m: m.tensor(1.0), {}),
    (lambda m: 1.0, lambda m: 1.1, {}),
    (lambda m: 1, lambda m: 1.0, {}),
    (lambda m: 1, lambda m: 1.0, {"check_dtype": False}),
    (lambda m: [m.tensor([1.]), {"a": m.tensor([2.])}],
     lambda m: [m.tensor([1.]), {"a": m.tensor([3.])}], {}),
    (lambda m: {"a": 1, "c": 2}, lambda m: {"b": 1, "c": 2}, {}),
    (lambda m: [1, 2], lambda m: [1], {}),
    (lambda m: (1, 2), lambda m: [1, 2], {}),
    (lambda m: m.tensor([1.]), lambda m: np.array([1.]), {}),
    (lambda m: np.array([1., 2.]), lambda m: np.array([1., 2.5]), {}),
    (lambda m: m.tensor([1.]), lambda m: m.tensor([1.1]), {"rtol": 0.2}),
    (lambda m: m.tensor([1.]), lambda m: m.tensor([1.1]), {"rtol": 0.2, "atol": 0}),
    (lambda m: m.tensor([1.]), lambda m: m.tensor([1.1]), {"rtol": 0, "atol": 0.01}),
    (lambda m: m.tensor([float("nan")]), lambda m: m.tensor([float("nan")]), {}),
    (lambda m: m.tensor([float("nan")]), lambda m: m.tensor([float("nan")]), {"equal_nan": True}),
    (lambda m: m.tensor([1., 2.]), lambda m: m.tensor([1., 3.]), {"msg": "custom"}),
    (lambda m: m.tensor([1., 2.]), lambda m: m.tensor([1., 3.]), {"msg": lambda s: "H\n" + s}),
    (lambda m: m.ones(2, 3).t(), lambda m: m.ones(3, 2), {"check_stride": True}),
    (lambda m: m.ones(2, 3).t(), lambda m: m.ones(3, 2), {}),
    (lambda m: m.tensor([1., 2.]), lambda m: m.tensor([1, 2]), {"check_dtype": False}),
    (lambda m: m.tensor([1., 2.5]), lambda m: m.tensor([1, 2]), {"check_dtype": False}),
    (lambda m: m.tensor([True, False]), lambda m: m.tensor([True, True]), {}),
    (lambda m: None, lambda m: m.tensor([1.]), {}),
    (lambda m: None, lambda m: None, {}),
    (lambda m: True, lambda m: False, {}),
    (lambda m: m.tensor([0., 1.]), lambda m: m.tensor([1., 0.]), {}),
    (lambda m: m.tensor([float("inf"), 1.]), lambda m: m.tensor([1., 1.]), {}),
    (lambda m: m.tensor([float("inf")]), lambda m: m.tensor([float("inf")]), {}),
    (lambda m: (1.0, m.tensor([1., 2.])), lambda m: (1.0, m.tensor([1., 2.1])), {}),
    (lambda m: m.nn.Parameter(m.ones(1)), lambda m: m.ones(1), {"allow_subclasses": False}),
    (lambda m: m.nn.Parameter(m.ones(1)), lambda m: m.ones(1), {}),
    (lambda m: m.tensor([1.]), lambda m: 1.0, {}),
    (lambda m: "ab", lambda m: "ac", {}),
    (lambda m: m.arange(24.).reshape(2, 3, 4), lambda m: m.arange(24.).reshape(2, 3, 4) * 1.5, {}),
    (lambda m: m.zeros(3, dtype=m.int32), lambda m: m.tensor([0, 5, -7], dtype=m.int32), {}),
]


@pytest.mark.parametrize("case", range(len(ASSERT_CLOSE_CASES)))
def test_assert_close_results_and_messages_match_torch(case):
    a, e, kw = ASSERT_CLOSE_CASES[case]

    def run(m):
        m.testing.assert_close(a(m), e(m), **kw)
    assert normalized(error_of(run, retorch)) == error_of(run, torch)


def test_assert_close_key_message_lines():
    with pytest.raises(AssertionError) as info:
        retorch.testing.assert_close(retorch.tensor([1., 2., 3., 4.]),
                                     retorch.tensor([1., 2., 3., 5.]))
    text = str(info.value)
    assert text.startswith("Tensor-likes are not close!")
    assert "Mismatched elements: 1 / 4 (25.0%)" in text
    assert "Greatest absolute difference: 1.0 at index (3,) (up to 1e-05 allowed)" in text
    assert "Greatest relative difference: 0.2 at index (3,) (up to 1.3e-06 allowed)" in text
    with pytest.raises(AssertionError, match=r"The values for attribute 'dtype' do not match: "
                                             r"torch.float32 != torch.float64."):
        retorch.testing.assert_close(retorch.ones(1), retorch.ones(1, dtype=retorch.float64))


# (dtype, passing offset, failing offset) around the default tolerance at 1.0
TOLERANCE_CASES = [("float16", 2 ** -10, 2 ** -9), ("bfloat16", 2 ** -6, 3 * 2 ** -7),
                   ("float32", 1e-5, 2e-5), ("float64", 1.5e-7, 3e-7), ("int64", 0, 1),
                   ("int8", 0, 1), ("uint8", 0, 1)]


@pytest.mark.parametrize("dtype,ok,bad", TOLERANCE_CASES)
def test_assert_close_default_tolerances(dtype, ok, bad):
    for m in LIBS:
        dt = getattr(m, dtype)
        one = m.ones(3, dtype=dt)
        m.testing.assert_close(one + ok if ok else one.clone(), one)
        with pytest.raises(AssertionError, match="not (close|equal)!"):
            m.testing.assert_close((one.double() + bad).to(dt), one)


def test_assert_close_tolerances_must_come_together():
    def run(m):
        m.testing.assert_close(m.ones(1), m.ones(1), atol=1e-3)
    assert error_of(run, retorch) == error_of(run, torch) == (
        "ValueError", "Both 'rtol' and 'atol' must be either specified or omitted, but got no "
        "rtol.")


def test_assert_allclose_is_deprecated_and_lenient():
    def run(m):
        m.testing.assert_allclose(m.tensor([1., float("nan")]), [1.00001, float("nan")])
        m.testing.assert_allclose(m.tensor([1., 2.], dtype=m.float64), m.tensor([1., 2.]))
    assert warnings_of(run, retorch) == warnings_of(run, torch)
    assert warnings_of(run, retorch)[0][0] == "FutureWarning"

    def fails(m):
        m.testing.assert_allclose(m.tensor([1., 2.]), [1., 2.1], msg="no")
    assert error_of(fails, retorch) == error_of(fails, torch) == ("AssertionError", "no")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int8",
                                   "uint8", "int32", "bool"])
def test_make_tensor_ranges_and_flags(dtype):
    for m in LIBS:
        dt = getattr(m, dtype)
        t = m.testing.make_tensor(4, 50, dtype=dt, device="cpu")
        assert tuple(t.shape) == (4, 50) and t.dtype == dt and t.is_contiguous()
        v = t.double().numpy() if dtype != "bool" else t.numpy()
        if dtype == "bool":
            assert set(np.unique(v)) <= {False, True}
        elif dtype == "uint8":
            assert v.min() >= 0 and v.max() < 10
        elif dt.is_floating_point:
            assert v.min() >= -9 and v.max() <= 9
        else:
            assert v.min() >= -9 and v.max() < 10
        nc = m.testing.make_tensor((3, 4), dtype=dt, device="cpu", noncontiguous=True,
                                   exclude_zero=True, low=0 if dtype != "bool" else None,
                                   high=2 if dtype != "bool" else None)
        assert tuple(nc.shape) == (3, 4) and not nc.is_contiguous()
        assert not (nc == 0).any().item()
        if dt.is_floating_point:
            g = m.testing.make_tensor([2], dtype=dt, device="cpu", low=-1, high=1,
                                      requires_grad=True)
            assert g.requires_grad and g.is_leaf and g.abs().max().item() <= 1


def test_make_tensor_errors_match_torch():
    for kw in ({"dtype": "int64", "requires_grad": True}, {"dtype": "float32", "low": 3, "high": 1},
               {"dtype": "float32", "low": float("nan")}):
        def run(m, kw=kw):
            args = dict(kw, dtype=getattr(m, kw["dtype"]))
            m.testing.make_tensor((2,), device="cpu", **args)
        assert error_of(run, retorch) == error_of(run, torch) is not None


# random --------------------------------------------------------------------------------------
def test_random_module_names_and_seeds():
    names = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng"]
    assert all(callable(getattr(m.random, n)) for m in LIBS for n in names)
    for m in LIBS:
        g = m.random.manual_seed(5)
        assert g.initial_seed() == 5 == m.random.initial_seed() == m.initial_seed()
        m.random.manual_seed(-1)
        assert m.random.initial_seed() == 2 ** 64 - 1
        s = m.random.seed()
        assert isinstance(s, int) and m.random.initial_seed() == s
    for bad in (2 ** 64, -2 ** 63 - 1):
        assert error_of(lambda m: m.random.manual_seed(bad), retorch) == \
            error_of(lambda m: m.random.manual_seed(bad), torch) == (
                "RuntimeError", "Overflow when unpacking long")


@pytest.mark.parametrize("m", LIBS, ids=["torch", "retorch"])
def test_fork_rng_restores_the_cpu_generator(m):
    m.random.manual_seed(0)
    want = m.rand(4)
    m.random.manual_seed(0)
    with m.random.fork_rng():
        m.rand(7)
    assert m.equal(m.rand(4), want)
    m.random.manual_seed(0)
    with pytest.raises(KeyError):
        with m.random.fork_rng(devices=[]):
            m.rand(7)
            raise KeyError("restored anyway")
    assert m.equal(m.rand(4), want)
    m.random.manual_seed(0)
    with m.random.fork_rng(enabled=False):
        m.rand(7)
    assert not m.equal(m.rand(4), want)


@pytest.mark.parametrize("m", LIBS, ids=["torch", "retorch"])
def test_rng_state_round_trip(m):
    state = m.random.get_rng_state()
    assert state.dtype == m.uint8 and state.dim() == 1
    a = m.randn(5)
    m.random.set_rng_state(state)
    assert m.equal(m.randn(5), a)


# hooks ---------------------------------------------------------------------------------------
def handle_story(m):
    """What a sequence of RemovableHandle operations leaves behind."""
    RH = m.utils.hooks.RemovableHandle
    log = []
    d = collections.OrderedDict()
    h1, h2 = RH(d), RH(d)
    log.append(h2.id - h1.id)
    d[h1.id], d[h2.id] = "a", "b"
    h1.remove()
    h1.remove()
    log.append(list(d.values()))
    with h2 as same:
        log.append(same is h2)
    log.append(list(d.values()))
    d[h2.id] = "b"
    d2, h3 = pickle.loads(pickle.dumps((d, h2)))
    log.append(h3.id == h2.id)
    h3.remove()
    log.append((list(d.values()), list(d2.values())))
    h4 = RH(collections.OrderedDict())  # its dict is gone: remove() is a no-op
    h4.remove()
    log.append(RH(d).id > h4.id)
    return log


def test_removable_handle_behaves_like_torchs():
    assert handle_story(retorch) == handle_story(torch)
    assert ret_hooks.__all__ == [n for n in torch_hooks.__all__ if n != "BackwardHook"]


def test_module_and_tensor_hooks_return_removable_handles():
    for m in LIBS:
        lin = m.nn.Linear(2, 2)
        calls = []
        h = lin.register_forward_hook(lambda mod, i, o: calls.append("post"))
        hp1 = lin.register_forward_pre_hook(lambda mod, i: calls.append("pre1"))
        hp = lin.register_forward_pre_hook(lambda mod, i: calls.append("pre2"))
        assert isinstance(h, m.utils.hooks.RemovableHandle)
        assert h.id in lin._forward_hooks and list(lin._forward_pre_hooks) == [hp1.id, hp.id]
        lin(m.ones(1, 2))
        assert calls == ["pre1", "pre2", "post"]
        for handle in (h, hp, hp1):
            handle.remove()
        lin(m.ones(1, 2))
        assert calls == ["pre1", "pre2", "post"] and not lin._forward_hooks
        if m is retorch:  # prepend= (torch 2.0's) keys the dict by handle id too
            first = lin.register_forward_pre_hook(lambda mod, i: None, prepend=True)
            assert list(lin._forward_pre_hooks) == [first.id]
            later = lin.register_forward_pre_hook(lambda mod, i: None, prepend=True)
            assert list(lin._forward_pre_hooks) == [later.id, first.id]
        x = m.ones(2, requires_grad=True)
        th = x.register_hook(lambda g: g * 3)
        assert isinstance(th, m.utils.hooks.RemovableHandle)
        (x * 2).sum().backward()
        th.remove()
        (x * 2).sum().backward()
        assert x.grad.tolist() == [8.0, 8.0]


def test_unserializable_hook_marks_the_function():
    for m in LIBS:
        def hook(g):
            return g
        assert m.utils.hooks.unserializable_hook(hook) is hook
        assert hook.__torch_unserializable__ is True


# multiprocessing -----------------------------------------------------------------------------
def test_multiprocessing_names():
    import torch.multiprocessing as tmp
    missing = [n for n in tmp.__all__ if not hasattr(rmp, n)]
    assert not missing
    for n in ("spawn", "start_processes", "ProcessContext", "ProcessRaisedException",
              "ProcessExitedException", "Queue", "Process", "cpu_count", "get_context"):
        assert hasattr(rmp, n), n
    assert "tensors are NOT moved into shared memory" in rmp.__doc__
    assert rmp.get_all_sharing_strategies() == tmp.get_all_sharing_strategies()
    assert rmp.get_sharing_strategy() == tmp.get_sharing_strategy()
    rmp.set_sharing_strategy("file_system")
    assert rmp.get_sharing_strategy() == "file_system"
    rmp.set_sharing_strategy("file_descriptor")
    with pytest.raises(AssertionError):
        rmp.set_sharing_strategy("shm")


def test_spawn_runs_fn_in_each_process(tmp_path):
    assert rmp.spawn(workers.write_rank, args=(str(tmp_path), 7), nprocs=3) is None
    assert sorted(os.listdir(tmp_path)) == ["0.txt", "1.txt", "2.txt"]
    assert [(tmp_path / f"{i}.txt").read_text() for i in range(3)] == ["0", "7", "14"]
    ctx = rmp.spawn(workers.write_rank, args=(str(tmp_path), 1), nprocs=2, join=False)
    assert isinstance(ctx, rmp.ProcessContext) and len(ctx.pids()) == 2
    while not ctx.join():
        pass
    assert ctx.join() is True


def test_spawn_raises_the_childs_error():
    with pytest.raises(rmp.ProcessRaisedException) as info:
        rmp.spawn(workers.fail_on_rank_one, nprocs=2)
    text = str(info.value)
    assert text.startswith("\n\n-- Process 1 terminated with the following error:\nTraceback")
    assert text.rstrip().endswith("ValueError: boom from rank 1")
    assert info.value.error_index == 1
    with pytest.raises(rmp.ProcessExitedException, match="process 0 terminated with exit code 3"):
        rmp.spawn(workers.exit_three, nprocs=1)


def test_spawn_warns_for_another_start_method(tmp_path):
    with pytest.warns(UserWarning, match=r"This method only supports start_method=spawn \(got: "
                                         r"fork\)"):
        rmp.spawn(workers.write_rank, args=(str(tmp_path), 1), start_method="fork")
    assert os.listdir(tmp_path) == ["0.txt"]


# DistributedSampler --------------------------------------------------------------------------
SAMPLER_ARGS = [(n, r, dl) for n in (1, 5, 10, 11) for r in (1, 3, 4) for dl in (False, True)]


@pytest.mark.parametrize("n,replicas,drop_last", SAMPLER_ARGS)
def test_distributed_sampler_index_lists(n, replicas, drop_last):
    for rank in range(replicas):
        kw = dict(num_replicas=replicas, rank=rank, drop_last=drop_last)
        want = list(TorchDistributedSampler(range(n), shuffle=False, **kw))
        got = retorch.utils.data.DistributedSampler(range(n), shuffle=False, **kw)
        assert list(got) == want and len(got) == len(want)
        # Shuffled: torch's positions applied to retorch's randperm with seed + epoch (retorch's
        # randperm numbers differ from torch's for the same seed).
        shuffled = retorch.utils.data.DistributedSampler(range(n), seed=3, **kw)
        shuffled.set_epoch(2)
        g = retorch.Generator()
        g.manual_seed(5)
        perm = retorch.randperm(n, generator=g).tolist()
        assert list(shuffled) == [perm[i] for i in want]


def test_distributed_sampler_epochs_and_coverage():
    samplers = [retorch.utils.data.DistributedSampler(range(20), num_replicas=4, rank=r)
                for r in range(4)]
    first = [list(s) for s in samplers]
    assert sorted(sum(first, [])) == list(range(20))
    assert [list(s) for s in samplers] == first  # same epoch, same order
    for s in samplers:
        s.set_epoch(1)
    second = [list(s) for s in samplers]
    assert second != first and sorted(sum(second, [])) == list(range(20))
    loader = retorch.utils.data.DataLoader(retorch.arange(20), batch_size=2, sampler=samplers[1])
    assert sum((b.tolist() for b in loader), []) == second[1]


def test_distributed_sampler_errors_and_defaults():
    def bad_rank(m):
        m.utils.data.distributed.DistributedSampler(range(4), num_replicas=2, rank=2)
    assert error_of(bad_rank, retorch) == error_of(bad_rank, torch) == (
        "ValueError", "Invalid rank 2, rank should be in the interval [0, 1]")

    def no_group(m):
        m.utils.data.distributed.DistributedSampler(range(4))
    assert error_of(no_group, retorch) == error_of(no_group, torch)
    assert error_of(no_group, retorch)[0] == "RuntimeError"
    retorch.distributed.init_process_group("gloo")
    try:
        s = retorch.utils.data.DistributedSampler(range(5), shuffle=False)
        assert (s.num_replicas, s.rank, list(s)) == (1, 0, [0, 1, 2, 3, 4])
    finally:
        retorch.distributed.destroy_process_group()


# jit -----------------------------------------------------------------------------------------
def test_jit_modifiers_match_torch():
    for m in LIBS:
        def f(x):
            return x
        assert m.jit.ignore(f) is f
        assert f._torchscript_modifier == torch._jit_internal.FunctionModifiers.IGNORE
        g = m.jit.ignore(drop=False)(lambda x: x)
        assert g._torchscript_modifier == torch._jit_internal.FunctionModifiers.IGNORE
        assert m.jit.unused(f) is f
        assert f._torchscript_modifier == torch._jit_internal.FunctionModifiers.UNUSED
        prop = m.jit.unused(property(lambda self: 1))
        assert prop.fget._torchscript_modifier == torch._jit_internal.FunctionModifiers.UNUSED
        assert m.jit.export(f) is f
        assert f._torchscript_modifier == torch._jit_internal.FunctionModifiers.EXPORT
        assert m.jit.is_scripting() is False and m.jit.is_tracing() is False
        assert m.jit.annotate(typing.List[int], []) == []
        assert m.jit.Final is typing.Final
    drop = lambda m: m.jit.ignore(drop=True)(lambda x: x)._torchscript_modifier  # noqa: E731
    assert warnings_of(drop, retorch) == warnings_of(drop, torch)
    assert warnings_of(drop, retorch)[0][0] == "FutureWarning"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert drop(retorch) == torch._jit_internal.FunctionModifiers.UNUSED
    assert error_of(lambda m: m.jit.ignore(3), retorch) == error_of(lambda m: m.jit.ignore(3),
                                                                     torch)


def test_jit_is_tracing_inside_trace_and_script_if_tracing():
    for m in LIBS:
        seen = []

        @m.jit.script_if_tracing
        def helper(x):
            """doc"""
            return x * 2 if x.shape[0] > 1 else x

        def f(x):
            seen.append(m.jit.is_tracing())
            return helper(x) + 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = m.jit.trace(f, (m.ones(3),))
        assert seen[0] is True and m.jit.is_tracing() is False
        assert traced(m.ones(3)).tolist() == [3.0, 3.0, 3.0]
        assert helper(m.ones(1)).tolist() == [1.0] and helper.__doc__ == "doc"


def test_jit_attribute_interface_error():
    for m in LIBS:
        a = m.jit.Attribute(3, int)
        assert (a.value, a.type, a._fields) == (3, int, ("value", "type"))

        class Plain:
            def f(self, x: int) -> int:
                return x
        if m is retorch:
            assert m.jit.interface(Plain) is Plain
        assert issubclass(m.jit.Error, Exception)
    assert issubclass(retorch.jit.Error, RuntimeError) == issubclass(torch.jit.Error, RuntimeError)
    assert error_of(lambda m: m.jit.interface(3), retorch) == \
        error_of(lambda m: m.jit.interface(3), torch) == (
            "RuntimeError", "interface must be applied to a class")

    def derived(m):
        class Base(m.nn.Module):
            pass

        class Child(Base):
            pass
        m.jit.interface(Child)
    assert error_of(derived, retorch) == error_of(derived, torch) is not None


# nn.init -------------------------------------------------------------------------------------
DEPRECATED = ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
              "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]


@pytest.mark.parametrize("name", DEPRECATED)
def test_init_deprecated_aliases_warn_and_call(name):
    args = {"constant": (0.5,), "sparse": (0.5,)}.get(name, ())
    shape = (4, 3, 3) if name == "dirac" else (4, 6)

    def run(m):
        t = m.empty(shape)
        out = getattr(m.nn.init, name)(t, *args)
        assert out is t
        return t
    assert warnings_of(run, retorch) == warnings_of(run, torch) == [
        ("UserWarning", f"nn.init.{name} is now deprecated in favor of nn.init.{name}_.")]
    assert getattr(retorch.nn.init, name).__name__ == name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = run(retorch)
    if name in ("constant", "eye", "dirac"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_array_equal(t.numpy(), run(torch).numpy())
    elif name == "sparse":
        assert ((t.numpy() == 0).sum(axis=0) == math.ceil(0.5 * 4)).all()
    else:
        assert t.abs().sum().item() > 0


@pytest.mark.parametrize("shape,groups", [((4, 2, 3), 1), ((6, 2, 3, 3), 2), ((4, 5, 3, 3, 3), 1),
                                          ((6, 1, 3, 3), 3)])
def test_dirac_eye_values_match_torch(shape, groups):
    for m in LIBS:
        assert m.nn.init.dirac_(m.empty(shape), groups).sum().item() > 0
    np.testing.assert_array_equal(retorch.nn.init.dirac_(retorch.empty(shape), groups).numpy(),
                                  torch.nn.init.dirac_(torch.empty(shape), groups).numpy())
    np.testing.assert_array_equal(retorch.nn.init.eye_(retorch.empty(shape[:2])).numpy(),
                                  torch.nn.init.eye_(torch.empty(shape[:2])).numpy())


def test_init_errors_match_torch():
    for fn in (lambda m: m.nn.init.dirac_(m.empty(5, 2, 3), 2),
               lambda m: m.nn.init.dirac_(m.empty(5, 2)),
               lambda m: m.nn.init.eye_(m.empty(2, 2, 2)),
               lambda m: m.nn.init.sparse_(m.empty(2, 2, 2), 0.1)):
        assert error_of(fn, retorch) == error_of(fn, torch) is not None


def test_sparse_zeroes_a_fraction_of_each_column():
    for m in LIBS:
        t = m.nn.init.sparse_(m.empty(10, 7), sparsity=0.25, std=0.5)
        zeros = (t.numpy() == 0).sum(axis=0)
        assert (zeros == math.ceil(0.25 * 10)).all()
        assert 0.1 < float(np.std(t.numpy()[t.numpy() != 0])) < 1.5
