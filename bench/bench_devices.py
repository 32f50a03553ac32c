"""Device routing overhead: a model written for cuda running through the device fallback on cpu,
against the same model written for cpu (and PyTorch on cpu for reference), in one run."""
import sys

import numpy as np
import torch

import retorch
from bench_nn import paired_ratio, per_call_pair


def convnet(lib):
    """The seeds' ConvNet (two conv + batch-norm + pool blocks and a linear head)."""
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 5, padding=2), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 5, padding=2), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 32, 10))


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                         nn.Linear(128, 10))


def train_step(lib, model, x, y):
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return step


def infer(lib, model, x):
    def run():
        with lib.no_grad():
            model(x)
    return run


def case(name, make_model, batch, shape, training):
    rng = np.random.RandomState(0)
    xs = rng.rand(batch, *shape).astype(np.float32)
    ys = rng.randint(0, 10, size=batch).astype(np.int64)
    fns = {}
    for dev in ("cpu", "cuda"):
        retorch.manual_seed(0)
        m = make_model(retorch).to(dev)
        x, y = retorch.from_numpy(xs).to(dev), retorch.from_numpy(ys).to(dev)
        fns[dev] = train_step(retorch, m, x, y) if training else infer(retorch, m, x)
    torch.manual_seed(0)
    tm = make_model(torch)
    tx, ty = torch.from_numpy(xs), torch.from_numpy(ys)
    tfn = train_step(torch, tm, tx, ty) if training else infer(torch, tm, tx)
    ratio, t_cuda, t_cpu = paired_ratio(fns["cuda"], fns["cpu"], min_time=2.0, reps=15)
    _, t_torch = per_call_pair(fns["cpu"], tfn, min_time=1.0, reps=5)
    retorch.reset_device_fallback_stats()
    fns["cuda"]()
    falls = sum(s["calls"] for s in retorch.device_fallback_stats())
    print(f"{name:<34} {t_cpu * 1e3:>10.4f} {t_cuda * 1e3:>12.4f} {ratio:>8.3f} "
          f"{falls:>10d} {t_torch * 1e3:>10.4f}")
    return ratio


def main():
    torch.set_num_threads(retorch.get_num_threads())
    print("device fallback: cuda without a GPU runs on cpu (ms per call, medians; ratio: the median "
          "of cuda/cpu over back-to-back batches, aim <= 1.05)")
    print(f"{'case':<34} {'retorch cpu':>10} {'retorch cuda':>12} {'ratio':>8} "
          f"{'fallbacks':>10} {'torch cpu':>10}")
    ratios = [case("ConvNet train step, batch 100", convnet, 100, (1, 28, 28), True),
              case("MLP 784-256-128-10 infer, batch 100", mlp, 100, (784,), False),
              case("MLP 784-256-128-10 infer, batch 1", mlp, 1, (784,), False)]
    print(f"worst ratio {max(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
