"""retorch.save / retorch.load: checkpoints as safetensors files, never pickles.

Note [Checkpoint format]
A checkpoint is a safetensors file. A flat dict (or OrderedDict) of str -> Tensor is written
as a plain safetensors file (tensors under their own names), readable by the safetensors
ecosystem. Any other object (nested dicts with str/int keys, lists, tuples, tensors, int, float, bool, str,
None) is written with its tensors under their positions "0", "1", ... and the container
structure as JSON in the "__metadata__" entry "retorch.structure":
  None, bool, int, float, str      themselves (non-finite floats as {"float": "nan"|"inf"|"-inf"})
  list                             a JSON array
  tuple / dict / OrderedDict       {"tuple": [...]}, {"dict": [[key, value], ...]}, {"odict": ...}
  tensor                           {"tensor": position} (+ "requires_grad", "device" when set)
Every file also carries "retorch.format" = "retorch.save" and "retorch.version". Loading
never executes code from the file: it parses JSON and copies raw tensor bytes.
Tensors are saved by value: the same Tensor object saved twice loads as one object, but
distinct views of one storage load as independent copies.
"""
import collections
import json
import math
import os

import numpy as np

from . import _C
from ._C import Tensor, device as _device

__all__ = ["save", "load"]

_FORMAT = "retorch.save"
_VERSION = 1
_K_FORMAT, _K_VERSION, _K_STRUCTURE = "retorch.format", "retorch.version", "retorch.structure"
_K_FLAT = "retorch.flat"  # "odict" when a flat file came from an OrderedDict


class _Encoder:
    def __init__(self):
        self.tensors = {}  # position (str) -> tensor
        self._seen = {}  # id(tensor) -> position; keeps shared tensor objects shared

    def encode(self, obj, path="obj"):
        if isinstance(obj, np.generic) and obj.dtype.kind in "biuf":
            obj = obj.item()  # numpy scalars load back as the Python number they hold
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            if math.isfinite(obj):
                return obj
            return {"float": "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")}
        if isinstance(obj, Tensor):
            return self._tensor(obj)
        if isinstance(obj, dict):
            items = []
            for k, v in obj.items():
                if isinstance(k, bool) or not isinstance(k, (str, int)):
                    raise TypeError(f"retorch.save: dict keys must be str or int, got "
                                    f"{type(k).__name__} key {k!r} in {path}")
                items.append([k, self.encode(v, f"{path}[{k!r}]")])
            return {"odict" if isinstance(obj, collections.OrderedDict) else "dict": items}
        if isinstance(obj, list):
            return [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]
        if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
            return {"tuple": [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]}
        raise TypeError(f"retorch.save: cannot save {type(obj).__name__} at {path}; checkpoints "
                        "hold tensors, dicts (str/int keys), lists, tuples, int, float, bool, "
                        "str and None")

    def _tensor(self, t):
        pos = self._seen.get(id(t))
        if pos is None:
            pos = str(len(self.tensors))
            self._seen[id(t)] = pos
            self.tensors[pos] = t.detach()
        out = {"tensor": int(pos)}
        if t.requires_grad:
            out["requires_grad"] = True
        if str(t.device) != "cpu":
            out["device"] = str(t.device)
        return out


def _is_flat_tensor_dict(obj):
    return (type(obj) in (dict, collections.OrderedDict) and "__metadata__" not in obj
            and all(isinstance(k, str) and type(v) is Tensor and not v.requires_grad
                    and str(v.device) == "cpu" for k, v in obj.items()))


def _is_path(f):
    return isinstance(f, (str, os.PathLike))


def save(obj, f):
    """Saves obj (tensors inside dicts/lists/tuples, and plain Python values) to f, a path
    (written atomically) or a binary file object. See Note [Checkpoint format]."""
    meta = {_K_FORMAT: _FORMAT, _K_VERSION: str(_VERSION)}
    if _is_flat_tensor_dict(obj):
        tensors = dict(obj)
        if isinstance(obj, collections.OrderedDict):
            meta[_K_FLAT] = "odict"
    else:
        enc = _Encoder()
        structure = enc.encode(obj)
        tensors = enc.tensors
        meta[_K_STRUCTURE] = json.dumps(structure, allow_nan=False, separators=(",", ":"))
    if _is_path(f):
        _C._io.save_file(tensors, os.fspath(f), meta)
    else:
        f.write(_C._io.to_bytes(tensors, meta))


def _sniff(head, name):
    """Clear errors for files that are not safetensors at all (before the header parser)."""
    if head.startswith(b"PK\x03\x04"):
        raise RuntimeError(f"retorch.load: '{name}' is a zip archive (a torch.save checkpoint?); "
                           "retorch.load reads safetensors files only and never unpickles")
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        raise RuntimeError(f"retorch.load: '{name}' is a pickle; retorch.load never unpickles "
                           "(it reads safetensors files written by retorch.save)")


class _Decoder:
    def __init__(self, tensors, map_location, name):
        self.tensors = tensors
        self.map_location = map_location
        self.name = name
        self._loaded = {}  # position -> tensor, so shared tensors stay shared

    def fail(self, why):
        raise RuntimeError(f"retorch.load: '{self.name}' has a malformed structure: {why}")

    def decode(self, node):
        if node is None or isinstance(node, (bool, str, int, float)):
            return node
        if isinstance(node, list):
            return [self.decode(v) for v in node]
        if not isinstance(node, dict) or len(node) == 0:
            self.fail(f"unexpected node {node!r:.80}")
        if "tensor" in node:
            return self._tensor(node)
        if len(node) != 1:
            self.fail(f"unexpected node {node!r:.80}")
        (tag, value), = node.items()
        if tag == "float" and value in ("nan", "inf", "-inf"):
            return float(value)
        if tag == "tuple" and isinstance(value, list):
            return tuple(self.decode(v) for v in value)
        if tag in ("dict", "odict") and isinstance(value, list):
            out = {} if tag == "dict" else collections.OrderedDict()
            for item in value:
                if not (isinstance(item, list) and len(item) == 2 and
                        isinstance(item[0], (str, int)) and not isinstance(item[0], bool)):
                    self.fail(f"bad dict item {item!r:.80}")
                out[item[0]] = self.decode(item[1])
            return out
        self.fail(f"unknown tag {tag!r:.40}")

    def _tensor(self, node):
        pos = node["tensor"]
        if not isinstance(pos, int) or isinstance(pos, bool) or str(pos) not in self.tensors:
            self.fail(f"tensor position {pos!r:.40} names none of the file's tensors")
        if set(node) - {"tensor", "requires_grad", "device"}:
            self.fail(f"unexpected tensor fields {sorted(node)}")
        if pos in self._loaded:
            return self._loaded[pos]
        t = _map(self.tensors[str(pos)], str(node.get("device", "cpu")), self.map_location)
        if node.get("requires_grad") is True:
            t.requires_grad_(True)
        self._loaded[pos] = t
        return t


def _map(t, location, map_location):
    """Moves t (on CPU, saved from `location`) where map_location says, like torch.load."""
    if map_location is None:
        target = location
    elif isinstance(map_location, (str, _device)):
        target = str(map_location)
    elif isinstance(map_location, dict):
        target = str(map_location.get(location, location))
    elif callable(map_location):
        out = map_location(t, location)
        return t if out is None else out
    else:
        raise TypeError(f"retorch.load: map_location must be None, a str, a device, a dict or "
                        f"a callable, got {type(map_location).__name__}")
    if target != "cpu":
        t = t.to(_device(target))
    return t


def load(f, map_location=None, weights_only=True, **kwargs):
    """Loads an object saved by retorch.save (or a plain safetensors file, as a dict of str ->
    Tensor) from a path or a binary file object. Nothing in the file is ever executed, whatever
    weights_only says. See Note [Checkpoint format]."""
    if kwargs.get("pickle_module") is not None:
        raise TypeError("retorch.load: pickle_module is not supported (retorch never unpickles)")
    if _is_path(f):
        name = os.fspath(f)
        with open(name, "rb") as fh:
            _sniff(fh.read(8), name)
        tensors, meta = _C._io.read(name)
    else:
        name = getattr(f, "name", "<file object>")
        data = f.read()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("retorch.load: the file object must be opened in binary mode")
        _sniff(bytes(data[:8]), name)
        tensors, meta = _C._io.from_bytes(data, str(name))
    if meta.get(_K_FORMAT, _FORMAT) != _FORMAT:
        raise RuntimeError(f"retorch.load: '{name}' has format {meta[_K_FORMAT]!r}, "
                           f"not {_FORMAT!r}")
    version = meta.get(_K_VERSION, str(_VERSION))
    if not version.isdigit() or int(version) > _VERSION:
        raise RuntimeError(f"retorch.load: '{name}' was written by a newer retorch (format "
                           f"version {version!r}; this one reads up to {_VERSION})")
    if _K_STRUCTURE not in meta:
        flat = collections.OrderedDict if meta.get(_K_FLAT) == "odict" else dict
        return flat((k, _map(v, "cpu", map_location)) for k, v in tensors.items())
    try:
        structure = json.loads(meta[_K_STRUCTURE])
    except (ValueError, RecursionError) as e:
        raise RuntimeError(f"retorch.load: '{name}' has a malformed structure: {e}") from None
    try:
        return _Decoder(tensors, map_location, name).decode(structure)
    except RecursionError:
        raise RuntimeError(f"retorch.load: '{name}' has a malformed structure: nested too "
                           "deeply") from None
