"""retorch.return_types: the named tuples that ops with named results return, like
torch.return_types (``x.max(1).values``, ``torch.topk(x, 2).indices``, ``torch.linalg.eigh(a)
.eigenvectors``). Each is a tuple subclass, so unpacking and indexing work as before.
The bindings create them on first use through _make; they pickle by name."""
import collections

__all__ = []


def _make(name, fields):
    """The named tuple type `name` with these fields, created once."""
    known = globals().get(name)
    if known is not None:
        return known
    base = collections.namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"retorch.return_types.{name}(\n{body})"

    cls = type(name, (base,), {"__slots__": (), "__module__": __name__, "__repr__": __repr__})
    cls.__qualname__ = name
    globals()[name] = cls
    __all__.append(name)
    return cls
