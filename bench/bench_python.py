"""Python-side benchmark: retorch vs PyTorch per-op overhead, a small forward+backward,
training steps of Python nn.Module models (an MLP and the tutorial ConvNet at batch 100), and
channels-last max_pool2d / batch_norm (training) forwards on a 32x64x56x56 float32 input, and
jit.trace'd models run by each library's interpreter."""
import statistics
import sys
import time

import torch

import retorch


def per_call(fn, iters, reps=7):
    for _ in range(max(1, iters // 10)):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        times.append((time.perf_counter() - t0) / iters)
    return statistics.median(times)


def cases(lib):
    lib.manual_seed(0)
    a, b = lib.ones(1), lib.ones(1)
    add = per_call(lambda: lib.add(a, b), 100000)
    x = lib.randn(64, 128)
    w = lib.randn(128, 128, requires_grad=True)

    def step():
        (x @ w).relu().sum().backward()
        w.grad = None
    fb = per_call(step, 2000)
    return (add, fb, train_step(lib, mlp(lib), (32, 64), 2000),
            train_step(lib, convnet(lib), (100, 1, 28, 28), 20)) + channels_last(lib) + \
        traced(lib)


def traced(lib):
    """Inference of jit.trace'd models at batch 1 (each library's own tracer and interpreter)."""
    out = []
    for model, shape, iters in ((convnet(lib), (1, 1, 28, 28), 200), (mlp(lib), (1, 64), 5000)):
        model.eval()
        x = lib.randn(*shape)
        with lib.no_grad():
            t = lib.jit.trace(model, (x,))
            out.append(per_call(lambda: t(x), iters))
    return tuple(out)


def channels_last(lib):
    """max_pool2d (3x3, stride 2, padding 1, as in ResNet's stem) and batch_norm in training
    mode on a channels-last input; both libraries return channels-last outputs."""
    x = lib.randn(32, 64, 56, 56).contiguous(memory_format=lib.channels_last)
    F = lib.nn.functional
    w, b = lib.ones(64), lib.zeros(64)
    rm, rv = lib.zeros(64), lib.ones(64)
    pool = per_call(lambda: F.max_pool2d(x, 3, 2, 1), 20)
    bn = per_call(lambda: F.batch_norm(x, rm, rv, w, b, training=True), 20)
    return pool, bn


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def convnet(lib):
    """The tutorial ConvNet (tests/python/examples/convnet.py)."""
    nn = lib.nn

    class ConvNet(nn.Module):
        def __init__(self, num_classes=10):
            super().__init__()
            self.layer1 = nn.Sequential(nn.Conv2d(1, 16, kernel_size=5, stride=1, padding=2),
                                        nn.BatchNorm2d(16), nn.ReLU(),
                                        nn.MaxPool2d(kernel_size=2, stride=2))
            self.layer2 = nn.Sequential(nn.Conv2d(16, 32, kernel_size=5, stride=1, padding=2),
                                        nn.BatchNorm2d(32), nn.ReLU(),
                                        nn.MaxPool2d(kernel_size=2, stride=2))
            self.fc = nn.Linear(7 * 7 * 32, num_classes)

        def forward(self, x):
            out = self.layer2(self.layer1(x))
            return self.fc(out.reshape(out.size(0), -1))
    return ConvNet()


def train_step(lib, model, shape, iters):
    """One optimizer step (Adam) of model on a fixed random batch: zero_grad, forward,
    cross-entropy, backward, step."""
    x = lib.randn(*shape)
    y = lib.randint(0, 10, (shape[0],))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return per_call(step, iters, reps=5)


def main():
    torch.set_num_threads(retorch.get_num_threads())
    r = cases(retorch)
    t = cases(torch)
    print(f"{'case':<44} {'retorch':>12} {'PyTorch':>12} {'time ratio':>10}")
    names = ["add, 1 element (Python per-op)", "(x@w).relu().sum().backward() 64x128",
             "MLP 64-128-10 train step, batch 32", "tutorial ConvNet train step, batch 100",
             "max_pool2d 3x3/2 channels-last 32x64x56x56",
             "batch_norm train channels-last 32x64x56x56",
             "jit.trace ConvNet forward, batch 1", "jit.trace MLP 64-128-10 forward, batch 1"]
    for name, ours, theirs in zip(names, r, t):
        print(f"{name:<44} {ours * 1e6:9.2f} us {theirs * 1e6:9.2f} us {ours / theirs:10.2f}")
    print("time ratio = retorch time / PyTorch time (below 1 means retorch is faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
