"""conv3d / conv_transpose3d forward+backward: retorch's depth-folded composition (Note [Depth
folding] in nn/_functional_3d.py) against PyTorch, and two other compositions against the same
PyTorch call (one conv2d per kernel depth, summed; stacked strided depth slices instead of
im2col), on N=4, C=16->32, 16x32x32, k=3, padding 1.
Run: LD_LIBRARY_PATH=... PYTHONPATH=python /usr/bin/python3 bench/bench_conv3d.py [threads]"""
import os
import sys

import numpy as np
import torch

import retorch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_nn import both, fwd_bwd, per_call_pair  # noqa: E402


def conv3d_kd_loop(x, w, b, pad):
    """The alternative: one conv2d per kernel depth index over depth-folded slices, summed."""
    n, c, depth, h, wd = x.shape
    out_c, kd = w.shape[0], w.shape[2]
    xp = retorch.nn.functional.pad(x, [0, 0, 0, 0, pad, pad])
    d_out = xp.shape[2] - kd + 1
    total = None
    for i in range(kd):
        sl = xp[:, :, i:i + d_out].transpose(1, 2).reshape(n * d_out, c, h, wd)
        y = retorch.conv2d(sl, w[:, :, i], None, 1, pad)
        total = y if total is None else total + y
    total = total.reshape(n, d_out, out_c, total.shape[2], total.shape[3]).transpose(1, 2)
    return total.contiguous() + b.reshape(1, out_c, 1, 1, 1)


def conv3d_stacked(x, w, b, pad):
    """The alternative: the depth-folded conv2d with its input gathered by stacking kD strided
    depth slices (F.pad first) instead of im2col."""
    n, c, depth, h, wd = x.shape
    out_c, kd = w.shape[0], w.shape[2]
    xt = retorch.nn.functional.pad(x, [0, 0, 0, 0, pad, pad]).transpose(1, 2)
    d_out = xt.shape[1] - kd + 1
    cols = retorch.stack([xt[:, i:i + d_out] for i in range(kd)], 3)
    y = retorch.conv2d(cols.reshape(n * d_out, c * kd, h, wd),
                       w.reshape(out_c, c * kd, w.shape[3], w.shape[4]), b, 1, pad)
    return y.reshape(n, d_out, out_c, h, wd).transpose(1, 2).contiguous()


def main():
    if len(sys.argv) > 1:
        retorch.set_num_threads(int(sys.argv[1]))
    torch.set_num_threads(retorch.get_num_threads())
    rng = np.random.default_rng(0)
    f32 = np.float32
    x_t, x_r = both(rng.standard_normal((4, 16, 16, 32, 32), dtype=f32), True)
    w_t, w_r = both(rng.standard_normal((32, 16, 3, 3, 3), dtype=f32) * 0.1, True)
    b_t, b_r = both(rng.standard_normal(32, dtype=f32), True)
    wt_t, wt_r = both(rng.standard_normal((16, 32, 3, 3, 3), dtype=f32) * 0.1, True)
    bt_t, bt_r = both(rng.standard_normal(32, dtype=f32), True)
    Fr, Ft = retorch.nn.functional, torch.nn.functional
    rows = [
        ("conv3d fwd+bwd", fwd_bwd(lambda: Fr.conv3d(x_r, w_r, b_r, 1, 1), x_r, w_r, b_r),
         fwd_bwd(lambda: Ft.conv3d(x_t, w_t, b_t, 1, 1), x_t, w_t, b_t)),
        ("conv3d fwd+bwd, per-kD loop", fwd_bwd(lambda: conv3d_kd_loop(x_r, w_r, b_r, 1), x_r,
                                                w_r, b_r),
         fwd_bwd(lambda: Ft.conv3d(x_t, w_t, b_t, 1, 1), x_t, w_t, b_t)),
        ("conv3d fwd+bwd, stacked slices", fwd_bwd(lambda: conv3d_stacked(x_r, w_r, b_r, 1),
                                                   x_r, w_r, b_r),
         fwd_bwd(lambda: Ft.conv3d(x_t, w_t, b_t, 1, 1), x_t, w_t, b_t)),
        ("conv_transpose3d fwd+bwd", fwd_bwd(lambda: Fr.conv_transpose3d(x_r, wt_r, bt_r, 1, 1),
                                             x_r, wt_r, bt_r),
         fwd_bwd(lambda: Ft.conv_transpose3d(x_t, wt_t, bt_t, 1, 1), x_t, wt_t, bt_t)),
    ]
    print(f"threads: {retorch.get_num_threads()}")
    for name, ours, theirs in rows:
        t_ours, t_theirs = per_call_pair(ours, theirs, min_time=3.0, reps=7)
        print(f"{name:32s} retorch {t_ours * 1e3:8.2f} ms  torch {t_theirs * 1e3:8.2f} ms  "
              f"ratio {t_ours / t_theirs:5.2f}")


if __name__ == "__main__":
    main()
