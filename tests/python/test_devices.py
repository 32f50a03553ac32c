"""Device routing without a GPU: programs written for cuda run unchanged on retorch, train exactly
like PyTorch on cpu, and count their fallbacks; the device API answers like torch's does here."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import retorch
from test_examples import check_same_training, run

# These tests use cuda as a device without a backend (host memory, zero-copy moves); where the
# CUDA backend has a device, tests/cpp/test_cuda_runtime.cpp covers cuda instead.
pytestmark = pytest.mark.skipif(retorch.cuda.is_available(),
                                reason="cuda has a backend and a device here")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.path.join(ROOT, "build", "tools", "retorch")
PYTHON_ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))


@pytest.fixture(autouse=True)
def default_routing():
    retorch.reset_device_fallback_stats()
    yield
    retorch.set_device_fallback("auto")
    retorch.set_device_fallback_placement("requested")
    retorch.set_device_fallback_order(["cuda", "mps", "cpu"])
    retorch.reset_device_fallback_stats()


def on_cuda(src):
    """The tutorial's device line, as it reads on a machine with a GPU."""
    line = "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')"
    assert line in src
    return src.replace(line, "device = torch.device('cuda')")


@pytest.mark.parametrize("name", ["feedforward", "convnet", "rnn_lstm", "resnet"])
def test_examples_written_for_cuda_train_like_torch_on_cpu(name, monkeypatch, tmp_path):
    snapshots = []
    ref = run(name, torch, monkeypatch, tmp_path, snapshots)  # torch here has no GPU: cpu
    got = run(name, retorch, monkeypatch, tmp_path, snapshots, transform=on_cuda)
    assert str(got["device"]) == "cuda"
    assert all(p.device == retorch.device("cuda:0") for p in got["model"].parameters())
    check_same_training(ref, got)
    stats = retorch.device_fallback_stats()
    assert stats, "nothing fell back"
    assert {(s["from"], s["to"]) for s in stats} == {("cuda:0", "cpu")}
    ops = {s["op"] for s in stats}
    assert "aten::_to_copy" in ops  # the .to(device) calls
    assert ops & {"aten::addmm", "aten::mm", "aten::convolution"}
    assert all(s["bytes_copied"] == 0 for s in stats)  # host memory on both sides


def test_error_policy_names_the_first_op(monkeypatch, tmp_path):
    retorch.set_device_fallback("error")
    with pytest.raises(NotImplementedError, match=r"aten::_to_copy: no kernel for cuda:0"):
        run("convnet", retorch, monkeypatch, tmp_path, [], transform=on_cuda)


def test_environment_policy_and_report():
    prog = ("import retorch as torch\n"
            "x = torch.ones(4, device='cuda')\n"
            "print((x * 2).sum().item(), x.device)\n")
    p = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                       env=dict(PYTHON_ENV, RETORCH_DEVICE_FALLBACK="error"))
    assert p.returncode != 0
    assert "aten::empty" in p.stderr and "cuda:0" in p.stderr and "'error'" in p.stderr
    p = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                       env=dict(PYTHON_ENV, RETORCH_DEVICE_REPORT="1"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "8.0 cuda:0"
    assert "Device fallback report" in p.stderr
    assert "aten::mul.Tensor" in p.stderr and "cuda:0->cpu" in p.stderr


def test_warn_policy_is_a_user_warning_once_per_op():
    x = retorch.ones(3, device="cuda")
    retorch.set_device_fallback("warn")
    with pytest.warns(UserWarning, match=r"aten::exp has no kernel for cuda:0"):
        x.exp()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.exp()  # once per op
    warnings.simplefilter("default")


def test_tensors_report_the_device_they_were_asked_for():
    x = retorch.arange(6.0).cuda()
    ref = torch.arange(6.0)
    assert x.device == retorch.device("cuda", 0) and x.is_cuda
    assert str(x.device) == "cuda:0" and x.device.type == "cuda" and x.device.index == 0
    assert repr(x) == "tensor([0., 1., 2., 3., 4., 5.], device='cuda:0')"
    y = (x.view(2, 3) * 2).softmax(1).cpu()
    assert y.device == retorch.device("cpu")
    np.testing.assert_allclose(y.numpy(), (ref.view(2, 3) * 2).softmax(1).numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        x.numpy()
    assert x.tolist() == ref.tolist()
    assert retorch.zeros(2, device="mps").device == retorch.device("mps:0")
    assert retorch.zeros(2, device="xpu:1").device == retorch.device("xpu:1")
    with pytest.raises(RuntimeError, match="same device"):
        x + retorch.ones(6)
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, mps, xpu, meta"):
        retorch.device("tpu")


def test_executing_placement_returns_cpu_tensors():
    retorch.set_device_fallback_placement("executing")
    assert retorch.get_device_fallback_placement() == "executing"
    assert retorch.ones(2, device="cuda").device == retorch.device("cpu")


def test_device_api_answers_like_torch_without_a_gpu():
    assert retorch.cuda.is_available() == torch.cuda.is_available() == False  # noqa: E712
    assert retorch.cuda.device_count() == torch.cuda.device_count() == 0
    assert retorch.mps.is_available() is False and retorch.xpu.device_count() == 0
    assert retorch.cuda.current_device() == 0
    with retorch.cuda.device(1):
        assert retorch.cuda.current_device() == 1
        assert retorch.ones(1, device="cuda").device == retorch.device("cuda:1")
    assert retorch.cuda.current_device() == 0
    retorch.cuda.synchronize()
    s = retorch.cuda.Stream()
    assert s.query() and s.device == retorch.device("cuda:0")
    with retorch.cuda.stream(s):
        assert retorch.cuda.current_stream() == s
    start, end = retorch.cuda.Event(enable_timing=True), retorch.cuda.Event(enable_timing=True)
    start.record()
    retorch.ones(1000, device="cuda").exp().sum()
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0
    with pytest.raises(RuntimeError, match="enable_timing"):
        retorch.cuda.Event().elapsed_time(end)
    assert retorch.cuda.memory_allocated() == 0 and retorch.cuda.max_memory_allocated() == 0
    retorch.cuda.reset_peak_memory_stats()
    retorch.cuda.empty_cache()
    assert "No cuda device" in retorch.cuda.memory_summary()
    assert retorch.cuda.memory_stats() == {} and not retorch.cuda.is_bf16_supported()
    for f in (retorch.cuda.get_device_properties, retorch.cuda.get_device_name,
              retorch.cuda.get_device_capability, retorch.cuda.mem_get_info):
        with pytest.raises(RuntimeError, match="no cuda device is available"):
            f()
    with pytest.raises(RuntimeError, match="mps.get_device_properties: no mps device"):
        retorch.mps.get_device_properties()


def test_out_of_memory_is_torchs_error_class():
    assert retorch.cuda.OutOfMemoryError is retorch.OutOfMemoryError
    assert issubclass(retorch.OutOfMemoryError, RuntimeError)
    with pytest.raises(retorch.OutOfMemoryError, match="DefaultCPUAllocator: not enough memory"):
        retorch.empty(1 << 58, dtype=retorch.uint8)
    with pytest.raises(retorch.cuda.OutOfMemoryError):  # cuda here: host memory, the fallback's
        retorch.empty(1 << 58, dtype=retorch.uint8, device="cuda")
    assert float(retorch.ones(3).sum()) == 3.0


def test_streams_without_a_gpu_are_labels_with_torchs_api():
    s1, s2 = retorch.cuda.Stream(), retorch.cuda.Stream(priority=-1)
    assert isinstance(s1, retorch.cuda.Stream)
    assert s1.stream_id != 0 and s1.stream_id != s2.stream_id and s2.priority == -1
    assert s1 != retorch.cuda.default_stream() and len({s1, s2, retorch.cuda.default_stream()}) == 3
    assert retorch.xpu.Stream().device == retorch.device("xpu:0")
    with pytest.raises(ValueError, match="Expected a cuda device"):
        retorch.cuda.Stream(device="xpu")
    x = retorch.ones(2, 3, device="cuda")
    with retorch.cuda.stream(s1):
        assert retorch.cuda.current_stream() == s1
        s1.wait_stream(s2)
        e = s2.record_event()
        s1.wait_event(e)
        e.wait()
        y = x * 2
        y.record_stream(s1)
        graph = retorch.runtime.capture(lambda: retorch.ones(3) + 1)
    assert retorch.cuda.current_stream() == retorch.cuda.default_stream()
    assert s1.query() and y.tolist() == [[2.0] * 3] * 2
    assert {r["stream"] for r in graph.records()} == {0}  # cpu kernels run on no stream of s1's
    with pytest.raises(NotImplementedError, match=r"record_stream.*float32.*\[2, 3\].*cpu"):
        retorch.ones(2, 3).record_stream(s1)
    with pytest.raises(ValueError, match="record_stream"):
        x.record_stream(retorch.xpu.Stream())


def test_cuda_graphs_without_a_gpu_raise_and_leave_the_stream_alone():
    g = retorch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="need a CUDA device"):
        with retorch.cuda.graph(g):
            pass
    assert retorch.cuda.current_stream() == retorch.cuda.default_stream()
    with pytest.raises(RuntimeError, match="nothing was captured"):
        g.replay()
    with pytest.raises(ValueError, match="capture_error_mode"):
        g.capture_begin(capture_error_mode="strict")
    with pytest.raises(NotImplementedError, match="pool"):
        g.capture_begin(pool=(0, 1))


def test_pinned_memory_without_a_gpu_raises_as_torch_does():
    # (torch 1.13 here raises RuntimeError 'Pinned memory requires CUDA', or NotImplementedError
    # for aten::_pin_memory once its CUDA stub is loaded)
    x = torch.ones(3)
    r = retorch.ones(3)
    assert r.is_pinned() is False and x.is_pinned() is False
    with pytest.raises(RuntimeError, match="pinned memory requires a CUDA device"):
        r.pin_memory()
    assert r.cuda(non_blocking=True).device.type == "cuda"  # the flag is accepted
    for make in (lambda L, **k: L.zeros(3, **k), lambda L, **k: L.empty(2, 3, **k),
                 lambda L, **k: L.arange(4, **k), lambda L, **k: L.tensor([1.0, 2.0], **k),
                 lambda L, **k: L.full((2,), 7.0, **k), lambda L, **k: L.randn(3, **k)):
        got, want = make(retorch, pin_memory=False), make(torch, pin_memory=False)
        assert tuple(got.shape) == tuple(want.shape) and not got.is_pinned()
        with pytest.raises(RuntimeError, match="pinned memory requires a CUDA device"):
            make(retorch, pin_memory=True)
    with pytest.warns(UserWarning, match="pin_memory"):
        loader = retorch.utils.data.DataLoader(retorch.utils.data.TensorDataset(r), batch_size=2,
                                               pin_memory=True)
    assert not next(iter(loader))[0].is_pinned()


def test_rng_state_of_an_absent_device_drives_its_random_ops():
    retorch.cuda.manual_seed(4)
    state = retorch.cuda.get_rng_state()
    assert state.dtype == retorch.uint8
    a = retorch.rand(5, device="cuda")
    retorch.cuda.set_rng_state(state)
    b = retorch.rand(5, device="cuda")
    assert a.tolist() == b.tolist()
    retorch.manual_seed(4)
    assert retorch.rand(5).tolist() == a.tolist()  # what a cpu run draws
    s = retorch.get_rng_state()
    c = retorch.rand(3)
    retorch.set_rng_state(s)
    assert retorch.rand(3).tolist() == c.tolist()


def test_seeds_follow_torchs_api():
    retorch.manual_seed(11)
    assert retorch.initial_seed() == 11 and retorch.cuda.initial_seed() == 11
    s = retorch.seed()
    assert s == retorch.initial_seed() and s != 11  # a fresh random seed, as torch.seed()
    retorch.cuda.seed()
    assert retorch.cuda.initial_seed() not in (11, s)
    retorch.cuda.seed_all()
    a = retorch.rand(3, device="cuda")
    retorch.cuda.manual_seed(retorch.cuda.initial_seed())
    assert retorch.rand(3, device="cuda").tolist() == a.tolist()


def test_stream_context_nests_and_restores():
    s1, s2 = retorch.cuda.Stream(), retorch.cuda.Stream()
    ctx = retorch.cuda.StreamContext(s1)
    with ctx as entered:
        assert entered == s1 and retorch.cuda.current_stream() == s1
        with retorch.cuda.stream(s2):
            assert retorch.cuda.current_stream() == s2
            with ctx:  # re-entered
                assert retorch.cuda.current_stream() == s1
            assert retorch.cuda.current_stream() == s2
        assert retorch.cuda.current_stream() == s1
    assert retorch.cuda.current_stream() == retorch.cuda.default_stream()
    with retorch.cuda.StreamContext(None) as none:
        assert none is None and retorch.cuda.current_stream() == retorch.cuda.default_stream()


def test_nvtx_reaches_nvtx_or_says_it_is_not_built():
    """With the CUDA backend NVTX runs (no tool attached here: push and pop return NVTX's
    NVTX_NO_PUSH_POP_TRACKING, -2, as torch's would); without it every call raises."""
    if not retorch.backends.cuda.is_built():
        with pytest.raises(RuntimeError, match="NVTX functions not installed"):
            retorch.cuda.nvtx.range_push("outer")
        return
    assert retorch.cuda.nvtx.range_push("outer") == -2
    assert retorch.cuda.nvtx.range_pop() == -2
    with retorch.cuda.nvtx.range("step {}", 3):
        retorch.cuda.nvtx.mark("here")
    rid = retorch.cuda.nvtx.range_start("async")
    retorch.cuda.nvtx.range_end(rid)


def test_compat_matrix_doc_is_current():
    if not os.path.exists(CLI):
        pytest.skip("build/tools/retorch not built")
    p = subprocess.run([CLI, "devices", "--matrix", "--markdown"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    with open(os.path.join(ROOT, "docs", "devices.md")) as f:
        assert f.read() == p.stdout, "docs/devices.md is stale: run `make docs`"
    m = retorch.compat_matrix()
    assert m["aten::mm"] == ["native", "fallback", "fallback", "fallback", "native"]
    assert m["aten::nonzero"][4] == "missing"
    assert m["aten::zeros"][1] == "composite"
    assert set(m) == set(retorch._C._ops())


def test_devices_cli_lists_devices_and_reports_a_command():
    if not os.path.exists(CLI):
        pytest.skip("build/tools/retorch not built")
    p = subprocess.run([CLI, "devices"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "cuda    no" in p.stdout and "cpu     yes" in p.stdout
    prog = "import retorch as t; t.ones(2, device='mps').exp()"
    p = subprocess.run([CLI, "devices", "--report", "--", sys.executable, "-c", prog],
                       capture_output=True, text=True, env=PYTHON_ENV)
    assert p.returncode == 0, p.stderr
    assert "aten::exp" in p.stderr and "mps:0->cpu" in p.stderr


def test_train_cli_on_cuda_gives_the_cpu_weights(tmp_path):
    if not os.path.exists(CLI):
        pytest.skip("build/tools/retorch not built")
    if not os.path.exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"):
        pytest.skip("Fashion-MNIST (dataset-fashion-mnist) not installed")
    import json
    st = pytest.importorskip("safetensors.numpy")
    runs = {}
    for dev in ("cpu", "cuda"):
        out = tmp_path / dev
        p = subprocess.run([CLI, "train", "--device", dev, "--out-dir", str(out), "--train-limit",
                            "400", "--test-limit", "200", "--epochs", "1", "--no-plot",
                            "--no-tensorboard", "--log-interval", "1", "--workers", "0"],
                           capture_output=True, text=True, env=dict(os.environ,
                                                                    RETORCH_DEVICE_REPORT="1"))
        assert p.returncode == 0, p.stderr
        with open(out / "metrics.jsonl") as f:
            losses = [json.loads(line).get("loss") for line in f]
        runs[dev] = (losses, st.load_file(str(out / "model.safetensors")), p.stderr)
    assert runs["cuda"][0] == runs["cpu"][0]
    for name, w in runs["cpu"][1].items():
        np.testing.assert_array_equal(runs["cuda"][1][name], w)
    assert "no op fell back" in runs["cpu"][2]
    assert "aten::convolution" in runs["cuda"][2] and "cuda:0->cpu" in runs["cuda"][2]
