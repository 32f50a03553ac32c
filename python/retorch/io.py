"""retorch.io: safetensors files, with the interface of safetensors.torch (save_file / load_file)."""
import os

from ._C import _io

__all__ = ["save_file", "load_file", "load_metadata", "save", "load"]


def save_file(tensors, filename, metadata=None):
    """Writes a dict of name -> Tensor (and optional str -> str metadata) atomically."""
    if metadata is not None:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError(f"save_file: metadata must map str to str, got {k!r}: {v!r}")
    _io.save_file(dict(tensors), os.fspath(filename), metadata)


def load_file(filename, device="cpu"):
    """Reads a safetensors file into a dict of name -> Tensor, in the file's header order."""
    out = _io.load_file(os.fspath(filename))
    if str(device) != "cpu":
        out = {k: v.to(device) for k, v in out.items()}
    return out


def load_metadata(filename):
    """The file's "__metadata__" dict (str -> str)."""
    return _io.load_metadata(os.fspath(filename))


save = save_file
load = load_file
