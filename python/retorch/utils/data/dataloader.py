"""DataLoader shaped like torch.utils.data.DataLoader; num_workers > 0 loads on threads.

Worker threads stand in for torch's worker processes: each has its own fetcher (and, for an
IterableDataset, its own iterator, created after get_worker_info() is set), batches are handed
out round robin and returned in order, so results equal those of num_workers=0. Threads share
the process, so worker_init_fn cannot reseed global RNGs per worker; WorkerInfo.seed is still
base_seed + id as in torch. retorch ops hold the GIL, so workers overlap Python-level waiting
(file reads, decoders that release the GIL) rather than retorch compute.
"""
import itertools
import math
import queue
import threading
import warnings

import retorch

from ._collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler, _InfiniteConstantSampler

__all__ = ["DataLoader", "get_worker_info", "WorkerInfo"]

_worker_local = threading.local()


class WorkerInfo:
    """What a worker knows about itself: id, num_workers, seed and dataset."""

    def __init__(self, id, num_workers, seed, dataset):  # noqa: A002  (torch's names)
        self.id = id
        self.num_workers = num_workers
        self.seed = seed
        self.dataset = dataset

    def __repr__(self):
        return (f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, "
                f"dataset={self.dataset!r})")


def get_worker_info():
    """The calling worker's WorkerInfo, or None in the main thread."""
    return getattr(_worker_local, "info", None)


class _Fetcher:
    """Turns one index (or a list of them) into one collated sample (or batch)."""

    def __init__(self, dataset, iterable, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.iterator = iter(dataset) if iterable else None
        self.ended = False

    def fetch(self, index):
        if self.iterator is None:
            if self.auto_collation:
                data = [self.dataset[i] for i in index]
            else:
                data = self.dataset[index]
            return self.collate_fn(data)
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        data = []
        for _ in index:
            try:
                data.append(next(self.iterator))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


class DataLoader:
    """Iterates over a dataset in batches (see torch.utils.data.DataLoader)."""

    _initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device=""):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; "
                             "use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor not in (None, 2):
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing.")
        if prefetch_factor is None:
            prefetch_factor = 2
        assert prefetch_factor > 0
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if multiprocessing_context is not None and num_workers == 0:
            raise ValueError("multiprocessing_context can only be used with multi-process "
                             f"loading (num_workers > 0), but got num_workers={num_workers}")
        if pin_memory and not retorch.cuda.is_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context

        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        self._initialized = True

    def __setattr__(self, attr, val):
        if self._initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last",
                                          "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleThreadIter(self)
        if self.persistent_workers:
            if self._iterator is None:
                self._iterator = _ThreadedIter(self)
            else:
                self._iterator._reset()
            return self._iterator
        return _ThreadedIter(self)

    def __len__(self):
        if self._iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else \
                    math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


def _pin(data):
    """data with its tensors in pinned host memory (through dicts, lists, tuples and named
    tuples, and objects with a pin_memory() method), as torch's pin_memory step does."""
    if isinstance(data, retorch.Tensor):
        return data.pin_memory()
    if hasattr(data, "pin_memory") and callable(data.pin_memory):
        return data.pin_memory()
    if isinstance(data, dict):
        return type(data)({k: _pin(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_pin(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_pin(v) for v in data)
    return data


def _fetcher_args(loader):
    return (loader.dataset, loader._iterable, loader._auto_collation, loader.collate_fn,
            loader.drop_last)


def _draw_seed(generator):
    return int(retorch.randint(0, 2 ** 62, (), dtype=retorch.int64, generator=generator).item())


class _BaseIter:
    def __init__(self, loader):
        self._loader = loader
        self._index_sampler = loader._index_sampler
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        # Drawn with or without workers, so both consume the generator alike (as torch does).
        self._base_seed = _draw_seed(loader.generator)

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def __next__(self):
        data = self._next_data()
        if self._loader.pin_memory and retorch.cuda.is_available():
            data = _pin(data)  # so .to("cuda", non_blocking=True) need not wait
        self._num_yielded += 1
        return data


class _SingleThreadIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = _Fetcher(*_fetcher_args(loader))

    def _next_data(self):
        index = next(self._sampler_iter)  # StopIteration ends the epoch
        return self._fetcher.fetch(index)


class _Stop:
    """A worker's reply when its IterableDataset iterator is exhausted."""


class _Failure:
    """A worker's reply carrying the exception a fetch raised (re-raised in order)."""

    def __init__(self, exc):
        self.exc = exc


class _WorkerSpec:
    """What a worker thread needs from its DataLoader. Workers hold this, not the loader or the
    iterator, so dropping those shuts the workers down (see _ThreadedIter.__del__)."""

    def __init__(self, loader):
        self.dataset = loader.dataset
        self.num_workers = loader.num_workers
        self.worker_init_fn = loader.worker_init_fn
        self.iterable = loader._iterable
        self.fetcher_args = _fetcher_args(loader)


def _worker_loop(spec, worker_id, seed, tasks, results, done):
    _worker_local.info = WorkerInfo(worker_id, spec.num_workers, seed, spec.dataset)
    fetcher, init_error = None, None
    try:
        if spec.worker_init_fn is not None:
            spec.worker_init_fn(worker_id)
        fetcher = _Fetcher(*spec.fetcher_args)
    except Exception as e:  # reported with the first task, like torch's init errors
        init_error = _Failure(e)
    while not done.is_set():
        task = tasks.get()
        if task is None:
            return
        if task == "reset":  # a new epoch of persistent workers: fresh dataset iterator
            if init_error is None:
                fetcher = _Fetcher(*spec.fetcher_args)
            continue
        task_id, index = task
        if init_error is not None:
            results.put((task_id, init_error))
            continue
        try:
            data = fetcher.fetch(index)
        except StopIteration:
            data = _Stop() if spec.iterable else _Failure(
                RuntimeError("DataLoader worker: the dataset raised StopIteration"))
        except Exception as e:
            data = _Failure(e)
        results.put((task_id, data))


class _ThreadedIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        n = loader.num_workers
        self._results = queue.Queue()
        self._tasks = [queue.Queue() for _ in range(n)]
        self._done = threading.Event()
        self._threads = []
        spec = _WorkerSpec(loader)
        for w in range(n):
            args = (spec, w, self._base_seed + w, self._tasks[w], self._results, self._done)
            t = threading.Thread(target=_worker_loop, name=f"retorch-dataloader-{w}", daemon=True,
                                 args=args)
            t.start()
            self._threads.append(t)
        self._start_epoch()

    def _start_epoch(self):
        self._active = [True] * self._loader.num_workers
        self._worker_cycle = itertools.cycle(range(self._loader.num_workers))
        self._task_worker = {}  # task id -> worker, for tasks not yet returned in order
        self._received = {}  # task id -> reply that arrived ahead of its turn
        self._send_idx = 0
        self._rcvd_idx = 0
        self._sampler_done = False
        for _ in range(self._loader.prefetch_factor * self._loader.num_workers):
            self._try_put_index()

    def _reset(self):
        # Drain the previous epoch's outstanding tasks, then restart every worker's iterator.
        while self._rcvd_idx < self._send_idx:
            self._get_reply(self._rcvd_idx)
            self._rcvd_idx += 1
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._base_seed = _draw_seed(self._loader.generator)
        for q in self._tasks:
            q.put("reset")
        self._start_epoch()

    def _try_put_index(self):
        if self._sampler_done or not any(self._active):
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            self._sampler_done = True
            return
        for _ in range(self._loader.num_workers):
            w = next(self._worker_cycle)
            if self._active[w]:
                break
        self._tasks[w].put((self._send_idx, index))
        self._task_worker[self._send_idx] = w
        self._send_idx += 1

    def _get_reply(self, task_id):
        while task_id not in self._received:
            timeout = self._loader.timeout if self._loader.timeout > 0 else None
            try:
                tid, data = self._results.get(timeout=timeout)
            except queue.Empty:
                raise RuntimeError(f"DataLoader timed out after {self._loader.timeout} "
                                   "seconds") from None
            self._received[tid] = data
        return self._received.pop(task_id)

    def _next_data(self):
        while True:
            if self._rcvd_idx >= self._send_idx:
                if not self._loader.persistent_workers:
                    self._shutdown()
                raise StopIteration
            task_id = self._rcvd_idx
            data = self._get_reply(task_id)
            worker = self._task_worker.pop(task_id)
            self._rcvd_idx += 1
            if isinstance(data, _Stop):
                self._active[worker] = False
            self._try_put_index()
            if isinstance(data, _Stop):
                continue
            if isinstance(data, _Failure):
                raise data.exc
            return data

    def _shutdown(self):
        if hasattr(self, "_done") and not self._done.is_set():
            self._done.set()
            for q in self._tasks:
                q.put(None)

    def __del__(self):
        self._shutdown()
