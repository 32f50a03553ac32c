"""nn.Module: the base class of every layer, with torch.nn.Module's registration rules and API."""
from collections import OrderedDict, namedtuple
import itertools

from ... import _C
from ..._C import Tensor
from ..._hooks import RemovableHandle
from ..._size import Size
from ...autograd import no_grad
from ..parameter import Parameter

__all__ = ["Module"]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s, num_spaces):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * num_spaces + line for line in lines[1:])


def _type_name(value):
    if isinstance(value, Tensor):
        return "retorch.Tensor"
    return type(value).__name__


class Module:
    """Base class for all neural network modules; subclass it and define forward()."""

    training: bool
    _version = 1

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", OrderedDict())
        setattr_(self, "_buffers", OrderedDict())
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_modules", OrderedDict())
        setattr_(self, "_forward_hooks", OrderedDict())
        setattr_(self, "_forward_pre_hooks", OrderedDict())
        setattr_(self, "_state_dict_hooks", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function')

    # Calls ------------------------------------------------------------------------------------
    def _call_impl(self, *args, **kwargs):
        # The common case (no hooks) costs one dict truth test each.
        if not (self._forward_hooks or self._forward_pre_hooks):
            return self.forward(*args, **kwargs)
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        result = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            hook_result = hook(self, args, result)
            if hook_result is not None:
                result = hook_result
        return result

    __call__ = _call_impl

    def register_forward_hook(self, hook, *, prepend=False):
        """hook(module, args, output) runs after forward; a non-None return replaces output."""
        return self._add_hook(self._forward_hooks, hook, prepend)

    def register_forward_pre_hook(self, hook, *, prepend=False):
        """hook(module, args) runs before forward; a non-None return replaces args."""
        return self._add_hook(self._forward_pre_hooks, hook, prepend)

    @staticmethod
    def _add_hook(hooks, hook, prepend):
        handle = RemovableHandle(hooks)  # stored under handle.id, as torch's Module does
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    # Registration -----------------------------------------------------------------------------
    def register_buffer(self, name, tensor, persistent=True):
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_type_name(tensor)}' object to buffer '{name}' "
                            "(retorch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_type_name(param)}' object to parameter '{name}' "
                            "(retorch.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                "created explicitly. To express '{name}' as a function of another Tensor, "
                "compute the value in the forward() method.")
        self._parameters[name] = param

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_type_name(module)} is not a Module subclass")
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    @staticmethod
    def _check_name(name, kind):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')

    def get_submodule(self, target):
        mod = self
        for item in target.split(".") if target else []:
            if not hasattr(mod, item):
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def get_parameter(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if name not in mod._parameters:
            raise AttributeError(f"{type(mod).__name__} has no parameter `{name}`")
        return mod._parameters[name]

    def get_buffer(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if name not in mod._buffers:
            raise AttributeError(f"{type(mod).__name__} has no buffer `{name}`")
        return mod._buffers[name]

    # Attribute protocol: parameters, buffers and submodules live in their dicts.
    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, d, params)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as parameter '{name}' "
                                "(retorch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            modules = d.get("_modules")
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, d, modules)
            modules[name] = value
        elif "_modules" in d and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as child module '{name}' "
                                "(retorch.nn.Module or None expected)")
            d["_modules"][name] = value
        elif "_buffers" in d and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_type_name(value)}' as buffer '{name}' "
                                "(retorch.Tensor or None expected)")
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name, d, keep):
        for store in ("_parameters", "_buffers", "_modules"):
            s = d.get(store)
            if s is not None and s is not keep and name in s:
                del s[name]
        d.pop(name, None)

    def __delattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            s = self.__dict__.get(store)
            if s is not None and name in s:
                del s[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = list(super().__dir__()) + list(self._parameters) + list(self._modules) + \
            list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    # Traversal --------------------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                   remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                   remove_duplicate)

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_children(self):
        memo = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in memo:
                memo.add(id(m))
                yield name, m

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from m.named_modules(memo, sub, remove_duplicate)

    # Modes and gradients ----------------------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                g = p.grad
                if g.grad_fn is not None:
                    g = g.detach()
                    p.grad = g
                g.zero_()

    # Conversions ------------------------------------------------------------------------------
    def _apply(self, fn):
        for m in self.children():
            m._apply(fn)
        with no_grad():
            for p in self._parameters.values():
                if p is None:
                    continue
                new = fn(p)
                if new is not p:
                    p.data = new  # keeps the Parameter object (optimizers hold it)
                if p.grad is not None:
                    g = fn(p.grad)
                    if g is not p.grad:
                        p.grad.data = g
            for k, b in self._buffers.items():
                if b is not None:
                    self._buffers[k] = fn(b)
        return self

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        device, dtype = _parse_to(args, kwargs)
        if dtype is not None and not (dtype.is_floating_point):
            raise TypeError("nn.Module.to only accepts floating point dtypes, but got desired "
                            f"dtype={dtype}")

        fmt = kwargs.get("memory_format")

        def convert(t):
            target = dtype if dtype is not None and t.is_floating_point() else t.dtype
            if fmt is not None and t.dim() == 4:  # torch converts 4-d (and 5-d) tensors only
                return t.to(device if device is not None else t.device, target,
                            memory_format=fmt)
            if (device is None or t.device == device) and target == t.dtype:
                return t
            return t.to(device if device is not None else t.device, target)
        return self._apply(convert)

    def to_empty(self, *, device):
        """Moves the parameters and buffers to device as uninitialized tensors (no copy): what a
        module built on the meta device needs before its values are loaded or initialized."""
        return self._apply(lambda t: _C.empty_like(t, device=device))

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else _C.device("cuda", device)
                       if isinstance(device, int) else device)

    def type(self, dst_type):
        return self._apply(lambda t: t.to(dst_type))

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def share_memory(self):
        return self

    # State dicts ------------------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        if args:  # torch's deprecated positional form (destination, prefix, keep_vars)
            destination = args[0]
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".",
                             keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, {})
            if result is not None:
                destination = result
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        local = itertools.chain(self._parameters.items(), persistent.items())
        for name, param in local:
            key = prefix + name
            if param is None:
                continue
            if key not in state_dict:
                missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  f"retorch.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(value)}")
                continue
            if tuple(value.shape) != tuple(param.shape):
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape "
                    f"{_size_str(value.shape)} from checkpoint, the shape in current model is "
                    f"{_size_str(param.shape)}.")
                continue
            try:
                with no_grad():
                    param.copy_(value)
            except Exception as ex:  # noqa: BLE001  (reported like torch, with the key)
                error_msgs.append(f'While copying the parameter named "{key}", whose '
                                  f"dimensions in the model are {_size_str(param.shape)} and "
                                  f"whose dimensions in the checkpoint are "
                                  f"{_size_str(value.shape)}, an exception occurred : "
                                  f"{ex.args}.")
        # Reported whether or not strict, like torch; load_state_dict's strict decides raising.
        for key in state_dict:
            if not key.startswith(prefix):
                continue
            rest = key[len(prefix):]
            head = rest.split(".", 1)[0]
            if head not in self._modules and rest not in self._parameters and \
                    rest not in persistent:
                unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True):
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []

        def load(module, prefix):
            module._load_from_state_dict(state_dict, prefix, {}, strict, missing, unexpected,
                                         errors)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")
        load(self, "")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def _register_state_dict_hook(self, hook):
        return self._add_hook(self._state_dict_hooks, hook, False)

    # Printing ---------------------------------------------------------------------------------
    def extra_repr(self):
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for key, m in self._modules.items():
            lines.append("(" + key + "): " + _addindent(repr(m), 2))
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _size_str(shape):
    return repr(Size(shape))  # torch.Size([...]), as torch's messages


def _parse_to(args, kwargs):
    """(device, dtype) from Module.to's forms: to(device), to(dtype), to(device, dtype),
    to(tensor), with keywords device=/dtype=/non_blocking=/memory_format=."""
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    for a in args:
        if isinstance(a, _C.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, (str, _C.device)):
            device = a
        elif isinstance(a, bool):
            continue  # non_blocking
        else:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    if isinstance(device, str):
        device = _C.device(device)
    return device, dtype

