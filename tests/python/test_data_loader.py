"""retorch.data from Python: IDX reading against numpy, DataLoader coverage and determinism."""
import gzip
import os

import numpy as np
import pytest
import torch

import retorch
from retorch import data

ROOT = "/usr/share/datasets/fashion-mnist"
HAVE_FASHION = os.path.exists(os.path.join(ROOT, "t10k-images-idx3-ubyte.gz"))


def numpy_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    assert raw[:2] == b"\0\0" and raw[2] == 0x08
    ndim = raw[3]
    dims = np.frombuffer(raw[4:4 + 4 * ndim], dtype=">u4").astype(int)
    return np.frombuffer(raw[4 + 4 * ndim:], dtype=np.uint8).reshape(dims)


@pytest.mark.skipif(not HAVE_FASHION, reason="needs the Debian package dataset-fashion-mnist")
def test_fashion_mnist_matches_numpy():
    images = numpy_idx(os.path.join(ROOT, "t10k-images-idx3-ubyte.gz"))
    labels = numpy_idx(os.path.join(ROOT, "t10k-labels-idx1-ubyte.gz"))
    raw = data.read_idx(os.path.join(ROOT, "t10k-images-idx3-ubyte.gz"))
    assert raw.dtype == retorch.uint8 and tuple(raw.shape) == (10000, 28, 28)
    np.testing.assert_array_equal(raw.numpy(), images)
    ds = data.FashionMNIST(train=False)
    assert len(ds) == 10000
    x, y = ds[123]
    assert tuple(x.shape) == (1, 28, 28) and x.dtype == retorch.float32
    np.testing.assert_array_equal(x.numpy()[0], images[123].astype(np.float32) / 255)
    assert y.item() == labels[123]
    np.testing.assert_array_equal(ds.targets.numpy(), labels.astype(np.int64))


def test_missing_dataset_error(tmp_path):
    with pytest.raises(RuntimeError, match="dataset-fashion-mnist"):
        data.FashionMNIST(str(tmp_path))


def make_dataset(n):
    x = retorch.arange(n * 4).to(retorch.float32).reshape(n, 1, 2, 2)
    return data.TensorDataset(x, retorch.arange(n))


@pytest.mark.parametrize("shuffle", [False, True])
def test_loader_covers_each_index_once(shuffle):
    loader = data.DataLoader(make_dataset(45), batch_size=7, shuffle=shuffle, num_workers=2)
    assert len(loader) == 7
    seen = []
    for x, y in loader:
        assert x.shape[0] == y.shape[0]
        np.testing.assert_array_equal(x.numpy()[:, 0, 0, 0], y.numpy() * 4)
        seen += y.numpy().tolist()
    assert sorted(seen) == list(range(45))
    assert (seen == sorted(seen)) == (not shuffle)
    drop = data.DataLoader(make_dataset(45), batch_size=7, drop_last=True)
    assert len(drop) == 6 and all(x.shape[0] == 7 for x, _ in drop)


def test_workers_and_transforms_are_deterministic():
    ds = make_dataset(30).map(data.Compose([data.RandomCrop(2, 2, 1), data.RandomHorizontalFlip()]))

    def run(workers):
        loader = data.DataLoader(ds, batch_size=4, shuffle=True, num_workers=workers, seed=5)
        loader.set_epoch(2)
        return [(x.numpy().copy(), y.numpy().copy()) for x, y in loader]

    ref = run(0)
    for other in (run(1), run(3)):
        for (xa, ya), (xb, yb) in zip(ref, other):
            np.testing.assert_array_equal(xa, xb)
            np.testing.assert_array_equal(ya, yb)


def test_transforms_match_torch():
    t = torch.rand(3, 5, 6, dtype=torch.float64).float()
    x = retorch.from_numpy(t.numpy().copy())
    mean, std = [0.1, 0.2, 0.3], [0.3, 0.2, 0.1]
    want = (t - torch.tensor(mean).view(3, 1, 1)) / torch.tensor(std).view(3, 1, 1)
    np.testing.assert_allclose(data.Normalize(mean, std)(x).numpy(), want.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(data.RandomHorizontalFlip(1.0)(x).numpy(),
                                  torch.flip(t, [2]).numpy())
    crop = data.RandomCrop(5, 6, 0)(x)  # full-size crop without padding is the identity
    np.testing.assert_array_equal(crop.numpy(), t.numpy())
