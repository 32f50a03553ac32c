"""default_collate / default_convert: how torch.utils.data turns samples into batches."""
import collections.abc
import re

import numpy as np

import retorch

__all__ = ["default_collate", "default_convert"]

# numpy arrays of strings or objects are left alone (torch's np_str_obj_array_pattern).
_NP_STR_OBJ = re.compile(r"[SaUO]")

_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")


def _is_numpy_value(x):
    t = type(x)
    return t.__module__ == "numpy" and t.__name__ not in ("str_", "string_", "bytes_")


def default_convert(data):
    """Converts numpy arrays/scalars (also inside dicts, tuples, lists) to tensors, without
    batching: the collate_fn of a DataLoader with batch_size=None."""
    if isinstance(data, retorch.Tensor):
        return data
    if _is_numpy_value(data):
        if isinstance(data, np.ndarray) and _NP_STR_OBJ.search(data.dtype.str):
            return data
        return retorch.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            return type(data)({key: default_convert(data[key]) for key in data})
        except TypeError:  # the mapping type cannot be built from a dict
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # a list, as torch returns
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def default_collate(batch):
    """Stacks a list of samples into a batch: tensors and numpy arrays are stacked along a new
    dim 0, Python ints become an int64 tensor and floats a float64 tensor, strings stay a list,
    and dicts, namedtuples, tuples and lists are collated field by field."""
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, retorch.Tensor):
        return retorch.stack(list(batch), 0)
    if isinstance(elem, np.ndarray):
        if _NP_STR_OBJ.search(elem.dtype.str):
            raise TypeError(_ERR.format(elem.dtype))
        return default_collate([retorch.as_tensor(b) for b in batch])
    if isinstance(elem, (np.bool_, np.number, np.object_)):
        return retorch.as_tensor(np.array(batch))
    if isinstance(elem, float):
        return retorch.tensor(batch, dtype=retorch.float64)
    if isinstance(elem, int):  # bool included: torch.tensor([True, ...]) is a bool tensor
        return retorch.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        try:
            return elem_type({key: default_collate([d[key] for d in batch]) for key in elem})
        except TypeError:
            return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(e) == size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            return elem_type([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(_ERR.format(elem_type))
