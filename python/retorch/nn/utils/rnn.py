"""retorch.nn.utils.rnn: PackedSequence and packing/padding helpers over the C++ ones."""
from collections import namedtuple

from ... import _C

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "pack_sequence", "unpad_sequence", "unpack_sequence", "invert_permutation"]

_nn = _C._nn


class PackedSequence(namedtuple("PackedSequence",
                                ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """Variable-length sequences packed step by step (Note [Packed layout] in C++)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else type(self)(data, self.batch_sizes,
                                                          self.sorted_indices,
                                                          self.unsorted_indices)

    @property
    def is_cuda(self):
        return self.data.is_cuda


def invert_permutation(permutation):
    return None if permutation is None else _nn.invert_permutation(permutation)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    if not isinstance(lengths, _C.Tensor):
        from ... import tensor
        lengths = tensor(list(lengths), dtype=_C.int64)
    return PackedSequence(*_nn.pack_padded_sequence(input, lengths.to(_C.int64), batch_first,
                                                    enforce_sorted))


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    return _nn.pad_packed_sequence(tuple(sequence), batch_first, padding_value, total_length)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    if padding_side != "right":
        raise ValueError("pad_sequence: only padding_side='right' is supported")
    return _nn.pad_sequence(list(sequences), batch_first, padding_value)


def pack_sequence(sequences, enforce_sorted=True):
    return PackedSequence(*_nn.pack_sequence(list(sequences), enforce_sorted))


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:int(n)] for seq, n in zip(padded_sequences, lengths)]


def unpack_sequence(packed_sequences):
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
