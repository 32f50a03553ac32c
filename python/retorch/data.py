"""retorch.data: C++ datasets, per-sample transforms and the prefetching DataLoader.

Batches are (data, target) tuples; shuffling and random transforms are pure functions of
(seed, epoch, sample index), so results do not depend on num_workers.
"""
from ._C._data import (  # noqa: F401
    Compose,
    DataLoader,
    Dataset,
    FashionMNIST,
    MNIST,
    Normalize,
    RandomCrop,
    RandomHorizontalFlip,
    TensorDataset,
    Transform,
    read_idx,
)
