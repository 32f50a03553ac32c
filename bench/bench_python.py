"""Python-side benchmark: retorch vs PyTorch per-op overhead and a small forward+backward."""
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
    return add, fb


def main():
    torch.set_num_threads(retorch.get_num_threads())
    r = cases(retorch)
    t = cases(torch)
    print(f"{'case':<40} {'retorch':>12} {'PyTorch':>12} {'time ratio':>10}")
    names = ["add, 1 element (Python per-op)", "(x@w).relu().sum().backward() 64x128"]
    for name, ours, theirs in zip(names, r, t):
        print(f"{name:<40} {ours * 1e6:9.2f} us {theirs * 1e6:9.2f} us {ours / theirs:10.2f}")
    print("time ratio = retorch time / PyTorch time (below 1 means retorch is faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
