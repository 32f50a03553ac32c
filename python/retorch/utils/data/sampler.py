"""Samplers shaped like torch.utils.data: which indices a DataLoader reads, and in what order."""
import retorch

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


class Sampler:
    """Base class: __iter__ yields dataset indices (or lists of them for batch samplers)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


def _fresh_generator():
    """A generator seeded from the default one, so each epoch draws a new order (like torch)."""
    seed = int(retorch.randint(0, 2 ** 62, (), dtype=retorch.int64).item())
    g = retorch.Generator()
    g.manual_seed(seed)
    return g


class RandomSampler(Sampler):
    """A random permutation (repeated if num_samples > len), or draws with replacement."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError("replacement should be a boolean value, but got "
                            f"replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or isinstance(self.num_samples, bool) \
                or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        g = self.generator if self.generator is not None else _fresh_generator()
        if self.replacement:
            # Chunks of 32 keep memory flat for huge num_samples.
            for _ in range(self.num_samples // 32):
                yield from retorch.randint(0, n, (32,), dtype=retorch.int64, generator=g).tolist()
            rest = self.num_samples % 32
            if rest:
                yield from retorch.randint(0, n, (rest,), dtype=retorch.int64,
                                           generator=g).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from retorch.randperm(n, generator=g).tolist()
            yield from retorch.randperm(n, generator=g).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in retorch.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


def _multinomial(weights, num_samples, replacement, generator):
    """Indices drawn with probability proportional to weights (a float64 vector), like
    torch.multinomial; errors are RuntimeErrors with torch's wording."""
    w = weights.tolist()
    if any(x != x or x in (float("inf"), float("-inf")) or x < 0 for x in w):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if not sum(w) > 0:
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    n = len(w)
    if replacement:
        # Inverse CDF: u * total falls into bucket i with probability w[i] / total.
        cdf = weights.cumsum(0)
        u = retorch.rand((num_samples,), dtype=retorch.float64, generator=generator) * cdf[-1]
        idx = retorch.searchsorted(cdf, u, right=True)
        return idx.clamp(max=n - 1).tolist()  # u*total can round up to total itself
    if num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    # Efraimidis-Spirakis: the k largest u^(1/w) keys are a weighted sample without replacement.
    u = retorch.rand((n,), dtype=retorch.float64, generator=generator)
    keys = u.log() / weights  # weight 0 -> -inf: picked only after every positive weight
    return retorch.argsort(keys, descending=True)[:num_samples].tolist()


class WeightedRandomSampler(Sampler):
    """num_samples indices drawn with probability proportional to weights."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        weights_tensor = retorch.as_tensor(weights, dtype=retorch.float64)
        if len(weights_tensor.shape) != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        g = self.generator if self.generator is not None else _fresh_generator()
        yield from iter(_multinomial(self.weights, self.num_samples, self.replacement, g))

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of sampler into lists of batch_size (the last may be shorter)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


class _InfiniteConstantSampler(Sampler):
    """None forever: the index "sampler" of an IterableDataset."""

    def __iter__(self):
        while True:
            yield None
