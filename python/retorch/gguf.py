"""retorch.gguf: read GGUF files (llama.cpp's weights format), metadata and (quantized) tensors."""
import os
from typing import NamedTuple, Tuple

from ._C import _gguf

__all__ = ["GGUFReader", "GGUFTensor", "load", "F32", "F16", "Q4_0", "Q8_0", "Q4_K", "Q6_K",
           "BF16", "Q4_0x16"]

# ggml type ids (GGUF's tensor types) that retorch's kernels take.
F32, F16, Q4_0, Q8_0, Q4_K, Q6_K, BF16 = 0, 1, 2, 8, 12, 14, 30
# Not a file type: retorch's layout of Q4_0 rows interleaved in groups of 16, which the models
# load Q4_0 weights into (Note [Q4_0 in groups of 16 rows] in backend/cpu/QuantBlocks.h).
Q4_0x16 = 1002
# The types stored as plain elements (F32 F16 I8 I16 I32 I64 F64 BF16).
_PLAIN = frozenset((0, 1, 24, 25, 26, 27, 28, 30))


class GGUFTensor(NamedTuple):
    """One tensor of a GGUF file.

    data: plain types (F32, F16, BF16, F64, I8..I64) as a tensor of `shape` and that dtype;
    block-quantized types as uint8 [rows, row_bytes], rows = prod(shape[:-1]).
    shape: the logical row-major shape (GGUF's dims reversed).
    """
    name: str
    data: object
    qtype: int
    shape: Tuple[int, ...]

    @property
    def type_name(self):
        return _gguf.type_name(self.qtype)

    def dequantize(self):
        """The values as a float32 tensor of the logical shape."""
        import retorch
        if self.qtype in _PLAIN:
            return self.data.float()
        cols = self.shape[-1] if self.shape else 1
        return retorch.dequantize_blocks(self.data, self.qtype, cols).reshape(list(self.shape))


class GGUFReader:
    """A GGUF file, memory-mapped: `.metadata` (key -> Python value, in file order) and
    `.tensors` (name -> GGUFTensor, in file order; the tensors view the mapping)."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.metadata, tensors, info = _gguf.load(self.path)
        self.version = info["version"]
        self.alignment = info["alignment"]
        self.data_offset = info["data_offset"]
        self.tensors = {name: GGUFTensor(name, t, qtype, tuple(shape))
                        for name, (t, qtype, shape) in tensors.items()}

    def __repr__(self):
        return (f"GGUFReader({self.path!r}, version={self.version}, "
                f"{len(self.metadata)} keys, {len(self.tensors)} tensors)")


def load(path):
    """Opens a GGUF file (see GGUFReader)."""
    return GGUFReader(path)
