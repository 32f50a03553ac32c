"""The compiler's CUDA emitter without a GPU: retorch.compile(target="cuda_emulated") builds the
generated CUDA kernels for the host and runs every GPU thread of a capped grid as a loop
iteration, so their indexing and math are checked against torch (values and gradients; the
row ops of test_compile.py run through this target too); the
device form of the same source compiles with NVRTC to PTX for sm_80 and sm_90 where the CUDA
toolkit is installed (skipped otherwise), cached and verified like the C++ objects."""
import glob
import os
import re

import numpy as np
import pytest
import torch

import retorch
from test_compile import both, private_cache  # noqa: F401 (an autouse fixture: a private cache)

C = retorch._C._compiler
needs_nvrtc = pytest.mark.skipif(not C.nvrtc_available(), reason="NVRTC (CUDA toolkit) not installed")


def close(r, t, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(r.detach().float().numpy() if r.dtype != retorch.float64
                               else r.detach().numpy(),
                               t.detach().float().numpy() if t.dtype != torch.float64
                               else t.detach().numpy(), rtol=rtol, atol=atol)


def emulated(fn):
    return retorch.compile(fn, target="cuda_emulated")


def chain(lib):
    def f(a, b):
        y = (a * 2 + 1).tanh() * lib.sigmoid(b) + a.relu()
        return y, lib.where(y > 0.5, y, (a - b).exp()), (a.abs() + 1).log() * b.round()
    return f


def inputs(layout, dtype, n=33, m=50):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, m)).astype(dtype)
    b = rng.standard_normal({"same": (n, m), "broadcast": (m,), "transposed": (m, n)}[layout])
    (ra, rb), (ta, tb) = both([a, b.astype(dtype)])
    if layout == "transposed":
        rb, tb = rb.t(), tb.t()
    return (ra, rb), (ta, tb)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["same", "broadcast", "transposed"])
def test_pointwise_kernels_match_torch(dtype, layout):
    (ra, rb), (ta, tb) = inputs(layout, dtype)
    cf = emulated(chain(retorch))
    for g, w in zip(cf(ra, rb), chain(torch)(ta, tb)):
        close(g, w)
    assert "_thread(" in cf.source and "blockIdx.x" in cf.source
    assert "__global__" in cf.cuda_source and "_thread(" not in cf.cuda_source


@pytest.mark.parametrize("layout", ["same", "broadcast", "transposed"])
def test_pointwise_gradients_match_torch(layout):
    (ra, rb), (ta, tb) = inputs(layout, np.float64)
    for t in (ra, rb, ta, tb):
        t.requires_grad_(True)
    cf = emulated(chain(retorch))
    y, z, v = cf(ra, rb)
    (y.sum() + (z * z).sum() + v.sum()).backward()
    y, z, v = chain(torch)(ta, tb)
    (y.sum() + (z * z).sum() + v.sum()).backward()
    close(ra.grad, ta.grad, rtol=1e-10, atol=1e-12)
    close(rb.grad, tb.grad, rtol=1e-10, atol=1e-12)
    assert "_backward(void* const* args)" in cf.source


def test_four_elements_per_thread_where_aligned():
    # float4 loads and stores where every operand allows: a row vector (stride 1) moves four at a
    # time, a column (stride 0 along the row) is read once per four; a view one float into its
    # storage is not 16-byte aligned and takes the one-element loop of the same kernel.
    rng = np.random.default_rng(9)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in [(64 * 32 + 1,), (32,), (64, 1)])
    (ra, rb, rc), (ta, tb, tc) = both([a, b, c])
    f = lambda x, y, z: ((x * y + z).exp(), x - z)  # noqa: E731
    cf = emulated(f)
    for offset in (0, 1):  # the same sizes and strides: one specialization, two alignments
        rx, tx = ra[offset:offset + 2048].reshape(64, 32), ta[offset:offset + 2048].reshape(64, 32)
        for g, w in zip(cf(rx, rb, rc), f(tx, tb, tc)):
            close(g, w)
    assert cf.num_compiled == 1
    src = cf.cuda_source
    assert "float4 v0 = *reinterpret_cast<const float4*>(in0" in src and "& 15) == 0" in src
    assert "const float l2 = rt_load(in2[" in src.split("for (int64_t e = ")[0]  # the column
    if C.nvrtc_available():
        assert "ld.global.nc.v4.f32" in C.compile_ptx(src)[0]
    g = emulated(lambda x: (x * 2).exp())
    g(retorch.randn(7, 33))  # 231 elements in one loop: no four-element groups
    assert "float4" not in g.cuda_source.split("rt_to_half")[-1]


def test_integer_bool_and_16_bit_values_match_torch():
    a = np.arange(-6, 6, dtype=np.int64).reshape(3, 4)
    (ra,), (ta,) = both([a])

    def f(x):
        return (x * 3 + 1) > 0.5, (x * 2).abs() - x, x / 4, (x > 0) & (x < 4)
    for g, w in zip(emulated(f)(ra), f(ta)):
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    x = np.random.default_rng(2).standard_normal((7, 31)).astype(np.float32) * 4
    (rx,), (tx,) = both([x])
    g = lambda x: ((x * 1.5).exp() + x.tanh(), (x - 1).relu() * 3)  # noqa: E731
    for rdt, tdt in ((retorch.bfloat16, torch.bfloat16), (retorch.float16, torch.float16)):
        # Loads widen, the chain runs in float32, the store rounds once (like Inductor's): torch
        # on the widened input, rounded at the end, is the reference to within one rounding.
        for got, want in zip(emulated(g)(rx.to(rdt)), g(tx.to(tdt).float())):
            assert got.dtype == rdt
            close(got, want.to(tdt), rtol=8e-3, atol=1e-3)


def test_row_kernel_gradients_and_special_rows_match_torch():
    x = np.random.default_rng(6).standard_normal((5, 40))
    (rx,), (tx,) = both([x])
    rx.requires_grad_(True)
    tx.requires_grad_(True)
    F, TF = retorch.nn.functional, torch.nn.functional
    f = lambda F: lambda x: (F.softmax(x, -1) * x).sum() + F.layer_norm(x, [40]).pow(3).sum()  # noqa: E731
    emulated(f(F))(rx).backward()
    f(TF)(tx).backward()
    close(rx.grad, tx.grad, rtol=1e-9, atol=1e-10)
    y = x.astype(np.float32)
    y[1, 3] = np.nan
    y[2, :] = -np.inf
    y[3, :7] = np.inf
    (ry,), (ty,) = both([y])
    sm = emulated(lambda x: (retorch.softmax(x, -1), retorch.log_softmax(x, -1), x.amax(-1)))
    for g, w in zip(sm(ry), (torch.softmax(ty, -1), torch.log_softmax(ty, -1), ty.amax(-1))):
        close(g, w)  # NaN where torch has NaN


def test_grids_smaller_than_the_work_loop_over_it():
    # 100,000 elements and 20,000 rows: more than the emulated grid's 64 blocks of threads, so
    # each thread runs its grid-stride loop several times, as on a GPU with a capped grid.
    x = np.random.default_rng(7).standard_normal((20000, 5)).astype(np.float32)
    (rx,), (tx,) = both([x])
    f = lambda lib: lambda x: ((x * 3).sigmoid() + 1, lib.softmax(x, -1))  # noqa: E731
    for g, w in zip(emulated(f(retorch))(rx), f(torch)(tx)):
        close(g, w)
    e = emulated(lambda x: (x + 1, x.sum(-1)))
    s, r = e(retorch.zeros(4, 0))
    assert tuple(s.shape) == (4, 0) and np.array_equal(r.numpy(), np.zeros(4, np.float32))


def test_a_bad_target_is_a_clear_error():
    with pytest.raises(RuntimeError, match="target must be 'cpu' or 'cuda_emulated'"):
        retorch.compile(lambda x: x + 1, target="tpu")


@needs_nvrtc
def test_device_source_compiles_to_ptx_for_each_kernel():
    (ra, rb), _ = inputs("broadcast", np.float32)
    ra.requires_grad_(True)
    cf = emulated(chain(retorch))
    cf(ra, rb)
    x = retorch.randn(4, 8, 16).to(retorch.bfloat16)
    rows = emulated(lambda x: (retorch.softmax(x, -1), retorch.nn.functional.layer_norm(x, [16])))
    rows(x)
    for fn in (cf, rows):
        for arch in ("compute_80", "compute_90"):
            ptx, hit = C.compile_ptx(fn.cuda_source, arch)
            assert not hit
            assert f".target sm_{arch[-2:]}" in ptx
            kernels = re.findall(r"__global__ void __launch_bounds__\(\d+\) (\w+)\(",
                                 fn.cuda_source)
            assert set(fn.kernel_names) < set(kernels)  # and their backward kernels
            for name in kernels:
                assert f".entry {name}(" in ptx


@needs_nvrtc
def test_ptx_is_cached_and_verified():
    cf = emulated(lambda a: (a * 2).exp())
    cf(retorch.randn(10))
    ptx, hit = C.compile_ptx(cf.cuda_source)
    again, hit2 = C.compile_ptx(cf.cuda_source)
    assert not hit and hit2 and again == ptx
    (path,) = glob.glob(os.path.join(os.environ["RETORCH_CACHE_DIR"], "compiler", "*.ptx"))
    assert oct(os.stat(os.path.dirname(path)).st_mode & 0o777) == "0o700"
    with open(path, "a") as f:
        f.write("// tampered\n")
    rebuilt, hit3 = C.compile_ptx(cf.cuda_source)
    assert not hit3 and rebuilt == ptx


@needs_nvrtc
def test_nvrtc_errors_are_clear():
    with pytest.raises(RuntimeError, match="compiling the generated CUDA source failed"):
        C.compile_ptx('extern "C" __global__ void k(float* p) { p[0] = undefined_name; }')
    with pytest.raises(RuntimeError, match="virtual one like compute_80"):
        C.compile_ptx('extern "C" __global__ void k() {}', "sm_80")
    assert C.nvrtc_version().split(".")[0].isdigit()


@pytest.mark.skipif(not retorch.cuda.is_available(), reason="no CUDA device")
def test_cuda_tensors_run_the_generated_kernels_on_the_device():
    (ra, rb), (ta, tb) = inputs("transposed", np.float32, n=300, m=70)
    cf = retorch.compile(chain(retorch))
    got = cf(ra.to("cuda"), rb.to("cuda"))
    assert "__global__" in cf.source and not cf.source.count("_thread(")
    for g, w in zip(got, chain(torch)(ta, tb)):
        assert g.device.type == "cuda"
        close(g.cpu(), w)
    x = np.random.default_rng(8).standard_normal((4000, 96)).astype(np.float32)
    (rx,), (tx,) = both([x])
    f = lambda F: lambda x: (F.softmax(x, -1), F.layer_norm(x, [96]) * 2)  # noqa: E731
    rows = retorch.compile(f(retorch.nn.functional))
    for g, w in zip(rows(rx.to("cuda")), f(torch.nn.functional)(tx)):
        close(g.cpu(), w, rtol=2e-5, atol=2e-5)
    # The backward kernels run on the device too; gradients land there.
    da, db = ra.to("cuda").detach().requires_grad_(True), rb.to("cuda").detach().requires_grad_(True)
    ta.requires_grad_(True)
    tb.requires_grad_(True)
    sum(y.sum() for y in cf(da, db)).backward()
    sum(y.sum() for y in chain(torch)(ta, tb)).backward()
    assert da.grad.device.type == "cuda"
    close(da.grad.cpu(), ta.grad, rtol=1e-4, atol=1e-5)
    close(db.grad.cpu(), tb.grad, rtol=1e-4, atol=1e-5)
