"""Training-epoch benchmark: `retorch train` against PyTorch training the same model with the
same hyper-parameters (Adam 1e-3, batch 100, Fashion-MNIST in memory) in the same run."""
import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = os.path.join(ROOT, "build", "tools", "retorch")
DATA = "/usr/share/datasets/fashion-mnist"


def idx(name, offset, shape):
    with gzip.open(os.path.join(DATA, name)) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset).reshape(shape)


def torch_model(name):
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                             nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(
        nn.Conv2d(1, 16, 5, 1, 2), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 5, 1, 2), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 32, 10))


def torch_epochs(name, epochs, x, y, xt, yt):
    """Per-epoch (seconds, test accuracy) of PyTorch's usual training loop on in-memory data."""
    torch.manual_seed(0)
    model = torch_model(name)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    out = []
    for _ in range(epochs):
        model.train()
        t0 = time.perf_counter()
        for idx_ in torch.randperm(len(x)).split(100):
            loss = nn.functional.cross_entropy(model(x[idx_]), y[idx_])
            opt.zero_grad()
            loss.backward()
            opt.step()
        secs = time.perf_counter() - t0
        model.eval()
        with torch.no_grad():
            acc = sum((model(xt[i:i + 1000]).argmax(1) == yt[i:i + 1000]).sum().item()
                      for i in range(0, len(xt), 1000)) / len(xt)
        out.append((secs, acc))
    return out


def retorch_epochs(name, epochs):
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([CLI, "train", "--model", name, "--epochs", str(epochs), "--out-dir", d,
                        "--schedule", "none", "--no-plot", "--no-tensorboard"], check=True,
                       capture_output=True)
        with open(os.path.join(d, "metrics.jsonl")) as f:
            rows = [json.loads(l) for l in f]
    return [(r["epoch_time_s"], r["test_acc"]) for r in rows if r["type"] == "epoch"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--models", default="convnet,mlp")
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count())
    x = torch.from_numpy(idx("train-images-idx3-ubyte.gz", 16, (60000, 1, 28, 28)).astype(np.float32) / 255)
    y = torch.from_numpy(idx("train-labels-idx1-ubyte.gz", 8, (60000,)).astype(np.int64))
    xt = torch.from_numpy(idx("t10k-images-idx3-ubyte.gz", 16, (10000, 1, 28, 28)).astype(np.float32) / 255)
    yt = torch.from_numpy(idx("t10k-labels-idx1-ubyte.gz", 8, (10000,)).astype(np.int64))
    print(f"threads: {os.cpu_count()}; Adam 1e-3, batch 100, {args.epochs} epoch(s); "
          "time = training loop only (evaluation excluded)")
    print(f"{'model':<8} {'epoch':>5} {'retorch s':>10} {'PyTorch s':>10} {'ratio':>6} "
          f"{'retorch acc':>12} {'PyTorch acc':>12}")
    for name in args.models.split(","):
        ours = retorch_epochs(name, args.epochs)
        theirs = torch_epochs(name, args.epochs, x, y, xt, yt)
        for e, ((rs, ra), (ts, ta)) in enumerate(zip(ours, theirs), 1):
            print(f"{name:<8} {e:>5} {rs:>10.2f} {ts:>10.2f} {rs / ts:>6.2f} {100 * ra:>11.2f}% "
                  f"{100 * ta:>11.2f}%")
    print("ratio = retorch epoch time / PyTorch epoch time (below 1 means retorch is faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
