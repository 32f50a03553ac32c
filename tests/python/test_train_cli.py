"""`retorch train` end to end: its first steps against PyTorch from identical weights, exact
resume, the files it writes (metrics, TensorBoard, plot, checkpoints) and its bad-input paths."""
import gzip
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn as tnn

import retorch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.path.join(ROOT, "build", "tools", "retorch")
DATA = "/usr/share/datasets/fashion-mnist"

pytestmark = pytest.mark.skipif(not os.path.exists(CLI), reason="build/tools/retorch not built")


def run(*args, check=True, **kw):
    p = subprocess.run([CLI, "train", *args], capture_output=True, text=True, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"retorch train failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def quick(out, *extra):
    """A small, fast run: 1000 training and 500 test images, no plot/TensorBoard."""
    return ["--out-dir", str(out), "--train-limit", "1000", "--test-limit", "500",
            "--no-plot", "--no-tensorboard", *extra]


def read_metrics(out):
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


def idx_images(name, n):
    with gzip.open(os.path.join(DATA, name)) as f:
        raw = f.read()
    return np.frombuffer(raw, np.uint8, offset=16)[: n * 784].reshape(n, 1, 28, 28)


def idx_labels(name, n):
    with gzip.open(os.path.join(DATA, name)) as f:
        raw = f.read()
    return np.frombuffer(raw, np.uint8, offset=8)[:n].astype(np.int64)


class TorchConvNet(tnn.Module):
    """The CLI's default ConvNet, with the same parameter names."""

    def __init__(self):
        super().__init__()
        self.layer1 = tnn.Sequential(tnn.Conv2d(1, 16, 5, 1, 2), tnn.BatchNorm2d(16), tnn.ReLU(),
                                     tnn.MaxPool2d(2))
        self.layer2 = tnn.Sequential(tnn.Conv2d(16, 32, 5, 1, 2), tnn.BatchNorm2d(32), tnn.ReLU(),
                                     tnn.MaxPool2d(2))
        self.fc = tnn.Linear(7 * 7 * 32, 10)

    def forward(self, x):
        return self.fc(self.layer2(self.layer1(x)).flatten(1))


def save_torch_state(model, path):
    retorch.io.save_file({k: retorch.from_numpy(v.detach().numpy().copy())
                          for k, v in model.state_dict().items()}, str(path))


def test_first_20_steps_match_pytorch(tmp_path):
    torch.manual_seed(0)
    model = TorchConvNet()
    save_torch_state(model, tmp_path / "init.safetensors")
    run("--out-dir", str(tmp_path / "out"), "--train-limit", "2000", "--test-limit", "500",
        "--no-plot", "--no-tensorboard", "--init-weights", str(tmp_path / "init.safetensors"),
        "--max-steps", "20", "--no-shuffle", "--log-interval", "1", "--workers", "0",
        "--schedule", "none")
    ours = [r["loss"] for r in read_metrics(tmp_path / "out") if r["type"] == "step"]
    assert len(ours) == 20

    x = torch.from_numpy(idx_images("train-images-idx3-ubyte.gz", 2000).astype(np.float32) / 255)
    y = torch.from_numpy(idx_labels("train-labels-idx1-ubyte.gz", 2000))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    theirs = []
    for i in range(20):
        loss = tnn.functional.cross_entropy(model(x[i * 100:(i + 1) * 100]), y[i * 100:(i + 1) * 100])
        opt.zero_grad()
        loss.backward()
        opt.step()
        theirs.append(loss.item())
    # Step 1 agrees to float rounding; afterwards Adam turns summation-order differences (torch's
    # AVX-512 kernels vs ours) into parameter steps of up to lr, so the losses drift apart
    # slowly (1.9e-4 by step 20 on an AVX-512 machine), far below a step's change (~0.1).
    np.testing.assert_allclose(ours[:1], theirs[:1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-3)


def test_resume_is_exact(tmp_path):
    run(*quick(tmp_path / "straight", "--epochs", "2"))
    # The first part stops after epoch 1 of a 2-epoch run (the schedule spans --epochs).
    run(*quick(tmp_path / "split", "--epochs", "2", "--max-steps", "10"))
    p = run(*quick(tmp_path / "split", "--epochs", "2", "--resume"))
    assert "resumed from" in p.stdout
    a = retorch.io.load_file(str(tmp_path / "straight" / "model.safetensors"))
    b = retorch.io.load_file(str(tmp_path / "split" / "model.safetensors"))
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(a[k].numpy(), b[k].numpy()), f"{k} differs after resume"
    epochs = [r["epoch"] for r in read_metrics(tmp_path / "split") if r["type"] == "epoch"]
    assert epochs == [1, 2]


def test_outputs_are_written(tmp_path):
    out = tmp_path / "run"
    p = run("--out-dir", str(out), "--train-limit", "600", "--test-limit", "300", "--epochs", "2",
            "--model", "mlp")
    assert "Total params: 235,146" in p.stdout  # the summary table (784*256+256+256*128+128+1290)
    assert "epoch 2: train loss" in p.stdout
    rows = [r for r in read_metrics(out) if r["type"] == "epoch"]
    assert [r["epoch"] for r in rows] == [1, 2]
    assert 0.0 <= rows[-1]["test_acc"] <= 1.0 and rows[-1]["test_acc"] > 0.3
    with open(out / "learning_curves.png", "rb") as f:
        png = f.read()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000
    # TensorBoard files, read back with tensorboard's own reader (installed by the set-up).
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(out / "tensorboard" / "loss_test"))
    acc.Reload()
    test_loss = [e.value for e in acc.Scalars("loss")]
    np.testing.assert_allclose(test_loss, [r["test_loss"] for r in rows], rtol=1e-6)
    main = EventAccumulator(str(out / "tensorboard"))
    main.Reload()
    assert "layers.1.weight" in main.Tags()["histograms"]
    # The checkpoint loads into a fresh model of the same architecture.
    ck = retorch.io.load_file(str(out / "checkpoints" / "last.safetensors"))
    assert "model.layers.1.weight" in ck and "optimizer.state.0.0.exp_avg" in ck


def test_bad_input(tmp_path):
    p = run(*quick(tmp_path / "a", "--data-dir", str(tmp_path / "nowhere")), check=False)
    assert p.returncode == 1
    assert "train-images-idx3-ubyte" in p.stderr and "dataset-fashion-mnist" in p.stderr
    # A truncated dataset file.
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in os.listdir(DATA):
        with open(os.path.join(DATA, name), "rb") as f:
            data = f.read()
        with open(bad / name, "wb") as f:
            f.write(data if "t10k-labels" not in name else data[:100])
    p = run(*quick(tmp_path / "b", "--data-dir", str(bad)), check=False)
    assert p.returncode == 1 and "t10k-labels" in p.stderr, p.stderr
    # A checkpoint of another architecture.
    run(*quick(tmp_path / "c", "--model", "mlp"))
    p = run(*quick(tmp_path / "c", "--model", "convnet", "--resume", "--epochs", "2"), check=False)
    assert p.returncode == 1
    assert "Missing key(s)" in p.stderr and "layer1.0.weight" in p.stderr, p.stderr
    # Bad options are refused by the argument parser.
    p = run("--model", "transformer", check=False)
    assert p.returncode != 0 and "transformer" in (p.stderr + p.stdout)


def test_nan_loss_stops_and_keeps_last_checkpoint(tmp_path):
    out = tmp_path / "run"
    run(*quick(out))
    ckpt = out / "checkpoints" / "last.safetensors"
    before = ckpt.read_bytes()
    torch.manual_seed(0)
    model = TorchConvNet()
    with torch.no_grad():
        model.fc.weight.fill_(float("nan"))
    save_torch_state(model, tmp_path / "nan.safetensors")
    p = run(*quick(out, "--init-weights", str(tmp_path / "nan.safetensors")), check=False)
    assert p.returncode == 2
    assert "loss became NaN" in p.stderr and "last good checkpoint" in p.stderr, p.stderr
    assert ckpt.read_bytes() == before


def test_ctrl_c_leaves_a_resumable_checkpoint(tmp_path):
    out = tmp_path / "run"
    args = ["--out-dir", str(out), "--train-limit", "3000", "--test-limit", "500", "--no-plot",
            "--no-tensorboard"]
    proc = subprocess.Popen([CLI, "train", *args, "--epochs", "50"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if line.startswith("epoch 1: train loss"):
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "--resume" in err
    p = run(*args, "--epochs", "2", "--resume")
    assert "resumed from" in p.stdout


RESNET_RECIPE = ["--augment", "--schedule", "onecycle", "--optimizer", "sgd", "--lr", "0.1",
                 "--weight-decay", "5e-4", "--batch-size", "128"]


@pytest.mark.parametrize("model,epochs,floor,extra", [("convnet", 2, 0.82, []), ("mlp", 3, 0.77, []),
                                                      ("resnet", 2, 0.68, RESNET_RECIPE)])
def test_short_runs_learn(tmp_path, model, epochs, floor, extra):
    """Shortened versions of the README's accuracy runs (6000 training images): the models
    must learn well past chance; the full-length figures are in the README."""
    run("--out-dir", str(tmp_path), "--model", model, "--epochs", str(epochs), "--train-limit",
        "6000", "--test-limit", "2000", "--no-plot", "--no-tensorboard", *extra)
    acc = [r["test_acc"] for r in read_metrics(tmp_path) if r["type"] == "epoch"]
    assert len(acc) == epochs and acc[-1] >= floor, acc
