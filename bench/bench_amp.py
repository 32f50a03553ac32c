"""Mixed precision on the cpu: a training step (forward, backward, SGD) of an MLP, a small ConvNet
and conv-batchnorm blocks in float32 and under autocast("cpu") (bfloat16 matmuls and
convolutions, float32 weights and loss), retorch against torch in the same run, ms per step (median of 15); then the
bfloat16 kernels those steps run against float32's (`--kernels` alone prints only them).

  PYTHONPATH=python /usr/bin/python3 bench/bench_amp.py [--kernels]
"""
import sys
import statistics
import time

import numpy as np
import torch

import retorch


def mlp(lib, width):
    nn = lib.nn
    return nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width),
                         nn.GELU(), nn.Linear(width, 10))


def convnet(lib, _):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 8 * 8, 10))


def bn_convnet(lib, _):
    """Conv-BatchNorm-ReLU blocks, one with stride 2, global average pool: a small ResNet stem."""
    nn = lib.nn

    def block(cin, cout, stride):
        return [nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
                nn.BatchNorm2d(cout), nn.ReLU()]
    return nn.Sequential(*block(3, 32, 1), *block(32, 64, 2), *block(64, 64, 1),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


CASES = [("MLP 1024 -> 4096 -> 1024, batch 256", mlp, 1024, (256, 1024)),
         ("ConvNet 32x32x3, batch 64", convnet, None, (64, 3, 32, 32)),
         ("Conv-BN-ReLU x3 32x32x3, batch 64", bn_convnet, None, (64, 3, 32, 32))]


def step_ms(lib, build, width, shape, amp, steps=15):
    lib.manual_seed(0)
    model = build(lib, width)
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    x = lib.tensor(np.random.default_rng(0).standard_normal(shape)).float()
    y = lib.tensor(np.random.default_rng(1).integers(0, 10, shape[0]))

    def step():
        opt.zero_grad()
        with lib.autocast("cpu", enabled=amp):
            loss = lib.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    return median_ms(step, steps, warmup=3)


def median_ms(fn, reps=25, warmup=2):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def kernel_cases(lib):
    """(name, fn(x)) for the ops of an autocast ConvNet step; x is the case's input."""
    F = lib.nn.functional
    g = np.random.default_rng(2)

    def conv(n, c, h, o, stride):
        w = lib.tensor(g.standard_normal((o, c, 3, 3))).float()
        x = lib.tensor(g.standard_normal((n, c, h, h))).float()
        out = (h + 2 - 3) // stride + 1
        go = lib.tensor(g.standard_normal((n, o, out, out))).float()
        pad = (h + 2 - 3) % stride
        label = f"{n}x{c}x{h}x{h} -> {o}, 3x3/{stride}"
        if lib is torch:
            wgrad = (lambda go, x, w: torch.ops.aten.convolution_backward(
                go, x, w, None, [stride] * 2, [1, 1], [1, 1], False, [0, 0], 1,
                [False, True, False])[1])
        else:
            wgrad = (lambda go, x, w: retorch._convolution_backward_weight(
                go, x, list(w.shape), [stride] * 2, [1, 1], [1, 1], False, 1))
        return [(f"conv {label}", (x, w), lambda x, w: F.conv2d(x, w, None, stride, 1)),
                (f"conv input grad {label}", (go, w),
                 lambda go, w: F.conv_transpose2d(go, w, None, stride, 1, pad)),
                (f"conv weight grad {label}", (go, x, w), wgrad)]
    x = lib.tensor(g.standard_normal((64, 32, 32, 32))).float()
    bn = (x, lib.ones(32), lib.zeros(32), lib.zeros(32), lib.ones(32))
    a, b = (lib.tensor(g.standard_normal((8, 8))).float() for _ in range(2))
    return conv(64, 3, 32, 32, 1) + conv(64, 32, 16, 64, 1) + conv(64, 32, 32, 64, 2) + [
        ("max_pool2d 2x2, 64x32x32x32", (x,), lambda x: F.max_pool2d(x, 2)),
        ("batch_norm (training), 64x32x32x32", bn,
         lambda x, *p: lib.native_batch_norm(x, *p, True, 0.1, 1e-5)[0]),
        ("mm 8x8x8", (a, b), lambda a, b: lib.mm(a, b))]


def kernels():
    print(f"\n{'bfloat16 kernel (ms)':46s} {'retorch f32':>11s} {'retorch bf16':>12s} "
          f"{'torch f32':>9s} {'torch bf16':>10s}")
    cases = {lib: kernel_cases(lib) for lib in (retorch, torch)}
    for i, (name, _, _) in enumerate(cases[retorch]):
        row = []
        for lib in (retorch, torch):
            _, args, fn = cases[lib][i]
            for dt in (lib.float32, lib.bfloat16):
                cast = [a.to(dt) for a in args]
                try:
                    row.append(f"{median_ms(lambda: fn(*cast)):.4f}")
                except RuntimeError:  # torch 1.13's bfloat16 conv_transpose2d of few channels
                    row.append("error")
        print(f"{name:46s} {row[0]:>11s} {row[1]:>12s} {row[2]:>9s} {row[3]:>10s}")


def main():
    torch.set_num_threads(retorch.get_num_threads())
    print(f"threads: {retorch.get_num_threads()}, torch {torch.__version__}")
    if "--kernels" in sys.argv:
        kernels()
        return
    print(f"{'case':40s} {'mode':9s} {'retorch ms':>11s} {'torch ms':>9s} {'torch/retorch':>14s}")
    for name, build, width, shape in CASES:
        for amp in (False, True):
            r = step_ms(retorch, build, width, shape, amp)
            t = step_ms(torch, build, width, shape, amp)
            mode = "autocast" if amp else "float32"
            print(f"{name:40s} {mode:9s} {r:11.2f} {t:9.2f} {t / r:13.2f}x")
    kernels()


if __name__ == "__main__":
    main()
