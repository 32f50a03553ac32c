"""The CUDA issue's speed table on a GPU machine: retorch against PyTorch on the same GPU, in one
run, with the device's copy bandwidth as the limit of the memory-bound rows. Without a CUDA device
(or without a CUDA build of torch) it says so and exits 0.

  PYTHONPATH=python /usr/bin/python3 bench/bench_cuda.py [--quick]
"""
import argparse
import sys
import time

import numpy as np
import torch

import retorch


def timed(sync, fn, iters):
    """Seconds per call: best of three batches of `iters` calls, the device synchronized."""
    fn()
    sync()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / iters)
    return best


def sync_rt():
    retorch.cuda.synchronize()


def sync_t():
    torch.cuda.synchronize()


def both(make, iters):
    """make(lib) -> a no-argument callable; returns (retorch seconds, torch seconds)."""
    r = timed(sync_rt, make(retorch), iters)
    t = timed(sync_t, make(torch), iters)
    return r, t


def graphed(lib, sync, fn, reps=20):
    """Seconds per call of fn from replays of a CUDA graph of `reps` calls."""
    fn()
    sync()
    g = lib.cuda.CUDAGraph()
    with lib.cuda.graph(g):
        for _ in range(reps):
            fn()
    return timed(sync, g.replay, 20) / reps


def cycling(calls):
    """A no-argument callable that runs calls[0], calls[1], ... in turn."""
    state = [0]

    def fn():
        calls[state[0] % len(calls)]()
        state[0] += 1
    return fn


def projection_rows(bw):
    """(rows, GEMV s, cuBLAS-path s, torch s, read rate) of a decode step's projection: retorch's
    quantized_linear of bf16 rows as bytes (float32 activations and result) on aligned weights
    (the GEMV for up to 32 rows) and on weights 2 bytes off a 16-byte boundary (which the GEMV
    refuses: the activations rounded by a kernel, then cuBLAS), and torch's bf16 F.linear."""
    k, n, copies = 2048, 11264, 4
    wts = [torch.randn(n, k, device="cuda").bfloat16() for _ in range(copies)]
    raw = [w.cpu().view(torch.uint8).numpy() for w in wts]
    aligned = [retorch.from_numpy(b).to("cuda") for b in raw]
    shifted = [retorch.from_numpy(np.concatenate([np.zeros(2, np.uint8), b.ravel()])).to("cuda")
               [2:].view(n, 2 * k) for b in raw]
    out = []
    for m in (1, 2, 4, 8, 16, 32):
        xt = torch.randn(m, k, device="cuda").bfloat16()
        xr = retorch.from_numpy(xt.float().cpu().numpy()).to("cuda")
        g = graphed(retorch, sync_rt, cycling(
            [lambda w=w: retorch.quantized_linear(xr, w, 30, k) for w in aligned]))
        c = graphed(retorch, sync_rt, cycling(
            [lambda w=w: retorch.quantized_linear(xr, w, 30, k) for w in shifted]))
        t = graphed(torch, sync_t, cycling(
            [lambda w=w: torch.nn.functional.linear(xt, w) for w in wts]))
        rate = f"{2 * n * k / g / 1e9:.0f} GB/s ({2 * n * k / g / (bw / 2):.0%} of copy's reads)"
        out.append((m, g, c, t, rate))
    return out


def attention_inputs(batch, ctx, hq=32, hkv=4, d=64, bs=16, device="cuda"):
    """A decode step's attention over `ctx` cached positions per sequence (TinyLlama's heads, a
    bfloat16 cache): retorch's paged_attention arguments and torch's SDPA ones, same values."""
    g = torch.Generator().manual_seed(7)
    blocks = ctx // bs
    k = torch.randn(batch, ctx, hkv, d, generator=g).bfloat16()
    v = torch.randn(batch, ctx, hkv, d, generator=g).bfloat16()
    q = torch.randn(batch, hq, d, generator=g)
    rt = lambda t: retorch.from_numpy(t.float().numpy()).to(device)  # noqa: E731
    kc = rt(k.reshape(batch * blocks, bs, hkv, d)).to(retorch.bfloat16)
    vc = rt(v.reshape(batch * blocks, bs, hkv, d)).to(retorch.bfloat16)
    tables = retorch.from_numpy(np.arange(batch * blocks).reshape(batch, blocks)).to(device)
    seq = retorch.from_numpy(np.arange(batch)).to(device)
    pos = retorch.from_numpy(np.full(batch, ctx - 1)).to(device)
    ours = (rt(q), kc, vc, tables, seq, pos, d ** -0.5, -1)
    theirs = (q.bfloat16().unsqueeze(2).to(device), k.transpose(1, 2).to(device),
              v.transpose(1, 2).to(device))
    return ours, theirs


def attention_rows():
    """(batch, ctx, retorch s, torch s, cache read rate) of decode attention: retorch's
    paged_attention against torch's scaled_dot_product_attention (bf16, GQA) on the same cache,
    CUDA-graph replays."""
    out = []
    for batch, ctx in ((1, 1024), (1, 4096), (32, 1024)):
        ours, theirs = attention_inputs(batch, ctx)
        r = graphed(retorch, sync_rt, lambda: retorch.paged_attention(*ours))
        F = torch.nn.functional
        t = graphed(torch, sync_t, lambda: F.scaled_dot_product_attention(*theirs,
                                                                            enable_gqa=True))
        cache_bytes = 2 * batch * ctx * 4 * 64 * 2
        out.append((batch, ctx, r, t, f"{cache_bytes / r / 1e9:.0f} GB/s"))
    return out


def randn(lib, *shape, dtype=None):
    x = lib.randn(*shape)
    if dtype is not None:
        x = x.to(getattr(lib, dtype))
    return x.to("cuda")


def copy_bandwidth(n):
    """Bytes a second of torch's device-to-device copy of n floats (read + write)."""
    src = torch.empty(n, device="cuda")
    dst = torch.empty_like(src)
    return 2 * 4 * n / timed(sync_t, lambda: dst.copy_(src), 10)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller shapes")
    a = ap.parse_args()
    if not retorch.cuda.is_available():
        print("bench_cuda: no CUDA device for retorch here; nothing measured")
        return 0
    if not torch.cuda.is_available():
        print("bench_cuda: this torch has no CUDA; nothing measured")
        return 0
    print(f"device: {torch.cuda.get_device_name(0)}")
    n_gemm = 4096 if a.quick else 8192
    n_add = (64 if a.quick else 256) << 20
    n_row = 4096 if a.quick else 8192
    rows = []

    bw = copy_bandwidth(n_add)
    print(f"device copy bandwidth: {bw / 1e9:.0f} GB/s")

    def gemm(lib):
        x = randn(lib, n_gemm, n_gemm, dtype="bfloat16")
        y = randn(lib, n_gemm, n_gemm, dtype="bfloat16")
        return lambda: lib.mm(x, y)
    r, t = both(gemm, 5)
    flop = 2 * n_gemm ** 3
    rate = f"{flop / r / 1e12:.0f} / {flop / t / 1e12:.0f} TFLOP/s"
    rows.append((f"bf16 GEMM {n_gemm}^3", r, t, rate, "aim >= 0.95x torch.matmul"))

    def add(lib):
        x, y = randn(lib, n_add), randn(lib, n_add)
        return lambda: x + y
    r, t = both(add, 10)
    rows.append((f"add {n_add >> 20}M floats", r, t,
                 f"{12 * n_add / r / 1e9:.0f} GB/s ({12 * n_add / r / bw:.0%} of copy)",
                 "aim >= 90% of copy bandwidth"))

    for name, fn in (("softmax", lambda lib, x: lib.softmax(x, -1)),
                     ("layer_norm", lambda lib, x: lib.nn.functional.layer_norm(x, [n_row]))):
        def make(lib, fn=fn):
            x = randn(lib, n_row, n_row)
            return lambda: fn(lib, x)
        r, t = both(make, 10)
        rows.append((f"{name} {n_row}x{n_row}", r, t,
                     f"{8 * n_row * n_row / r / 1e9:.0f} GB/s", "aim >= torch"))

    def linear(lib):  # the bias in cuBLASLt's epilogue (Note [cuBLASLt epilogues])
        x = randn(lib, n_gemm, n_gemm, dtype="bfloat16")
        w = randn(lib, n_gemm, n_gemm, dtype="bfloat16")
        bias = randn(lib, n_gemm, dtype="bfloat16")
        return lambda: lib.nn.functional.linear(x, w, bias)
    r, t = both(linear, 5)
    rows.append((f"bf16 linear with bias {n_gemm}^3", r, t,
                 f"{flop / r / 1e12:.0f} / {flop / t / 1e12:.0f} TFLOP/s", "(no aim: >= torch)"))

    def cumsum(lib):  # the generic row scan (Note [CUDA scans])
        x = randn(lib, n_row, n_row)
        return lambda: lib.cumsum(x, -1)
    r, t = both(cumsum, 10)
    rows.append((f"cumsum rows {n_row}x{n_row}", r, t, f"{8 * n_row * n_row / r / 1e9:.0f} GB/s",
                 "(no aim: >= torch)"))

    def cast(lib):  # int64 -> float32 on the device (Note [CUDA casts])
        x = lib.arange(n_add >> 2, device="cuda")
        return lambda: x.to(lib.float32)
    r, t = both(cast, 10)
    rows.append((f"int64 -> float32 cast {n_add >> 22}M", r, t,
                 f"{12 * (n_add >> 2) / r / 1e9:.0f} GB/s ({12 * (n_add >> 2) / r / bw:.0%} of "
                 "copy)", "(no aim: >= torch)"))

    x = randn(retorch, n_add)
    chain = retorch.compile(lambda a: (a * 2 + 1).tanh())
    r = timed(sync_rt, lambda: chain(x), 10)
    tx = randn(torch, n_add)
    t = timed(sync_t, lambda: (tx * 2 + 1).tanh(), 10)
    rows.append((f"compiled (a*2+1).tanh() {n_add >> 20}M", r, t,
                 f"{8 * n_add / r / 1e9:.0f} GB/s ({8 * n_add / r / bw:.0%} of copy)",
                 "aim >= 85% of bandwidth (torch eager)"))

    projections = projection_rows(bw)
    attention = attention_rows()
    print(f"\n| case | retorch | PyTorch {torch.__version__} | time ratio | rate | aim |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, r, t, rate, aim in rows:
        print(f"| {name} | {r * 1e3:.3f} ms | {t * 1e3:.3f} ms | {r / t:.2f} | {rate} | {aim} |")
    print("\nDecode projections (Note [Few-row projections]): rows x 2048 activations times "
          "TinyLlama's fused gate/up bf16 weights [11264, 2048], four copies in turn (184 MB, "
          "past the L2), device time per call from CUDA-graph replays:\n")
    print("| rows | retorch GEMV | retorch cuBLAS path | torch F.linear (bf16 in and out) | "
          "GEMV weight read rate |")
    print("| --- | --- | --- | --- | --- |")
    for m, g, c, t, rate in projections:
        print(f"| {m} | {g * 1e6:.1f} µs | {c * 1e6:.1f} µs | {t * 1e6:.1f} µs | {rate} |")
    print("\nDecode attention (Note [CUDA paged attention]): one query token per sequence, 32 query "
          "heads over 4 bf16 KV heads of 64 dims (TinyLlama's), retorch paged_attention against "
          "torch scaled_dot_product_attention(enable_gqa=True), CUDA-graph replays:\n")
    print("| sequences | context | retorch | torch SDPA | retorch cache read rate |")
    print("| --- | --- | --- | --- | --- |")
    for batch, ctx, r, t, rate in attention:
        print(f"| {batch} | {ctx} | {r * 1e6:.1f} µs | {t * 1e6:.1f} µs | {rate} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
