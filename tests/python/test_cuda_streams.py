"""CUDA streams and graphs on a GPU (Notes [CUDA streams], [CUDA graphs]): work issued under
`retorch.cuda.stream(s)` runs on s and gives torch's values, waits order streams, record_stream
keeps memory from early reuse, launch records and the profiler name the stream, and captured
graphs replay on new inputs with memory of their own; skipped, never passed, without a GPU."""
import numpy as np
import pytest
import torch

import retorch
import retorch.nn.functional as F

pytestmark = pytest.mark.skipif(not retorch.cuda.is_available(), reason="no CUDA device")


def pair(*shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return retorch.tensor(x).to("cuda"), torch.tensor(x)


def close(got, want, tol=1e-4):
    g = torch.tensor(got.cpu().numpy())
    assert torch.allclose(g, want, rtol=tol, atol=tol), (g - want).abs().max()


def busy(s, n=16):
    """Queues tens of milliseconds of products on s (4096^3 float32 each, no TF32)."""
    with retorch.cuda.stream(s):
        a = retorch.ones(4096, 4096, device="cuda")
        for _ in range(n):
            a @ a


def test_a_side_streams_kernels_give_torchs_values():
    x, tx = pair(64, 128)
    w, tw = pair(8, 3, 3, 3, seed=1)
    img, timg = pair(2, 3, 16, 16, seed=2)
    s = retorch.cuda.Stream()
    s.wait_stream(retorch.cuda.current_stream())  # the uploads above ran on the default stream
    with retorch.cuda.stream(s):
        assert retorch.cuda.current_stream() == s
        y = (x @ x.t()).softmax(-1) + x[:, :64].relu()  # cuBLAS, a row kernel, pointwise
        conv = F.conv2d(img, w, padding=1)  # cuDNN
        compiled = retorch.compile(lambda a: (a * 2 + 1).tanh())(x)  # an NVRTC kernel
        y_host, conv_host, compiled_host = y.cpu(), conv.cpu(), compiled.cpu()  # wait for s
    close(y_host, (tx @ tx.t()).softmax(-1) + tx[:, :64].relu())
    close(conv_host, torch.nn.functional.conv2d(timg, tw, padding=1))
    close(compiled_host, (tx * 2 + 1).tanh())


def test_waits_order_a_consumer_after_a_producer_on_another_stream():
    x, tx = pair(1 << 20)
    producer, consumer = retorch.cuda.Stream(), retorch.cuda.Stream()
    producer.wait_stream(retorch.cuda.current_stream())
    busy(producer)
    with retorch.cuda.stream(producer):
        y = x * 2  # queued behind the products
        done = producer.record_event()
    consumer.wait_event(done)
    with retorch.cuda.stream(consumer):
        y.record_stream(consumer)
        z = y + 1
    retorch.cuda.current_stream().wait_stream(consumer)
    close(z, tx * 2 + 1, 0)
    assert producer.query() and consumer.query()


def test_record_stream_keeps_a_tensors_memory_until_the_stream_is_past_its_free():
    retorch.cuda.synchronize()
    retorch.cuda.empty_cache()
    side = retorch.cuda.Stream()
    n = 5 << 18  # 5 MiB of float32: a size class of its own here
    a = retorch.zeros(n, device="cuda")
    side.wait_stream(retorch.cuda.current_stream())
    busy(side)
    with retorch.cuda.stream(side):
        a.add_(1)
    a.record_stream(side)
    freed = a.data_ptr()
    del a
    b = retorch.empty(n, device="cuda")
    side_was_busy = not side.query()
    side.synchronize()
    c = retorch.empty(n, device="cuda")
    assert c.data_ptr() == freed  # back in the default stream's cache once side passed it
    if not side_was_busy:
        pytest.skip("the side stream finished before the reuse check")
    assert b.data_ptr() != freed


def test_launch_records_and_the_profiler_name_the_stream():
    x, _ = pair(256, 256)
    s = retorch.cuda.Stream()
    s.wait_stream(retorch.cuda.current_stream())
    with retorch.cuda.stream(s):
        graph = retorch.runtime.capture(lambda: (x @ x).relu())
        with retorch.profiler.profile() as p:
            (x @ x).relu().sum().item()
    on_device = [r for r in graph.records() if r["device"].startswith("cuda")]
    assert on_device and all(r["stream"] == s.stream_id for r in on_device)
    kernels = [e for e in p.events() if e["kind"] == "kernel" and e["name"].startswith("cuda::")]
    assert kernels and all(e["stream"] == s.stream_id for e in kernels)
    assert all(e["device_ns"] >= 0 for e in kernels)  # timed by events on s


def test_a_captured_graph_replays_on_new_inputs_like_torch():
    x, _ = pair(256, 64)
    w, tw = pair(64, 32, seed=1)
    static_in = x.clone()
    g = retorch.cuda.CUDAGraph()
    side = retorch.cuda.Stream()
    side.wait_stream(retorch.cuda.current_stream())
    with retorch.cuda.stream(side):  # a warm-up outside the capture (cuBLAS's first call)
        ((static_in * 2 + 1).relu() @ w).softmax(-1)
    retorch.cuda.current_stream().wait_stream(side)
    with retorch.cuda.graph(g):
        static_out = ((static_in * 2 + 1).relu() @ w).softmax(-1)
    for seed in (5, 6):
        nx, tnx = pair(256, 64, seed=seed)
        static_in.copy_(nx)
        g.replay()
        close(static_out, ((tnx * 2 + 1).relu() @ tw).softmax(-1))


def test_memory_a_graph_uses_is_not_handed_out_between_replays():
    x, tx = pair(1 << 16)
    g = retorch.cuda.CUDAGraph()
    with retorch.cuda.graph(g):
        tmp = x * 3  # freed inside the capture: its block stays the graph's
        out = (tmp + 1) * 2
        del tmp
    junk = [retorch.full((1 << 16,), 7.0, device="cuda") for _ in range(8)]
    g.replay()
    close(out, (tx * 3 + 1) * 2, 0)
    for j in junk:
        assert (j.cpu().numpy() == 7.0).all()


def test_work_that_needs_the_host_abandons_the_capture_with_a_clear_error():
    x, tx = pair(1000)
    g = retorch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="capturing"):
        with retorch.cuda.graph(g):
            (x * 2).sum().item()  # a copy to the host cannot be captured
    with pytest.raises(RuntimeError, match="nothing was captured"):
        g.replay()
    close(x + 1, tx + 1, 0)  # the device and its streams work on
    with pytest.raises(RuntimeError, match="non-default stream"):
        retorch.cuda.CUDAGraph().capture_begin()


def test_pinned_memory_and_copies_that_do_not_wait():
    """Note [Pinned host memory]: pinned cpu tensors, non_blocking copies both ways on a side
    stream, and a freed pinned block kept from reuse until its queued copy has run."""
    x = retorch.tensor(np.arange(1 << 20, dtype=np.float32))
    p = x.pin_memory()
    assert p.is_pinned() and not x.is_pinned() and p.device.type == "cpu"
    assert p.pin_memory().data_ptr() == p.data_ptr()  # already pinned: itself
    assert (p.numpy() == x.numpy()).all() and (p + 1).sum().item() == (x + 1).sum().item()
    assert x[::2].pin_memory().is_pinned()  # a strided view pins as a contiguous copy
    s = retorch.cuda.Stream()
    s.wait_stream(retorch.cuda.current_stream())
    with retorch.cuda.stream(s):
        d = p.to("cuda", non_blocking=True)
        e = p.cuda(non_blocking=True)
        back = retorch.empty(1 << 20).pin_memory()
        back.copy_(d * 2 + e, non_blocking=True)
    s.synchronize()
    assert (back.numpy() == x.numpy() * 3).all()
    # A pinned source freed while its copy waits behind other work on the stream: the block
    # is not handed out again (and overwritten) before the copy has read it.
    for _ in range(3):
        src = retorch.full((1 << 20,), 7.0).pin_memory()
        busy(s)
        with retorch.cuda.stream(s):
            dst = src.to("cuda", non_blocking=True)
        del src
        other = retorch.empty(1 << 20).pin_memory()
        other.fill_(-1.0)
        s.synchronize()
        assert (dst.cpu().numpy() == 7.0).all()
    loader = retorch.utils.data.DataLoader(retorch.utils.data.TensorDataset(x), batch_size=4,
                                           pin_memory=True)
    assert next(iter(loader))[0].is_pinned()
    z = retorch.zeros(5, pin_memory=True)  # torch's factory keyword
    assert z.is_pinned() and z.tolist() == [0.0] * 5


def test_device_properties_and_memory_queries_are_torchs():
    """get_device_properties / name / capability, mem_get_info and is_bf16_supported answer as
    torch.cuda does on the same GPU; memory_stats follows the caching allocator."""
    p, tp = retorch.cuda.get_device_properties(0), torch.cuda.get_device_properties(0)
    assert (p.name, p.major, p.minor, p.multi_processor_count, p.total_memory) == \
        (tp.name, tp.major, tp.minor, tp.multi_processor_count, tp.total_memory)
    assert retorch.cuda.get_device_name() == torch.cuda.get_device_name(0)
    assert retorch.cuda.get_device_capability() == torch.cuda.get_device_capability(0)
    assert retorch.cuda.is_bf16_supported() == torch.cuda.is_bf16_supported()
    assert "_CudaDeviceProperties(name='" in repr(p)
    free, total = retorch.cuda.mem_get_info()
    assert total == torch.cuda.mem_get_info()[1] == p.total_memory and 0 < free <= total
    before = retorch.cuda.memory_stats()["allocated_bytes.all.current"]
    x = retorch.empty(1 << 20, device="cuda")  # 4 MiB
    stats = retorch.cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] - before >= 4 << 20
    assert stats["allocated_bytes.all.peak"] >= stats["allocated_bytes.all.current"]
    assert stats["reserved_bytes.all.current"] >= stats["allocated_bytes.all.current"]
    del x
    with pytest.raises(ValueError, match="invalid device ordinal"):
        retorch.cuda.get_device_properties(retorch.cuda.device_count())
    with pytest.raises(retorch.cuda.OutOfMemoryError, match="CUDA out of memory"):
        retorch.empty(1 << 50, dtype=retorch.uint8, device="cuda")  # 1 PiB
    assert float(retorch.ones(3, device="cuda").sum()) == 3.0  # the device still works
