"""Gradient clipping and parameter <-> vector conversion over the C++ nn::utils."""
from ... import _C
from ..._C import Tensor

_nn = _C._nn


def _params(parameters):
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scales the gradients so their joint norm is at most max_norm; returns the total norm
    (before clipping) as a tensor, like torch."""
    params = [p for p in _params(parameters) if p.grad is not None]
    norm = _nn.clip_grad_norm_(params, float(max_norm), float(norm_type), error_if_nonfinite)
    return _C.full([], norm, dtype=_C.float32)


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    _nn.clip_grad_value_([p for p in _params(parameters) if p.grad is not None],
                         float(clip_value))


def parameters_to_vector(parameters):
    return _nn.parameters_to_vector(_params(parameters))


def vector_to_parameters(vec, parameters):
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    _nn.vector_to_parameters(vec, _params(parameters))
