"""retorch.utils.data against torch.utils.data: datasets, samplers, collation and DataLoader."""
import collections
import gc
import threading
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import retorch
import retorch.utils.data as rud


def to_np(x):
    return np.asarray(x.tolist()) if hasattr(x, "tolist") else np.asarray(x)


def same(r, t):
    """Recursively: the same structure, container types, dtypes and values."""
    if isinstance(t, torch.Tensor):
        assert isinstance(r, retorch.Tensor), type(r)
        assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        assert tuple(r.shape) == tuple(t.shape)
        np.testing.assert_array_equal(to_np(r), to_np(t))
    elif isinstance(t, dict):
        assert type(r) is type(t) and list(r) == list(t)
        for k in t:
            same(r[k], t[k])
    elif isinstance(t, (list, tuple)):
        assert type(r) is type(t) and len(r) == len(t), (type(r), type(t))
        for a, b in zip(r, t):
            same(a, b)
    else:
        assert r == t and type(r) is type(t)


def pair(arr):
    return retorch.from_numpy(arr.copy()), torch.from_numpy(arr.copy())


# ---- datasets ----

def test_tensor_dataset_and_subset(rng):
    x, y = rng.standard_normal((10, 3)).astype(np.float32), rng.integers(0, 5, 10)
    (rx, tx), (ry, ty) = pair(x), pair(y)
    rd, td = rud.TensorDataset(rx, ry), tud.TensorDataset(tx, ty)
    assert len(rd) == len(td) == 10
    same(rd[3], td[3])
    rs, ts = rud.Subset(rd, [7, 2, 5]), tud.Subset(td, [7, 2, 5])
    assert len(rs) == len(ts)
    for i in range(3):
        same(rs[i], ts[i])
    with pytest.raises(AssertionError):
        rud.TensorDataset(rx, ry[:5])


class Squares(rud.Dataset):
    def __init__(self, n, lib):
        self.n, self.lib = n, lib

    def __getitem__(self, i):
        if i >= self.n:
            raise IndexError(i)
        return {"x": self.lib.tensor([float(i), float(i * i)]), "i": i, "name": f"s{i}"}

    def __len__(self):
        return self.n


class TSquares(Squares, tud.Dataset):
    pass


def test_concat_dataset():
    r = rud.ConcatDataset([Squares(3, retorch), Squares(4, retorch)])
    t = tud.ConcatDataset([TSquares(3, torch), TSquares(4, torch)])
    assert len(r) == len(t) == 7 and r.cumulative_sizes == t.cumulative_sizes
    for i in list(range(7)) + [-1, -7]:
        same(r[i], t[i])
    for lib in (rud, tud):
        with pytest.raises(ValueError):
            lib.ConcatDataset([list(range(3))])[-4]
        with pytest.raises(AssertionError):
            lib.ConcatDataset([])
    assert len(Squares(2, retorch) + Squares(3, retorch)) == 5


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.5, 0.25, 0.25], [0.34, 0.33, 0.33],
                                     [5, 0, 5]])
def test_random_split_lengths(lengths):
    g = retorch.Generator()
    g.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = rud.random_split(range(10), lengths, generator=g)
        t = tud.random_split(range(10), lengths, generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in r] == [len(s) for s in t]
    idx = [i for s in r for i in s]
    assert sorted(idx) == list(range(10))  # disjoint and complete


def test_random_split_errors_and_seed():
    for lib in (rud, tud):
        with pytest.raises(ValueError, match="Sum of input lengths"):
            lib.random_split(range(10), [3, 3])
        with pytest.raises(ValueError):
            lib.random_split(range(10), [0.5, 0.6])
    g1, g2 = retorch.Generator(), retorch.Generator()
    g1.manual_seed(3)
    g2.manual_seed(3)
    a = [list(s) for s in rud.random_split(range(20), [10, 10], generator=g1)]
    b = [list(s) for s in rud.random_split(range(20), [10, 10], generator=g2)]
    assert a == b


# ---- samplers ----

def test_sequential_and_batch_sampler():
    for drop_last in (False, True):
        r = list(rud.BatchSampler(rud.SequentialSampler(range(10)), 3, drop_last))
        t = list(tud.BatchSampler(tud.SequentialSampler(range(10)), 3, drop_last))
        assert r == t
        assert len(rud.BatchSampler(range(10), 3, drop_last)) == \
            len(tud.BatchSampler(range(10), 3, drop_last))


def test_random_sampler():
    g = retorch.Generator()
    g.manual_seed(1)
    s = rud.RandomSampler(range(10), generator=g)
    assert len(s) == 10 and sorted(s) == list(range(10))
    s = rud.RandomSampler(range(4), num_samples=10, generator=g)
    out = list(s)
    assert len(out) == len(s) == 10 and sorted(out[:8]) == sorted(list(range(4)) * 2)
    s = rud.RandomSampler(range(5), replacement=True, num_samples=70, generator=g)
    out = list(s)
    assert len(out) == 70 and set(out) <= set(range(5)) and len(set(out)) == 5
    assert list(rud.RandomSampler(range(50))) != list(rud.RandomSampler(range(50)))


def test_subset_random_and_weighted_sampler():
    g = retorch.Generator()
    g.manual_seed(2)
    assert sorted(rud.SubsetRandomSampler([5, 7, 9], generator=g)) == [5, 7, 9]
    w = [0.0, 1.0, 0.0, 3.0]
    out = list(rud.WeightedRandomSampler(w, 4000, generator=g))
    assert set(out) == {1, 3} and 0.7 < out.count(3) / 4000 < 0.8
    out = list(rud.WeightedRandomSampler([0.1, 0.9, 0.0, 0.4], 3, replacement=False, generator=g))
    assert sorted(out) == [0, 1, 3]
    assert len(rud.WeightedRandomSampler(retorch.tensor(w), 7)) == 7


SAMPLER_ERRORS = [
    lambda lib: lib.RandomSampler(range(3), replacement=1),
    lambda lib: lib.RandomSampler(range(3), num_samples=0),
    lambda lib: lib.RandomSampler([], num_samples=None),
    lambda lib: lib.BatchSampler(range(3), 0, False),
    lambda lib: lib.BatchSampler(range(3), True, False),
    lambda lib: lib.BatchSampler(range(3), 2, 1),
    lambda lib: lib.WeightedRandomSampler([1.0, 2.0], 0),
    lambda lib: lib.WeightedRandomSampler([1.0, 2.0], 2, replacement=0),
    lambda lib: lib.WeightedRandomSampler([[1.0, 2.0]], 2),
    lambda lib: list(lib.WeightedRandomSampler([1.0, 2.0], 3, replacement=False)),
    lambda lib: list(lib.WeightedRandomSampler([1.0, -1.0], 2)),
    lambda lib: list(lib.WeightedRandomSampler([0.0, 0.0], 2)),
]


@pytest.mark.parametrize("make", SAMPLER_ERRORS)
def test_sampler_errors_match_torch(make):
    with pytest.raises(Exception) as t_err:
        make(tud)
    with pytest.raises(Exception) as r_err:
        make(rud)
    assert r_err.type is t_err.type, (r_err.value, t_err.value)


# ---- collate ----

Point = collections.namedtuple("Point", "x y")


def collate_cases(lib):
    return [
        [lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0])],
        [1, 2, 3],
        [1.5, 2.5],
        [True, False],
        ["a", "b"],
        [np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)],
        [np.float32(1.5), np.float32(2.5)],
        [np.int64(3), np.int64(4)],
        [{"a": 1, "b": lib.tensor(2.0)}, {"a": 3, "b": lib.tensor(4.0)}],
        [(1, 2.0, "x"), (3, 4.0, "y")],
        [[1, 2], [3, 4]],
        [Point(1, lib.tensor([1])), Point(2, lib.tensor([2]))],
        [collections.OrderedDict(k=[1.0, 2]), collections.OrderedDict(k=[3.0, 4])],
    ]


@pytest.mark.parametrize("i", range(13))
def test_default_collate_matches_torch(i):
    want = tud.default_collate(collate_cases(torch)[i])
    same(rud.default_collate(collate_cases(retorch)[i]), want)


def test_default_collate_errors():
    for lib, mod in ((retorch, rud), (torch, tud)):
        with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
            mod.default_collate([lib.zeros(2), lib.zeros(3)])
        with pytest.raises(RuntimeError, match="each element in list of batch"):
            mod.default_collate([[1, 2], [3]])
        with pytest.raises(TypeError):
            mod.default_collate([object(), object()])


def test_default_convert():
    r = rud.default_convert({"a": np.arange(3), "b": (np.float64(1.0), "s")})
    t = tud.default_convert({"a": np.arange(3), "b": (np.float64(1.0), "s")})
    same(r, t)


# ---- DataLoader ----

def loaders(dataset_r, dataset_t, **kw):
    return rud.DataLoader(dataset_r, **kw), tud.DataLoader(dataset_t, **kw)


@pytest.mark.parametrize("kw", [dict(), dict(batch_size=3), dict(batch_size=3, drop_last=True),
                                dict(batch_size=None), dict(batch_size=4, num_workers=2),
                                dict(batch_size=2, num_workers=3, prefetch_factor=1)])
def test_dataloader_map_style(kw):
    r, t = loaders(Squares(10, retorch), TSquares(10, torch), **kw)
    assert len(r) == len(t)
    rb, tb = list(r), list(t)
    assert len(rb) == len(tb) == len(r)
    for a, b in zip(rb, tb):
        same(a, b)


def test_dataloader_tensor_dataset_shuffle(rng):
    x = rng.standard_normal((17, 2)).astype(np.float32)
    g = retorch.Generator()
    g.manual_seed(0)
    dl = rud.DataLoader(rud.TensorDataset(retorch.from_numpy(x), retorch.arange(17)),
                        batch_size=5, shuffle=True, generator=g)
    batches = list(dl)
    assert [b[0].shape[0] for b in batches] == [5, 5, 5, 2]
    idx = retorch.cat([b[1] for b in batches]).tolist()
    assert sorted(idx) != idx and sorted(idx) == list(range(17))
    np.testing.assert_array_equal(retorch.cat([b[0] for b in batches]).numpy(), x[idx])


def test_dataloader_workers_equal_single_thread():
    seen = set()

    class Slow(rud.Dataset):
        def __getitem__(self, i):
            seen.add(threading.current_thread().name)
            info = rud.get_worker_info()
            return retorch.tensor([i, -1 if info is None else 0])

        def __len__(self):
            return 23

    g0, g1 = retorch.Generator(), retorch.Generator()
    g0.manual_seed(5)
    g1.manual_seed(5)
    single = list(rud.DataLoader(Slow(), batch_size=4, shuffle=True, generator=g0))
    multi = list(rud.DataLoader(Slow(), batch_size=4, shuffle=True, generator=g1, num_workers=3))
    assert [b[:, 0].tolist() for b in single] == [b[:, 0].tolist() for b in multi]
    assert all(b[0, 1].item() == -1 for b in single) and all(b[0, 1].item() == 0 for b in multi)
    assert any(n.startswith("retorch-dataloader") for n in seen)
    assert rud.get_worker_info() is None


class Stream(rud.IterableDataset):
    """Yields range(n), sharded across workers like torch's documentation example."""

    def __init__(self, n, lib_data):
        self.n, self.lib_data = n, lib_data

    def __iter__(self):
        info = self.lib_data.get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        return self.n


class TStream(Stream, tud.IterableDataset):
    pass


@pytest.mark.parametrize("kw", [dict(), dict(batch_size=4), dict(batch_size=4, drop_last=True),
                                dict(batch_size=None), dict(batch_size=3, num_workers=2),
                                dict(batch_size=2, num_workers=3, drop_last=True)])
def test_dataloader_iterable(kw):
    r, t = loaders(Stream(11, rud), TStream(11, tud), **kw)
    assert len(r) == len(t)
    rb, tb = list(r), list(t)
    assert len(rb) == len(tb)
    for a, b in zip(rb, tb):
        same(a, b)


def test_dataloader_persistent_workers_two_epochs():
    dl = rud.DataLoader(Stream(9, rud), batch_size=2, num_workers=2, persistent_workers=True)
    t = tud.DataLoader(TStream(9, tud), batch_size=2, num_workers=2, persistent_workers=True)
    want = [b.tolist() for b in t]
    assert [b.tolist() for b in dl] == want
    assert [b.tolist() for b in dl] == want
    it = iter(dl)
    next(it)  # abandon an epoch half-way, then start again
    assert [b.tolist() for b in dl] == want
    threads = list(dl._iterator._threads)
    del dl, it
    gc.collect()  # dropping the loader stops its workers
    for t in threads:
        t.join(timeout=5)
        assert not t.is_alive()


def test_dataloader_worker_errors_and_init_fn():
    class Bad(rud.Dataset):
        def __getitem__(self, i):
            if i == 5:
                raise KeyError("bad sample")
            return i

        def __len__(self):
            return 8

    for workers in (0, 2):
        it = iter(rud.DataLoader(Bad(), batch_size=2, num_workers=workers))
        assert next(it).tolist() == [0, 1] and next(it).tolist() == [2, 3]
        with pytest.raises(KeyError):
            next(it)
    ids = []
    dl = rud.DataLoader(range(6), batch_size=2, num_workers=2, worker_init_fn=ids.append)
    assert [b.tolist() for b in dl] == [[0, 1], [2, 3], [4, 5]]
    assert sorted(ids) == [0, 1]


LOADER_ERRORS = [
    dict(num_workers=-1),
    dict(timeout=-1),
    dict(shuffle=True, sampler=[0, 1]),
    dict(batch_sampler=[[0]], batch_size=2),
    dict(batch_sampler=[[0]], shuffle=True),
    dict(batch_sampler=[[0]], sampler=[0]),
    dict(batch_sampler=[[0]], drop_last=True),
    dict(batch_size=None, drop_last=True),
    dict(persistent_workers=True),
    dict(prefetch_factor=3),
]


@pytest.mark.parametrize("kw", LOADER_ERRORS)
def test_dataloader_argument_errors(kw):
    with pytest.raises(ValueError):
        tud.DataLoader(list(range(4)), **kw)
    with pytest.raises(ValueError):
        rud.DataLoader(list(range(4)), **kw)


def test_dataloader_iterable_errors_and_setattr():
    for lib in (rud, tud):
        ds = Stream(4, lib) if lib is rud else TStream(4, lib)
        for kw in (dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])):
            with pytest.raises(ValueError):
                lib.DataLoader(ds, **kw)
        dl = lib.DataLoader(list(range(4)))
        with pytest.raises(ValueError):
            dl.batch_size = 2


def test_dataloader_batch_sampler_and_custom_collate():
    r = rud.DataLoader(list(range(10)), batch_sampler=[[0, 1], [5, 6, 7]], collate_fn=sum)
    t = tud.DataLoader(list(range(10)), batch_sampler=[[0, 1], [5, 6, 7]], collate_fn=sum)
    assert list(r) == list(t) == [1, 18] and len(r) == len(t) == 2
    r = rud.DataLoader(list(range(5)), sampler=[4, 0, 2], batch_size=2)
    t = tud.DataLoader(list(range(5)), sampler=[4, 0, 2], batch_size=2)
    for a, b in zip(r, t):
        same(a, b)


def test_legacy_retorch_data_still_works():
    import retorch.data
    x = retorch.arange(12, dtype=retorch.float32).reshape([6, 2])
    ds = retorch.data.TensorDataset(x, retorch.arange(6))
    batches = list(retorch.data.DataLoader(ds, batch_size=4))
    assert len(batches) == 2
