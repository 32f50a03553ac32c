"""Neural-network op benchmark: retorch vs PyTorch on the same shapes in one run, with hardware limits."""
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import retorch


def _iters(fn, batch_time):
    """Calls of fn that take about batch_time seconds (after two warm-up calls)."""
    fn()
    t0 = time.perf_counter()
    fn()
    return max(1, int(batch_time / max(time.perf_counter() - t0, 1e-7)))


def _batch(fn, iters):
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - t0) / iters


def per_call(fn, min_time=0.25, reps=5):
    """Median seconds per call over `reps` batches, each at least min_time/reps long."""
    iters = _iters(fn, min_time / reps)
    return statistics.median(_batch(fn, iters) for _ in range(reps))


def per_call_pair(ours, theirs, min_time=0.5, reps=7):
    """Median seconds per call of two functions measured in alternating batches, so that both
    see the same machine (a shared VM's speed drifts by tens of percent within seconds)."""
    return paired_ratio(ours, theirs, min_time, reps)[1:]


def paired_ratio(ours, theirs, min_time=0.5, reps=15):
    """The median over alternating pairs of batches of ours' time over theirs' (each pair taken
    back to back, so a drift of the machine's speed cancels within it), and each side's median
    seconds per call."""
    iters = (_iters(ours, min_time / reps), _iters(theirs, min_time / reps))
    ratios, times = [], ([], [])
    for rep in range(reps):
        order = (0, 1) if rep % 2 == 0 else (1, 0)
        t = [0.0, 0.0]
        for i in order:
            t[i] = _batch((ours, theirs)[i], iters[i])
            times[i].append(t[i])
        ratios.append(t[0] / t[1])
    return statistics.median(ratios), statistics.median(times[0]), statistics.median(times[1])


def both(arr, requires_grad=False):
    """The same values as a torch tensor and a retorch tensor."""
    arr = np.ascontiguousarray(arr)
    t = torch.from_numpy(arr.copy()).requires_grad_(requires_grad)
    r = retorch.from_numpy(arr.copy())
    if requires_grad:
        r.requires_grad_(True)
    return t, r


def fwd_bwd(op, *tensors):
    """A closure running op forward and backward (sum of the output), clearing the grads."""
    def run():
        op().sum().backward()
        for x in tensors:
            x.grad = None
    return run


def cases(rng):
    f32 = np.float32
    x_t, x_r = both(rng.standard_normal((32, 32, 28, 28), dtype=f32), True)
    w_t, w_r = both(rng.standard_normal((64, 32, 3, 3), dtype=f32) * 0.1, True)
    b_t, b_r = both(rng.standard_normal(64, dtype=f32), True)
    conv_flop = 2 * 32 * 64 * 28 * 28 * 32 * 9
    # PyTorch picks a different oneDNN path when the weight requires grad (as in nn.Conv2d):
    # both are measured, plain tensors (the functional path) and tensors that require grad.
    xp_t, xp_r = both(x_t.detach().numpy())
    wp_t, wp_r = both(w_t.detach().numpy())
    bp_t, bp_r = both(b_t.detach().numpy())
    yield ("conv2d 32x32x28x28, 64 3x3, pad 1", conv_flop, "gemm",
           lambda: retorch.conv2d(xp_r, wp_r, bp_r, 1, 1),
           lambda: F.conv2d(xp_t, wp_t, bp_t, 1, 1))
    yield ("conv2d, requires_grad inputs", conv_flop, "gemm",
           lambda: retorch.conv2d(x_r, w_r, b_r, 1, 1), lambda: F.conv2d(x_t, w_t, b_t, 1, 1))
    yield ("conv2d fwd+bwd", 3 * conv_flop, "gemm",
           fwd_bwd(lambda: retorch.conv2d(x_r, w_r, b_r, 1, 1), x_r, w_r, b_r),
           fwd_bwd(lambda: F.conv2d(x_t, w_t, b_t, 1, 1), x_t, w_t, b_t))

    # Depthwise 3x3 (MobileNet-style): the direct kernels of Note [Depthwise convolution].
    dx_t, dx_r = both(rng.standard_normal((32, 64, 56, 56), dtype=f32), True)
    dw_t, dw_r = both(rng.standard_normal((64, 1, 3, 3), dtype=f32), True)
    dxp_t, dxp_r = both(dx_t.detach().numpy())
    dwp_t, dwp_r = both(dw_t.detach().numpy())
    dw_bytes = dx_t.numel() * 4 * 2
    yield ("depthwise 3x3 32x64x56x56, pad 1", dw_bytes, "bw",
           lambda: retorch.conv2d(dxp_r, dwp_r, None, 1, 1, 1, 64),
           lambda: F.conv2d(dxp_t, dwp_t, None, 1, 1, 1, 64))
    yield ("depthwise 3x3 fwd+bwd", None, None,
           fwd_bwd(lambda: retorch.conv2d(dx_r, dw_r, None, 1, 1, 1, 64), dx_r, dw_r),
           fwd_bwd(lambda: F.conv2d(dx_t, dw_t, None, 1, 1, 1, 64), dx_t, dw_t))

    p_t, p_r = both(rng.standard_normal((32, 64, 28, 28), dtype=f32))
    pool_bytes = p_t.numel() * 4 * 5 // 4
    yield ("max_pool2d 32x64x28x28, 2x2", pool_bytes, "bw",
           lambda: retorch.max_pool2d(p_r, 2), lambda: F.max_pool2d(p_t, 2))

    pg_t, pg_r = both(p_t.detach().numpy(), True)
    yield ("max_pool2d fwd+bwd", None, None,
           fwd_bwd(lambda: retorch.max_pool2d(pg_r, 2), pg_r),
           fwd_bwd(lambda: F.max_pool2d(pg_t, 2), pg_t))

    rm_t, rm_r = both(np.zeros(64, f32))
    rv_t, rv_r = both(np.ones(64, f32))
    g_t, g_r = both(rng.standard_normal(64, dtype=f32), True)
    bb_t, bb_r = both(rng.standard_normal(64, dtype=f32), True)
    bn_bytes = p_t.numel() * 4 * 3
    yield ("batch_norm train 32x64x28x28", bn_bytes, "bw",
           lambda: retorch.batch_norm(p_r, g_r, bb_r, rm_r, rv_r, True, 0.1, 1e-5, False),
           lambda: F.batch_norm(p_t, rm_t, rv_t, g_t, bb_t, True, 0.1, 1e-5))
    yield ("batch_norm fwd+bwd", None, None,
           fwd_bwd(lambda: retorch.batch_norm(pg_r, g_r, bb_r, None, None, True, 0.1, 1e-5, False),
                   pg_r, g_r, bb_r),
           fwd_bwd(lambda: F.batch_norm(pg_t, None, None, g_t, bb_t, True, 0.1, 1e-5),
                   pg_t, g_t, bb_t))

    l_t, l_r = both(rng.standard_normal((4096, 768), dtype=f32), True)
    lw_t, lw_r = both(rng.standard_normal(768, dtype=f32), True)
    lb_t, lb_r = both(rng.standard_normal(768, dtype=f32), True)
    yield ("layer_norm 4096x768", l_t.numel() * 8, "bw",
           lambda: retorch.layer_norm(l_r, [768], lw_r, lb_r, 1e-5),
           lambda: F.layer_norm(l_t, [768], lw_t, lb_t, 1e-5))
    yield ("layer_norm fwd+bwd", None, None,
           fwd_bwd(lambda: retorch.layer_norm(l_r, [768], lw_r, lb_r, 1e-5), l_r, lw_r, lb_r),
           fwd_bwd(lambda: F.layer_norm(l_t, [768], lw_t, lb_t, 1e-5), l_t, lw_t, lb_t))

    s_t, s_r = both(rng.standard_normal((4096, 1024), dtype=f32))
    yield ("softmax 4096x1024, dim -1", s_t.numel() * 8, "bw",
           lambda: retorch.softmax(s_r, -1), lambda: torch.softmax(s_t, -1))

    c_t, c_r = both(rng.standard_normal((256, 1000), dtype=f32), True)
    y = rng.integers(0, 1000, 256)
    y_t, y_r = both(y.astype(np.int64))
    yield ("cross_entropy 256x1000", c_t.numel() * 4, "bw",
           lambda: retorch.cross_entropy(c_r, y_r), lambda: F.cross_entropy(c_t, y_t))
    yield ("cross_entropy fwd+bwd", None, None,
           fwd_bwd(lambda: retorch.cross_entropy(c_r, y_r), c_r),
           fwd_bwd(lambda: F.cross_entropy(c_t, y_t), c_t))

    e_t, e_r = both(rng.standard_normal((50000, 512), dtype=f32))
    i_t, i_r = both(rng.integers(0, 50000, (32, 128)).astype(np.int64))
    yield ("embedding 50000x512, 32x128 ids", 32 * 128 * 512 * 4 * 2, "bw",
           lambda: retorch.embedding(e_r, i_r), lambda: F.embedding(i_t, e_t))


def limits():
    """Measured machine limits: SGEMM GFLOP/s (2048^2, OpenBLAS via torch) and copy GB/s."""
    a = torch.randn(2048, 2048)
    gemm = 2 * 2048 ** 3 / per_call(lambda: torch.mm(a, a)) / 1e9
    src = torch.randn(32 * 1024 * 1024 // 4)
    dst = torch.empty_like(src)
    copy = 2 * src.numel() * 4 / per_call(lambda: dst.copy_(src)) / 1e9
    return {"gemm": (gemm, "GFLOP/s"), "bw": (copy, "GB/s")}


def main():
    torch.set_num_threads(retorch.get_num_threads())
    lim = limits()
    rng = np.random.default_rng(0)
    print(f"threads: {retorch.get_num_threads()}; SGEMM peak {lim['gemm'][0]:.0f} GFLOP/s; "
          f"copy {lim['bw'][0]:.1f} GB/s")
    print(f"{'case':<36} {'retorch':>10} {'PyTorch':>10} {'ratio':>6}   {'retorch rate':>18}  limit")
    for name, work, kind, ours, theirs in cases(rng):
        r, t = per_call_pair(ours, theirs)
        rate = ""
        if work:
            unit = lim[kind][1]
            rate = f"{work / r / 1e9:7.1f} {unit} (PyTorch {work / t / 1e9:.1f})"
            rate += f"  {lim[kind][0]:.0f} {unit}"
        print(f"{name:<36} {r * 1e3:7.3f} ms {t * 1e3:7.3f} ms {r / t:6.2f}   {rate}")
    print("ratio = retorch time / PyTorch time (below 1 means retorch is faster); rates count "
          "the minimum bytes moved (bw) or 2*MACs (gemm)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
