"""Distribution, the base of retorch.distributions: shapes, argument and sample validation
(torch's checks and messages), expand, and the defaults torch.distributions.Distribution has."""
import warnings

from .. import _C
from . import constraints
from .utils import _fmt_size, _size, lazy_property

__all__ = ["Distribution"]


def _fmt(t):
    """What torch's f"{t}" prints: a 0-dim tensor formats as its Python value."""
    return t.item() if t.dim() == 0 else t


class Distribution:
    """batch_shape, event_shape, sample/rsample(sample_shape), log_prob, cdf, icdf, entropy,
    mean, mode, variance, stddev, support and arg_constraints, as torch's Distribution."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__  # as torch: on, unless python runs with -O

    @staticmethod
    def set_default_validate_args(value):
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with "
                              "`validate_args=False` to turn off validation.")
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # cannot be checked
                if param not in self.__dict__ and isinstance(getattr(type(self), param, None),
                                                             lazy_property):
                    continue  # a lazily computed parameter (probs vs logits) was not given
                value = getattr(self, param)
                valid = constraint.check(value)
                if not bool(valid.all()):
                    raise ValueError(
                        f"Expected parameter {param} "
                        f"({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {self!r} "
                        f"to satisfy the constraint {constraint!r}, "
                        f"but found invalid values:\n{_fmt(value)}")

    def expand(self, batch_shape, _instance=None):
        """A view of this distribution with its parameters expanded to batch_shape."""
        raise NotImplementedError

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self):
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        from ..autograd import no_grad
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        raise NotImplementedError

    def sample_n(self, n):
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning)
        return self.sample((n,))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return _C.exp(self.entropy())

    def _extended_shape(self, sample_shape=()):
        return _size(sample_shape) + self._batch_shape + self._event_shape

    def _validate_sample(self, value):
        """Raises ValueError (torch's messages) when value's rightmost dims do not fit
        batch_shape + event_shape or it lies outside the support."""
        if not isinstance(value, _C.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        shape = tuple(value.shape)
        event_dim_start = len(shape) - len(self._event_shape)
        if shape[event_dim_start:] != self._event_shape:
            raise ValueError("The right-most size of value must match event_shape: {} vs {}."
                             .format(_fmt_size(shape), _fmt_size(self._event_shape)))
        expected = self._batch_shape + self._event_shape
        for i, j in zip(reversed(shape), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError("Value is not broadcastable with batch_shape+event_shape: {} vs "
                                 "{}.".format(_fmt_size(shape), _fmt_size(expected)))
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.")
            return
        assert support is not None
        valid = support.check(value)
        if not bool(valid.all()):
            raise ValueError(
                "Expected value argument "
                f"({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) "
                f"of the distribution {self!r}, "
                f"but found invalid values:\n{_fmt(value)}")

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError("Subclass {} of {} that defines a custom __init__ method "
                                      "must also define a custom .expand() method."
                                      .format(self.__class__.__name__, cls.__name__))
        return self.__new__(type(self)) if _instance is None else _instance

    def _expand_params(self, cls, batch_shape, names, _instance=None, event_shape=None):
        """torch's expand for the common case: each parameter in names (when set) expanded to
        batch_shape plus its own trailing dims; everything else rebuilt by Distribution."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = tuple(batch_shape)
        nb = len(self._batch_shape)
        for name in names:
            if name in self.__dict__:
                value = self.__dict__[name]
                setattr(new, name, value.expand(batch_shape + tuple(value.shape[nb:])))
        if "_param" in self.__dict__:
            new._param = new.__dict__.get("probs", new.__dict__.get("logits"))
        Distribution.__init__(new, batch_shape, self._event_shape if event_shape is None
                              else event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def __repr__(self):
        try:
            names = [k for k in self.arg_constraints if k in self.__dict__]
        except NotImplementedError:
            names = []
        args = ", ".join("{}: {}".format(
            p, _fmt(self.__dict__[p]) if self.__dict__[p].numel() == 1
            else _fmt_size(self.__dict__[p].shape)) for p in names)
        return type(self).__name__ + "(" + args + ")"
