"""torch.Size: a tensor's sizes, a tuple of ints that prints as torch's and keeps its type
through slicing, concatenation and repetition (x.shape and x.size() make these in C++)."""
import math
import operator


class Size(tuple):
    """The sizes of a tensor's dims (torch.Size)."""
    __slots__ = ()

    def __new__(cls, sizes=()):
        items = []
        for i, v in enumerate(sizes):
            if isinstance(v, bool) or not hasattr(type(v), "__index__"):
                raise TypeError(f"torch.Size() takes an iterable of 'int' (item {i} is "
                                f"'{type(v).__name__}')")
            items.append(operator.index(v))
        return tuple.__new__(cls, items)

    def __repr__(self):
        return "torch.Size([" + ", ".join(str(s) for s in self) + "])"

    __str__ = __repr__

    def numel(self):
        """The number of elements of a tensor of these sizes."""
        return math.prod(self)

    def __getitem__(self, index):
        r = tuple.__getitem__(self, index)
        return tuple.__new__(Size, r) if isinstance(index, slice) else r

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return tuple.__new__(Size, tuple.__add__(self, other))

    def __mul__(self, n):
        r = tuple.__mul__(self, n)
        return r if r is NotImplemented else tuple.__new__(Size, r)

    __rmul__ = __mul__

    def __reduce__(self):
        return (Size, (tuple(self),))
