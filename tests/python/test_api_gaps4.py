"""retorch.backends.{cudnn,mkldnn,mkl,openmp,opt_einsum,mps}, nn.utils.stateless.functional_call,
the retorch.distributions.<family> import paths, retorch.cuda's memory and runtime utilities and
retorch.profiler's activities, actions, schedules and tensorboard_trace_handler, against torch
1.13: values, defaults, round trips, warnings and error classes."""
import gzip
import importlib
import json
import os
import pkgutil
import re
import socket
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
import torch.distributions

import retorch
import retorch.backends.cudnn as cudnn
import retorch.backends.mkldnn as mkldnn
import retorch.backends.opt_einsum as opt_einsum
from retorch.nn.utils.stateless import functional_call

HAS_GPU = retorch.cuda.is_available()


def outcome(fn):
    """(value, None) or (None, (error class, message)) of fn()."""
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001
        return None, (type(e), str(e))


def same_error(fn_t, fn_r, rename=True):
    _, et = outcome(fn_t)
    _, er = outcome(fn_r)
    assert et is not None and er is not None, (et, er)
    assert er[0] is et[0], (er, et)
    want = et[1].replace("torch.", "retorch.") if rename else et[1]
    assert er[1] == want, (er[1], want)


def warned(fn):
    """The (category, message) of the warnings fn() emits (fn's own errors are swallowed)."""
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        outcome(fn)
    return [(w.category, str(w.message)) for w in ws]


# ---------------------------------------------------------------- backends

CUDNN_FLAGS = {"enabled": "set_enabled_cudnn", "benchmark": "set_benchmark_cudnn",
               "deterministic": "set_deterministic_cudnn", "allow_tf32": "set_allow_tf32_cublas"}


@pytest.fixture
def keep_backend_flags():
    saved = (torch.backends.cudnn.set_flags(), cudnn.set_flags(),
             torch.backends.mkldnn.set_flags(True), mkldnn.set_flags(True))
    yield
    torch.backends.cudnn.set_flags(*saved[0])
    cudnn.set_flags(*saved[1])
    torch.backends.mkldnn.set_flags(*saved[2])
    mkldnn.set_flags(*saved[3])
    opt_einsum.enabled, opt_einsum.strategy = False, None


def test_backend_submodules_import_like_torch():
    for name in ["cudnn", "mkldnn", "mkl", "openmp", "opt_einsum", "mps", "cuda"]:
        mod = importlib.import_module(f"retorch.backends.{name}")
        assert getattr(retorch.backends, name) is mod is sys.modules[f"retorch.backends.{name}"]
        importlib.import_module(f"torch.backends.{name}")
    for fn in ["disable_global_flags", "flags_frozen"]:
        assert callable(getattr(retorch.backends, fn)) and callable(getattr(torch.backends, fn))
    assert retorch.backends.flags_frozen() is torch.backends.flags_frozen() is False


def test_cudnn_defaults_and_queries():
    tc = torch.backends.cudnn
    for flag in CUDNN_FLAGS:
        assert getattr(cudnn, flag) is getattr(tc, flag), flag
    assert cudnn.is_available() is retorch.cuda.is_available()
    assert cudnn.CUDNN_TENSOR_DTYPES == {retorch.half, retorch.float, retorch.double}
    assert cudnn.is_acceptable(retorch.zeros(2)) is tc.is_acceptable(torch.zeros(2)) is False
    assert cudnn.is_acceptable(retorch.zeros(2, dtype=retorch.int64)) is False
    if not HAS_GPU:
        assert cudnn.version() is tc.version() is None
        assert cudnn.benchmark_limit is tc.benchmark_limit is None
        assert tc.is_available() is cudnn.is_available() is False
    else:
        assert cudnn.benchmark_limit == 10
        assert cudnn.version() is None or cudnn.version() > 0


def test_cudnn_flags_round_trip(keep_backend_flags):
    tc = torch.backends.cudnn
    for flag in CUDNN_FLAGS:
        for value in (True, False, True):
            setattr(tc, flag, value)
            setattr(cudnn, flag, value)
            assert getattr(cudnn, flag) is getattr(tc, flag) is value
    cudnn.benchmark = True  # the common script line
    assert retorch.backends.cudnn.benchmark is True
    from retorch.backends.cudnn import benchmark
    assert benchmark is True
    for args in [(False, True, 3, True, False), (None, None, None, None, None), (True,), ()]:
        assert cudnn.set_flags(*args) == tc.set_flags(*args)
        assert [getattr(cudnn, f) for f in CUDNN_FLAGS] == [getattr(tc, f) for f in CUDNN_FLAGS]
    # plain attributes: benchmark_limit without cuDNN, any name
    cudnn.some_setting = 3
    assert cudnn.some_setting == 3
    same_error(lambda: tc.no_such_flag, lambda: cudnn.no_such_flag)


@pytest.mark.parametrize("flag", list(CUDNN_FLAGS))
@pytest.mark.parametrize("value", [1, 0, "x", None, 1.0, np.bool_(True)])
def test_cudnn_flag_checks_like_torch(keep_backend_flags, flag, value):
    before = getattr(cudnn, flag)
    same_error(lambda: setattr(torch.backends.cudnn, flag, value),
               lambda: setattr(cudnn, flag, value))
    assert getattr(cudnn, flag) is before
    kwargs = {"_" + flag: value}
    if value is not None:
        same_error(lambda: torch.backends.cudnn.set_flags(**kwargs),
                   lambda: cudnn.set_flags(**kwargs))


def test_cudnn_flags_context_manager(keep_backend_flags):
    tc = torch.backends.cudnn

    def state(mod):
        return [getattr(mod, f) for f in CUDNN_FLAGS]

    for kwargs in [{}, {"enabled": True, "benchmark": True}, {"deterministic": True,
                                                              "allow_tf32": False}]:
        outside = state(cudnn)
        with tc.flags(**kwargs) as yt, cudnn.flags(**kwargs) as yr:
            assert yr is yt is None
            assert state(cudnn) == state(tc)
        assert state(cudnn) == state(tc) == outside
    with pytest.raises(ValueError):
        with cudnn.flags(enabled=False, benchmark=True):
            assert cudnn.benchmark is True
            raise ValueError
    assert cudnn.benchmark is False and cudnn.enabled is True

    @cudnn.flags(enabled=False)
    def decorated():
        return cudnn.enabled
    assert decorated() is False and cudnn.enabled is True


def test_disable_global_flags_like_torch():
    code = ("import torch; torch.backends.disable_global_flags()\n"
            "try:\n    torch.backends.cudnn.benchmark = True\n"
            "except RuntimeError as e:\n    print(e)\n"
            "with torch.backends.cudnn.flags(benchmark=True):\n"
            "    print(torch.backends.cudnn.benchmark, torch.backends.flags_frozen())\n")
    want = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.splitlines()
    try:
        retorch.backends.disable_global_flags()
        assert retorch.backends.flags_frozen() is True
        for mod, flag in [(cudnn, "benchmark"), (mkldnn, "enabled")]:
            with pytest.raises(RuntimeError) as e:
                setattr(mod, flag, True)
            if mod is cudnn:
                assert str(e.value) == want[0].replace("torch.", "retorch.")
        with cudnn.flags(benchmark=True):
            got = f"{cudnn.benchmark} {retorch.backends.flags_frozen()}"
        assert got == want[1] and cudnn.benchmark is False
    finally:
        retorch.backends._frozen = False


def test_mkldnn_mkl_openmp_mps(keep_backend_flags):
    tm, tk = torch.backends.mkldnn, torch.backends.mkl
    assert mkldnn.enabled is tm.enabled is True
    assert mkldnn.is_available() is retorch.has_mkldnn is False  # (torch's build has it)
    for mod_r, mod_t in [(mkldnn, tm), (retorch.backends.mkl, tk)]:
        for name in ["VERBOSE_OFF", "VERBOSE_ON", "VERBOSE_ON_CREATION"]:
            assert getattr(mod_r, name, None) == getattr(mod_t, name, None)
        with mod_t.verbose(0) as a, mod_r.verbose(0) as b:
            assert a is b is None
    # Without MKL (this torch) or MKL-DNN (retorch) verbose mode cannot be switched on.
    assert retorch.backends.mkl.is_available() is tk.is_available() is retorch.has_mkl is False
    same_error(lambda: tk.verbose(1).__enter__(),
               lambda: retorch.backends.mkl.verbose(1).__enter__())
    with pytest.raises(AssertionError, match="Failed to set MKLDNN into verbose mode"):
        mkldnn.verbose(mkldnn.VERBOSE_ON).__enter__()
    for value in (False, True):
        assert mkldnn.set_flags(value) == tm.set_flags(value)
        mkldnn.enabled = value
        assert mkldnn.enabled is value
    for value in (None, 1, "x"):
        same_error(lambda: tm.set_flags(value), lambda: mkldnn.set_flags(value))
        same_error(lambda: setattr(tm, "enabled", value), lambda: setattr(mkldnn, "enabled", value))
    with tm.flags() as a, mkldnn.flags() as b:
        assert a is b is None and mkldnn.enabled is tm.enabled is False
    assert mkldnn.enabled is tm.enabled is True
    assert retorch.backends.openmp.is_available() is torch.backends.openmp.is_available() is True
    assert retorch.backends.mps.is_available() is torch.backends.mps.is_available() is False
    assert retorch.backends.mps.is_built() is torch.backends.mps.is_built() is False


def test_opt_einsum_without_the_package(keep_backend_flags):
    to = torch.backends.opt_einsum
    if to.is_available():
        pytest.skip("torch here has opt_einsum; retorch's answers are those of torch without it")
    assert opt_einsum.is_available() is False and opt_einsum.get_opt_einsum() is None
    assert opt_einsum.enabled is to.enabled is False
    assert opt_einsum.strategy is to.strategy is None
    for args in [(True,), (None, "auto"), (False, "greedy"), (1,)]:
        same_error(lambda: to.set_flags(*args), lambda: opt_einsum.set_flags(*args))
    for args in [(False,), (None, None), ()]:
        assert opt_einsum.set_flags(*args) == to.set_flags(*args)
    with to.flags(enabled=False) as a, opt_einsum.flags(enabled=False) as b:
        assert a is b is None
    same_error(lambda: to.flags(strategy="auto").__enter__(),
               lambda: opt_einsum.flags(strategy="auto").__enter__())
    opt_einsum.strategy = "greedy"  # plain attributes, set without checks as in torch
    assert opt_einsum.strategy == "greedy"
    opt_einsum.enabled = True
    with opt_einsum.flags(enabled=False):
        assert opt_einsum.enabled is False
    assert opt_einsum.enabled is True


# ---------------------------------------------------------------- stateless.functional_call

def pair(lib, seed=0):
    """The same two-layer model in lib (torch or retorch): numbers from numpy."""
    rs = np.random.RandomState(seed)
    m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rs.randn(*p.shape).astype(np.float32)))
    return m


def arr(seed, *shape):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


def both_call(names, x_seed=5, kwargs_fn=None, args_as_tuple=True):
    """functional_call on the same model, replacements and input in torch and retorch;
    returns [(output, replacements, model)] for each."""
    out = []
    for lib in (torch, retorch):
        m = pair(lib)
        given = {n: lib.tensor(arr(i + 10, *s), requires_grad=True)
                 for i, (n, s) in enumerate(names.items())}
        x = lib.tensor(arr(x_seed, 2, 3))
        args = (x,) if args_as_tuple else x
        y = getattr(lib.nn.utils.stateless, "functional_call")(m, given, args)
        out.append((y, given, m))
    return out


def close(r, t, tol=1e-5):
    np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("names", [{"0.weight": (4, 3)}, {"2.bias": (2,)},
                                   {"0.weight": (4, 3), "0.bias": (4,), "2.weight": (2, 4)}, {}])
def test_functional_call_values_and_gradients(names):
    (yt, gt, mt), (yr, gr, mr) = both_call(names)
    close(yr, yt)
    yt.sum().backward()
    yr.sum().backward()
    for n in names:
        close(gr[n].grad, gt[n].grad)
    for (n, pt), (nr, pr) in zip(mt.named_parameters(), mr.named_parameters()):
        assert n == nr
        assert (pr.grad is None) == (pt.grad is None) == (n in names), n
        if pr.grad is not None:
            close(pr.grad, pt.grad)


def test_functional_call_restores_the_module():
    m = pair(retorch)
    before = {n: p for n, p in m.named_parameters()}
    cls = [type(s) for s in m.modules()]
    functional_call(m, {"0.weight": retorch.zeros(4, 3), "2.bias": retorch.ones(2)},
                    retorch.ones(1, 3))
    assert {n: p for n, p in m.named_parameters()} == before
    assert [type(s) for s in m.modules()] == cls
    assert all(isinstance(p, retorch.nn.Parameter) for p in m.parameters())
    x = retorch.tensor(arr(1, 2, 3))
    close(m(x), pair(torch)(torch.tensor(arr(1, 2, 3))))


def test_functional_call_restores_after_an_exception():
    class Boom(retorch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = retorch.nn.Parameter(retorch.ones(()))

        def forward(self, x):
            assert self.p.item() == 0
            raise ValueError("boom")

    m = Boom()
    p = m.p
    with pytest.raises(ValueError, match="boom"):
        functional_call(m, {"p": retorch.zeros(())}, (retorch.ones(()),))
    assert type(m) is Boom and m.p is p and m._parameters["p"] is p


def test_functional_call_args_kwargs_and_plain_args():
    got = {}
    for lib in (torch, retorch):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.p = lib.nn.Parameter(lib.ones(()))

            def forward(self, x, y=1):
                return self.p * x + y

        m = M()
        fc = lib.nn.utils.stateless.functional_call
        a = fc(m, {"p": lib.tensor(2.)}, (lib.tensor(3.),), {"y": lib.tensor(10.)})
        b = fc(m, {"p": lib.tensor(2.)}, lib.tensor(3.))
        c = fc(m, {}, (lib.tensor(3.),))
        got[lib] = [a.item(), b.item(), c.item()]
    assert got[retorch] == got[torch] == [16.0, 7.0, 4.0]


def test_functional_call_bad_names_like_torch():
    x = np.ones((1, 3), np.float32)
    for names in [{"nope.weight": (4, 3)}, {"5.weight": (4, 3)}, {"0.nope.weight": (4, 3)}]:
        same_error(lambda: both_call_lib(torch, names, x), lambda: both_call_lib(retorch, names, x),
                   rename=False)
    # An unknown leaf is accepted (and gone afterwards); a name below a tensor does nothing.
    for names in [{"0.extra": (2,)}, {"1.weight": (4, 3)}, {"0.weight.x": (2,)}]:
        yt, mt = both_call_lib(torch, names, x)
        yr, mr = both_call_lib(retorch, names, x)
        close(yr, yt)
        assert hasattr(mr[0], "extra") is hasattr(mt[0], "extra") is False
        assert hasattr(mr[1], "weight") is hasattr(mt[1], "weight") is False
    # A module left as it was even when a later name fails (torch leaves the class swapped).
    m = pair(retorch)
    with pytest.raises(AttributeError):
        functional_call(m, {"0.weight": retorch.zeros(4, 3), "nope.w": retorch.zeros(1)},
                        (retorch.ones(1, 3),))
    assert type(m[0]) is retorch.nn.Linear
    same_error(lambda: torch.nn.utils.stateless.functional_call(pair(torch), [("0.weight", 1)], ()),
               lambda: functional_call(pair(retorch), [("0.weight", 1)], ()), rename=False)


def both_call_lib(lib, names, x):
    m = pair(lib)
    given = {n: lib.tensor(arr(3, *s)) for n, s in names.items()}
    return lib.nn.utils.stateless.functional_call(m, given, (lib.tensor(x),)), m


def tied(lib):
    class Tied(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = lib.nn.Linear(2, 2, bias=False)
            self.b = lib.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight
            with lib.no_grad():
                self.a.weight.copy_(lib.tensor(arr(4, 2, 2)))

        def forward(self, x):
            return self.b(self.a(x))
    return Tied()


def test_functional_call_tied_weights_like_torch():
    x = arr(2, 1, 2)
    eye = np.eye(2, dtype=np.float32)
    cases = [lambda lib: {"a.weight": lib.tensor(eye)},
             lambda lib: {"b.weight": lib.tensor(eye)},
             lambda lib: {"a.weight": lib.tensor(eye), "b.weight": lib.tensor(2 * eye)}]
    for case in cases:
        out, ws = {}, {}
        for lib in (torch, retorch):
            def call():
                fc = lib.nn.utils.stateless.functional_call
                out[lib] = fc(tied(lib), case(lib), (lib.tensor(x),))
            ws[lib] = warned(call)
        close(out[retorch], out[torch])
        assert ws[retorch] == ws[torch]
    assert len(ws[torch]) == 1 and ws[torch][0][0] is UserWarning
    e = retorch.tensor(eye)  # the same tensor for both names: no warning
    assert warned(lambda: functional_call(tied(retorch), {"a.weight": e, "b.weight": e},
                                          (retorch.tensor(x),))) == []


def test_functional_call_buffers_and_assignments_like_torch():
    data = np.array([[1., 2.], [3., 5.]], np.float32)
    got = {}
    for lib in (torch, retorch):
        bn = lib.nn.BatchNorm1d(2)
        rm = lib.zeros(2)
        y = lib.nn.utils.stateless.functional_call(bn, {"running_mean": rm}, lib.tensor(data))

        class Foo(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("foo", lib.zeros(()))

            def forward(self, x):
                self.foo = self.foo + x
                return self.foo

        foo, given = Foo(), {"foo": lib.zeros(())}
        lib.nn.utils.stateless.functional_call(foo, given, lib.tensor(3.))
        got[lib] = (y.detach().numpy(), rm.numpy(), bn.running_mean.numpy(), float(given["foo"]),
                    float(foo.foo))
    for a, b in zip(got[retorch], got[torch]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_functional_call_parametrized_module_like_torch():
    class Double(torch.nn.Module):
        def forward(self, w):
            return 2 * w

    class RDouble(retorch.nn.Module):
        def forward(self, w):
            return 2 * w

    w = arr(7, 2, 2)
    x = arr(8, 1, 2)
    out = {}
    for lib, par in ((torch, Double), (retorch, RDouble)):
        m = lib.nn.Linear(2, 2, bias=False)
        lib.nn.utils.parametrize.register_parametrization(m, "weight", par())
        fc = lib.nn.utils.stateless.functional_call
        out[lib] = [fc(m, {"weight": lib.tensor(w)}, lib.tensor(x)).detach().numpy(),
                    fc(m, {"parametrizations.weight.original": lib.tensor(w)},
                       lib.tensor(x)).detach().numpy()]
    np.testing.assert_allclose(out[retorch], out[torch], rtol=1e-6)
    np.testing.assert_allclose(out[retorch][1], 2 * out[retorch][0], rtol=1e-6)


def test_functional_call_refuses_jitted_modules():
    lin_t, lin_r = torch.nn.Linear(2, 2), retorch.nn.Linear(2, 2)
    traced_t = torch.jit.trace(lin_t, torch.ones(1, 2))
    traced_r = retorch.jit.trace(lin_r, (retorch.ones(1, 2),))
    same_error(lambda: torch.nn.utils.stateless.functional_call(traced_t, {}, torch.ones(1, 2)),
               lambda: functional_call(traced_r, {}, retorch.ones(1, 2)))


# ---------------------------------------------------------------- distributions submodules

TORCH_DIST_MODULES = sorted(m.name for m in pkgutil.iter_modules(torch.distributions.__path__))


@pytest.mark.parametrize("name", TORCH_DIST_MODULES)
def test_distribution_module_paths_like_torch(name):
    tm = importlib.import_module(f"torch.distributions.{name}")
    rm = importlib.import_module(f"retorch.distributions.{name}")
    assert getattr(retorch.distributions, name) is rm
    names = getattr(tm, "__all__", None) or [
        n for n, v in vars(tm).items()
        if not n.startswith("_") and getattr(v, "__module__", None) == tm.__name__]
    assert names
    for n in names:
        assert hasattr(rm, n), (name, n)
        if isinstance(getattr(retorch.distributions, n, None), type):
            assert getattr(rm, n) is getattr(retorch.distributions, n)
    exec(f"from retorch.distributions.{name} import {', '.join(names)}", {})


def test_distribution_modules_give_working_classes():
    from retorch.distributions.normal import Normal
    from retorch.distributions.studentT import StudentT
    import retorch.distributions.one_hot_categorical as ohc
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    for (cls_r, cls_t, args) in [(Normal, torch.distributions.normal.Normal, (0.5, 2.0)),
                                 (StudentT, torch.distributions.studentT.StudentT, (3.0,))]:
        lp_r = cls_r(*[retorch.tensor(a) for a in args]).log_prob(retorch.tensor(x))
        lp_t = cls_t(*[torch.tensor(a) for a in args]).log_prob(torch.tensor(x))
        close(lp_r, lp_t)
    probs = np.array([0.2, 0.3, 0.5], np.float32)
    e_r = ohc.OneHotCategorical(probs=retorch.tensor(probs)).entropy()
    e_t = torch.distributions.one_hot_categorical.OneHotCategorical(
        probs=torch.tensor(probs)).entropy()
    close(e_r, e_t)
    assert ohc.__all__ == torch.distributions.one_hot_categorical.__all__


# ---------------------------------------------------------------- cuda utilities

CUDA_NAMES = ["reset_max_memory_allocated", "reset_max_memory_cached",
              "reset_accumulated_memory_stats", "max_memory_cached", "memory_cached",
              "memory_stats_as_nested_dict", "memory_snapshot", "list_gpu_processes",
              "set_per_process_memory_fraction", "get_arch_list", "get_gencode_flags",
              "device_of", "can_device_access_peer", "get_sync_debug_mode",
              "set_sync_debug_mode", "is_current_stream_capturing", "init", "ipc_collect",
              "caching_allocator_alloc", "caching_allocator_delete"]


def test_cuda_names_and_memory_module():
    import inspect
    for name in CUDA_NAMES:
        r, t = getattr(retorch.cuda, name), getattr(torch.cuda, name)
        if inspect.isfunction(t):
            assert list(inspect.signature(r).parameters) == list(inspect.signature(t).parameters)
    for name in torch.cuda.memory.__all__:
        assert hasattr(retorch.cuda.memory, name), name
    assert issubclass(retorch.cuda.device_of, retorch.cuda.device)


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("name", ["memory_cached", "max_memory_cached",
                                  "reset_max_memory_allocated", "reset_max_memory_cached"])
def test_cuda_deprecated_memory_aliases_warn_like_torch(name):
    want = warned(lambda: getattr(torch.cuda, name)())
    got = warned(lambda: getattr(retorch.cuda, name)())
    assert got == [(c, m.replace("torch.", "retorch.")) for c, m in want]
    if not name.startswith("reset"):
        value = getattr(retorch.cuda, name)()
        assert value == getattr(retorch.cuda, name.replace("cached", "reserved"))()
        if not HAS_GPU:
            assert value == getattr(torch.cuda, name)() == 0


def test_cuda_queries_without_a_device_like_torch():
    if HAS_GPU:
        pytest.skip("torch's answers here are those without a device")
    for name in ["memory_stats_as_nested_dict", "get_arch_list", "get_gencode_flags",
                 "list_gpu_processes"]:
        assert getattr(retorch.cuda, name)() == getattr(torch.cuda, name)(), name
    assert retorch.cuda.has_half is torch.cuda.has_half is False
    assert retorch.cuda.has_magma is torch.cuda.has_magma is False
    assert retorch.cuda.memory_snapshot() == []
    assert retorch.cuda.is_current_stream_capturing() is False
    assert retorch.cuda.reset_accumulated_memory_stats() is None
    for obj_t, obj_r in [(torch.zeros(2), retorch.zeros(2)),
                         (torch.zeros(2).storage(), retorch.zeros(2).untyped_storage())]:
        with torch.cuda.device_of(obj_t), retorch.cuda.device_of(obj_r):
            assert retorch.cuda.current_device() == 0
    with pytest.raises(RuntimeError, match="invalid device pointer"):
        retorch.cuda.caching_allocator_delete(12345)
    assert retorch.cuda.caching_allocator_delete(0) is None


NEEDS_DEVICE = [("init", ()), ("ipc_collect", ()), ("get_sync_debug_mode", ()),
                ("set_sync_debug_mode", ("warn",)), ("set_sync_debug_mode", ("bad",)),
                ("set_per_process_memory_fraction", (0.5,)),
                ("set_per_process_memory_fraction", (2,)), ("can_device_access_peer", (0, 1)),
                ("caching_allocator_alloc", (16,))]


@pytest.mark.parametrize("name,args", NEEDS_DEVICE)
def test_cuda_calls_that_need_a_device(name, args):
    if HAS_GPU:
        pytest.skip("checked on a device by test_cuda_calls_on_a_device")
    if not retorch.backends.cuda.is_built():
        same_error(lambda: getattr(torch.cuda, name)(*args),
                   lambda: getattr(retorch.cuda, name)(*args), rename=False)
        return
    # A CUDA build without a GPU: torch's CUDA build raises this one (torch's CPU build here
    # raises AssertionError "Torch not compiled with CUDA enabled").
    _, et = outcome(lambda: getattr(torch.cuda, name)(*args))
    assert et == (AssertionError, "Torch not compiled with CUDA enabled")
    with pytest.raises(RuntimeError, match="^No CUDA GPUs are available$"):
        getattr(retorch.cuda, name)(*args)


def test_cuda_calls_on_a_device():
    if not HAS_GPU:
        pytest.skip("no CUDA device")
    c = retorch.cuda
    assert c.has_half is True and c.init() is None and c.ipc_collect() is None
    assert c.get_arch_list() and c.get_gencode_flags().startswith("-gencode compute=compute_")
    assert c.get_sync_debug_mode() == 0
    c.set_sync_debug_mode("default")
    with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
        c.set_sync_debug_mode("bad")
    with pytest.raises(TypeError, match="Invalid type for fraction argument"):
        c.set_per_process_memory_fraction(1)
    with pytest.raises(ValueError, match="Invalid fraction value: 1.5. Allowed range: 0~1"):
        c.set_per_process_memory_fraction(1.5)
    c.set_per_process_memory_fraction(1.0)
    assert c.can_device_access_peer(0, 0) is False
    with pytest.raises(AssertionError, match="Invalid peer device id"):
        c.can_device_access_peer(0, c.device_count())
    before = c.memory_allocated()
    ptr = c.caching_allocator_alloc(1 << 20)
    assert ptr != 0 and c.memory_allocated() >= before + (1 << 20)
    c.caching_allocator_delete(ptr)
    assert c.memory_allocated() == before
    nested = c.memory_stats_as_nested_dict()
    for key, value in c.memory_stats().items():
        node = nested
        for part in key.split("."):
            node = node[part]
        assert node == value
    x = retorch.zeros(2, device="cuda")
    with c.device_of(x):
        assert c.current_device() == x.get_device()
    assert c.is_current_stream_capturing() is False
    g = c.CUDAGraph()
    with c.graph(g):
        assert c.is_current_stream_capturing() is True
        x.add_(1)
    assert c.is_current_stream_capturing() is False


# ---------------------------------------------------------------- profiler

def test_profiler_enums_like_torch():
    for r, t in [(retorch.profiler.ProfilerActivity, torch.profiler.ProfilerActivity),
                 (retorch.profiler.ProfilerAction, torch.profiler.ProfilerAction)]:
        assert [(m.name, m.value) for m in r] == [(n, m.value) for n, m in t.__members__.items()]
        for m in r:
            tm = getattr(t, m.name)
            assert (repr(m), str(m)) == (repr(tm), str(tm))
            assert m == getattr(r, m.name) and m != 0
    assert int(retorch.profiler.ProfilerActivity.CUDA) == int(torch.profiler.ProfilerActivity.CUDA)
    assert retorch.profiler.kineto_available() is torch.profiler.kineto_available()
    for name in torch.profiler.__all__:
        if name in ("profile", "schedule", "supported_activities", "ProfilerAction",
                    "ProfilerActivity", "tensorboard_trace_handler", "kineto_available",
                    "record_function"):
            assert name in retorch.profiler.__all__ and hasattr(retorch.profiler, name)


def test_supported_activities():
    got = {a.name for a in retorch.profiler.supported_activities()}
    assert got == ({"CPU", "CUDA"} if HAS_GPU else {"CPU"})
    if not HAS_GPU:
        assert got == {a.name for a in torch.profiler.supported_activities()}


@pytest.mark.filterwarnings("ignore:Profiler won't be using warmup")
@pytest.mark.parametrize("kw", [dict(wait=1, warmup=1, active=2), dict(wait=0, warmup=2, active=1,
                                                                        repeat=2),
                                dict(wait=2, warmup=1, active=3, repeat=1),
                                dict(wait=0, warmup=0, active=1)])
def test_schedule_actions_and_warnings_like_torch(kw):
    ws_t = warned(lambda: torch.profiler.schedule(**kw))
    assert warned(lambda: retorch.profiler.schedule(**kw)) == ws_t
    st, sr = torch.profiler.schedule(**kw), retorch.profiler.schedule(**kw)
    assert [sr(i).name for i in range(25)] == [st(i).name for i in range(25)]
    same_error(lambda: st(-1), lambda: sr(-1))


@pytest.mark.parametrize("kw", [dict(wait=-1, warmup=1, active=1), dict(wait=0, warmup=1, active=0),
                                dict(wait=0, warmup=1, active=1, repeat=-1),
                                dict(wait=0, warmup=-1, active=1)])
def test_schedule_bad_arguments_like_torch(kw):
    same_error(lambda: torch.profiler.schedule(**kw), lambda: retorch.profiler.schedule(**kw))


def test_schedule_drives_the_profile_like_torch():
    calls = {}
    for lib in (torch, retorch):
        seen = []
        sched = lib.profiler.schedule(wait=1, warmup=1, active=2, repeat=2)
        with lib.profiler.profile(schedule=sched,
                                  on_trace_ready=lambda p: seen.append(len(p.events()) > 0)) as p:
            for _ in range(10):
                lib.ones(4) + 1
                p.step()
        calls[lib] = seen
    assert calls[retorch] == calls[torch] == [True, True]


@pytest.mark.filterwarnings("ignore:CUDA is not available, disabling CUDA profiling")
def test_profile_activities_like_torch():
    PT, PR = torch.profiler.ProfilerActivity, retorch.profiler.ProfilerActivity

    def run(lib, acts):
        with lib.profiler.profile(activities=acts) as p:
            lib.ones(2) + 1
        return len(p.events()) > 0

    for acts_t, acts_r in [([PT.CPU], [PR.CPU]), (None, None), ([], [])]:
        assert run(torch, acts_t) is run(retorch, acts_r) is True
    same_error(lambda: run(torch, ["cpu"]), lambda: run(retorch, ["cpu"]))
    if not HAS_GPU:
        assert warned(lambda: run(retorch, [PR.CUDA])) == warned(lambda: run(torch, [PT.CUDA]))
        same_error(lambda: run(torch, [PT.CUDA]), lambda: run(retorch, [PR.CUDA]))
        assert run(retorch, [PR.CPU, PR.CUDA]) is True


def test_tensorboard_trace_handler_like_torch(tmp_path):
    names = {}
    for lib in (torch, retorch):
        for gz in (False, True):
            for worker in (None, "w0"):
                d = tmp_path / f"{lib.__name__}-{gz}-{worker}" / "sub"
                h = lib.profiler.tensorboard_trace_handler(str(d), worker_name=worker,
                                                           use_gzip=gz)
                assert h.__name__ == "handler_fn"
                with lib.profiler.profile(on_trace_ready=h):
                    lib.ones(3) * 2
                (f,) = os.listdir(d)
                opener = gzip.open if gz else open
                with opener(d / f, "rt") as fh:
                    trace = json.load(fh)
                # (torch's build here, without Kineto, writes the bare event list)
                events = trace if isinstance(trace, list) else trace["traceEvents"]
                assert any(e.get("name") == "aten::mul" for e in events)
                names[(lib, gz, worker)] = re.sub(r"\.\d{13}\.", ".<ms>.", f)
    host = f"{socket.gethostname()}_{os.getpid()}"
    for gz in (False, True):
        for worker in (None, "w0"):
            assert names[(retorch, gz, worker)] == names[(torch, gz, worker)]
            assert names[(retorch, gz, worker)] == (
                f"{worker or host}.<ms>.pt.trace.json" + (".gz" if gz else ""))
    blocker = tmp_path / "file"
    blocker.write_text("")
    with torch.profiler.profile() as pt:
        torch.ones(1)
    with retorch.profiler.profile() as pr:
        retorch.ones(1)
    same_error(lambda: torch.profiler.tensorboard_trace_handler(str(blocker))(pt),
               lambda: retorch.profiler.tensorboard_trace_handler(str(blocker))(pr))


def test_export_chrome_trace_gz(tmp_path):
    with retorch.profiler.profile() as p:
        retorch.ones(3) + 1
    p.export_chrome_trace(tmp_path / "t.json.gz")
    with gzip.open(tmp_path / "t.json.gz", "rt") as fh:
        assert any(e.get("name") == "aten::add" for e in json.load(fh)["traceEvents"])
    assert os.listdir(tmp_path) == ["t.json.gz"]
