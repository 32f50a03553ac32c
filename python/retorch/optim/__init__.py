"""retorch.optim: torch-shaped optimizers over the C++ ones in retorch._C._optim."""
from collections.abc import MutableMapping

from .. import _C
from .._C import Tensor

_opt = _C._optim

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()

# Flags the C++ options hold as 0/1; torch-only switches the C++ kernels do not need.
_BOOL_KEYS = {"nesterov", "maximize", "amsgrad", "centered"}
_PY_ONLY_KEYS = {"foreach", "differentiable", "capturable", "fused"}


def _to_cpp(options):
    """Python hyperparameters -> C++ keys (betas split in two); drops torch-only switches."""
    out = {}
    for k, v in options.items():
        if k == "betas":
            out["beta1"], out["beta2"] = float(v[0]), float(v[1])
        elif k in _PY_ONLY_KEYS or k == "params":
            continue
        else:
            out[k] = float(v)
    return out


class _ParamGroup(MutableMapping):
    """One param group as a dict; hyperparameters live in (and write through to) C++."""

    def __init__(self, optimizer, index, params):
        self._optimizer = optimizer
        self._index = index
        self._params = params
        self._extra = {}

    def _cpp_keys(self):
        return self._optimizer._cpp.group_keys(self._index)

    def _keys(self):
        keys = ["params"]
        for k in self._cpp_keys():
            if k == "beta1":
                keys.append("betas")
            elif k != "beta2":
                keys.append(k)
        if self._optimizer._cpp.group_initial_lr(self._index) is not None:
            keys.append("initial_lr")
        return keys + [k for k in self._extra if k not in keys]

    def __getitem__(self, key):
        cpp = self._optimizer._cpp
        if key == "params":
            return self._params
        if key == "betas" and "beta1" in self._cpp_keys():
            return (cpp.group_get(self._index, "beta1"), cpp.group_get(self._index, "beta2"))
        if key == "initial_lr" and cpp.group_initial_lr(self._index) is not None:
            return cpp.group_initial_lr(self._index)
        if key in self._cpp_keys():
            v = cpp.group_get(self._index, key)
            return bool(v) if key in _BOOL_KEYS else v
        return self._extra[key]

    def __setitem__(self, key, value):
        cpp = self._optimizer._cpp
        if key == "params":
            raise KeyError("the params of a param group cannot be replaced")
        if key == "betas" and "beta1" in self._cpp_keys():
            cpp.group_set(self._index, "beta1", float(value[0]))
            cpp.group_set(self._index, "beta2", float(value[1]))
        elif key == "initial_lr":
            cpp.group_set_initial_lr(self._index, None if value is None else float(value))
        elif key in self._cpp_keys():
            cpp.group_set(self._index, key, float(value))
        else:
            self._extra[key] = value

    def __delitem__(self, key):
        if key == "initial_lr":
            self._optimizer._cpp.group_set_initial_lr(self._index, None)
        elif key in self._extra:
            del self._extra[key]
        else:
            raise KeyError("cannot delete optimizer option " + repr(key))

    def __iter__(self):
        return iter(self._keys())

    def __len__(self):
        return len(self._keys())

    def __repr__(self):
        return repr({k: self[k] for k in self})


class _State:
    """optimizer.state[p]: a parameter's state buffers (a fresh dict of tensors each time)."""

    def __init__(self, cpp):
        self._cpp = cpp

    def __getitem__(self, param):
        return self._cpp.param_state(param)


class Optimizer:
    """Base of the torch-shaped optimizers; subclasses give the C++ factory and defaults."""

    _factory = None

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        groups = self._groups_of(params)
        cpp_groups = [(self._check_params(g), self._group_options(g)) for g in groups]
        given = {k: v for k, v in self.defaults.items() if v is not required}
        self._cpp = type(self)._factory(cpp_groups, _to_cpp(given))
        self.param_groups = [_ParamGroup(self, i, list(p)) for i, (p, _) in enumerate(cpp_groups)]
        self.state = _State(self._cpp)

    @staticmethod
    def _groups_of(params):
        """The param groups (dicts) of an optimizer's params argument, refused like torch's."""
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + type(params).__name__)
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        return groups if isinstance(groups[0], dict) else [{"params": groups}]

    @staticmethod
    def _check_params(group):
        params = group["params"]
        if isinstance(params, Tensor):
            return [params]
        if isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        params = list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + type(p).__name__)
        return params

    def _group_options(self, group):
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError("parameter group didn't specify a value of required "
                                 "optimization parameter " + name)
        return _to_cpp({k: v for k, v in group.items() if k != "params"})

    def add_param_group(self, param_group):
        """Adds a group (a dict with 'params' and per-group options over the defaults)."""
        params = self._check_params(param_group)
        self._cpp.add_param_group(params, self._group_options(param_group))
        self.param_groups.append(_ParamGroup(self, len(self.param_groups), params))

    def step(self, closure=None):
        """One update of every parameter with a gradient; returns closure() when given."""
        loss = None
        if closure is not None:
            from ..autograd import enable_grad
            with enable_grad():
                loss = closure()
        self._cpp.step()
        return loss

    def zero_grad(self, set_to_none=True):
        self._cpp.zero_grad(set_to_none)

    def state_dict(self):
        """Flat {name: Tensor} state (param_groups.<g>.<key>, state.<g>.<i>.<buffer>)."""
        return self._cpp.state_dict()

    def load_state_dict(self, state_dict):
        self._cpp.load_state_dict(dict(state_dict))

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, g in enumerate(self.param_groups):
            lines.append("Parameter Group {}".format(i))
            for k in sorted(k for k in g if k != "params"):
                lines.append("    {}: {}".format(k, g[k]))
        return "\n".join(lines + [")"])


def _sgd_factory(groups, defaults):
    # SGD's lr may be `required` (every group then gives one); C++ defaults need a number.
    return _opt.SGD(groups, dict({"lr": 0.0}, **defaults))


class SGD(Optimizer):
    _factory = staticmethod(_sgd_factory)

    def __init__(self, params, lr=required, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))


class Adam(Optimizer):
    _factory = _opt.Adam

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize))


class AdamW(Optimizer):
    _factory = _opt.AdamW

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize))


class RMSprop(Optimizer):
    _factory = _opt.RMSprop

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, foreach=None, maximize=False, differentiable=False):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize))


class Adagrad(Optimizer):
    _factory = _opt.Adagrad

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False):
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, maximize=maximize))


from ._py_optimizers import *  # noqa: E402,F401,F403  (Adadelta, Adamax, NAdam, RAdam, ...)
from ._py_optimizers import __all__ as _py_all  # noqa: E402
__all__ += _py_all
from ._lbfgs import LBFGS  # noqa: E402,F401
__all__.append("LBFGS")
from . import lr_scheduler  # noqa: E402,F401
from . import swa_utils  # noqa: E402,F401
