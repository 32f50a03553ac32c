"""retorch.utils.tensorboard: a torch.utils.tensorboard-shaped SummaryWriter backed by C++."""
import numbers

import numpy as _np

from ... import _C
from ..._C import Tensor as _Tensor

__all__ = ["SummaryWriter"]


def _to_float(value, what):
    if isinstance(value, _Tensor):
        if value.numel() != 1:
            raise ValueError(f"{what}: expected a one-element tensor, got {value.numel()} elements")
        return float(value.item())
    if isinstance(value, (numbers.Real, _np.generic)):
        return float(value)
    if isinstance(value, _np.ndarray) and value.size == 1:
        return float(value.reshape(-1)[0])
    raise TypeError(f"{what}: expected a number or a one-element tensor, got {type(value).__name__}")


def _step(global_step):
    return 0 if global_step is None else int(global_step)


def _as_tensor(values):
    if isinstance(values, _Tensor):
        return values
    from ... import from_numpy
    arr = _np.ascontiguousarray(_np.asarray(values, dtype=_np.float64).reshape(-1))
    return from_numpy(arr)


class SummaryWriter:
    """Writes TensorBoard event files under log_dir (default runs/<date>_<host><comment>)."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        if purge_step is not None:
            raise NotImplementedError("SummaryWriter: purge_step is not supported")
        self._writer = _C._tensorboard.SummaryWriter(
            "" if log_dir is None else str(log_dir), comment, int(max_queue), float(flush_secs),
            filename_suffix)
        self.log_dir = self._writer.log_dir

    def get_logdir(self):
        """The run directory this writer writes to."""
        return self.log_dir

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None):
        """Records one scalar (a number or a one-element tensor) at global_step."""
        self._writer.add_scalar(tag, _to_float(scalar_value, "add_scalar"), _step(global_step),
                                walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Records several scalars as runs <log_dir>/<main_tag>_<key>, each tagged main_tag."""
        values = {str(k): _to_float(v, "add_scalars") for k, v in tag_scalar_dict.items()}
        self._writer.add_scalars(main_tag, values, _step(global_step), walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None):
        """Records a histogram of values (tensor, numpy array or list); bins: 'tensorflow', an
        int count or a list of edges."""
        if max_bins is not None:
            raise NotImplementedError("add_histogram: max_bins is not supported")
        if isinstance(bins, _np.ndarray):
            bins = bins.tolist()
        self._writer.add_histogram(tag, _as_tensor(values), _step(global_step), bins, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Records text under tag '<tag>/text_summary' for TensorBoard's text plugin."""
        self._writer.add_text(tag, str(text_string), _step(global_step), walltime)

    def flush(self):
        """Pushes pending events of every event file to disk."""
        self._writer.flush()

    def close(self):
        """Flushes and closes every event file (a later add_* starts a new file)."""
        self._writer.close()

    def _file_path(self):
        return self._writer.file_path()

    def _scalars_file_paths(self):
        return self._writer.scalars_file_paths()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
