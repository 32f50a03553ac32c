"""Mixed precision on the cpu: a training step (forward, backward, SGD) of an MLP, a small ConvNet
and conv-batchnorm blocks in float32 and under autocast("cpu") (bfloat16 matmuls and convolutions, float32
weights and loss), retorch against torch in the same run, ms per step (median of 15).

  PYTHONPATH=python /usr/bin/python3 bench/bench_amp.py
"""
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

    for _ in range(3):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    torch.set_num_threads(retorch.get_num_threads())
    print(f"threads: {retorch.get_num_threads()}, torch {torch.__version__}")
    print(f"{'case':40s} {'mode':9s} {'retorch ms':>11s} {'torch ms':>9s} {'torch/retorch':>14s}")
    for name, build, width, shape in CASES:
        for amp in (False, True):
            r = step_ms(retorch, build, width, shape, amp)
            t = step_ms(torch, build, width, shape, amp)
            mode = "autocast" if amp else "float32"
            print(f"{name:40s} {mode:9s} {r:11.2f} {t:9.2f} {t / r:13.2f}x")


if __name__ == "__main__":
    main()
