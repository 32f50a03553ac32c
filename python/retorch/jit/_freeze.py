"""torch.jit.freeze / optimize_for_inference for traced modules: the parameters and buffers the
graph reads become constants of the graph, which the constant-folding passes can then fold.

Note [Freezing through the archive]
Python cannot build a graph holding tensor constants directly (the IR parser binds `<Tensor>`
constants only from a JIT archive), so freezing writes the module's archive (Note [JIT archive]
in retorch/jit/Serialization.h), rewrites each `prim::GetAttr[name="p"](%self)` line of its graph
into a `prim::Constant` of p's value (the i-th `<Tensor>` of the text is archive tensor
"constant:<i>"; 0-d tensors print inline as {v}), and loads the result. Attributes the graph
writes in place (the first argument of an aten::*_ op) stay attributes, as torch keeps mutated
attributes. The constants are snapshots: unlike torch's frozen modules, later in-place changes to
the original parameters do not reach the frozen graph."""
import os
import re
import tempfile

from .. import _C
from .. import io as _io
from ._graph_module import GraphModuleAccessors

__all__ = ["freeze", "run_frozen_optimizations", "optimize_for_inference", "FrozenModule"]

_GETATTR = re.compile(r'^(\s*%\S+ : )(.*) = prim::GetAttr\[name="([^"]+)"\]\(%self\)(.*)$')
_INPLACE = re.compile(r'= aten::\w+[^_]_\((%[^,)]+)')  # the first argument of an in-place op


def _preserved(name, keep):
    return any(name == k or name.startswith(k + ".") for k in keep)


def _frozen_graph_c(c, keep):
    """A ScriptModule running c's graph with every parameter and buffer not named by keep turned
    into a constant; the kept ones stay attributes bound to the same tensors."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "module"), os.path.join(tmp, "frozen")
        _C._jit._save_module(c, src)
        meta, tensors = _io.load_metadata(src), _io.load_file(src)
        attrs = {k.split(":", 1)[1]: v for k, v in tensors.items()
                 if k.startswith(("param:", "buffer:"))}
        # Attributes an in-place op writes stay attributes, as torch keeps mutated ones.
        text = meta["graph"]
        written = {m.group(1) for m in _INPLACE.finditer(text)}
        keep = list(keep) + [m.group(3) for m in map(_GETATTR.match, text.split("\n"))
                             if m and m.group(1).strip().split(" ")[0] in written]
        lines, constants, seen = [], [], 0
        for line in text.split("\n"):
            m = _GETATTR.match(line)
            if m and not _preserved(m.group(3), keep):
                value = attrs[m.group(3)].detach()
                type_ = m.group(2).replace("requires_grad=1", "requires_grad=0")
                if value.dim() == 0:
                    v = value.item()
                    literal = "{" + repr(int(v) if isinstance(v, bool) else v) + "}"
                else:
                    literal = "<Tensor>"
                    constants.append(value)
                line = f"{m.group(1)}{type_} = prim::Constant[value={literal}]()"
            else:
                for _ in range(line.count("value=<Tensor>")):
                    constants.append(tensors[f"constant:{seen}"])
                    seen += 1
            lines.append(line)
        params = [(n, p) for n, p in c.named_parameters() if _preserved(n, keep)]
        buffers = [(n, b) for n, b in c.named_buffers() if _preserved(n, keep)]
        new_meta = dict(meta, graph="\n".join(lines), parameters="\n".join(n for n, _ in params),
                        buffers="\n".join(n for n, _ in buffers), requires_grad="")
        kept = {f"constant:{i}": t for i, t in enumerate(constants)}
        kept.update({f"param:{n}": tensors[f"param:{n}"] for n, _ in params})
        kept.update({f"buffer:{n}": tensors[f"buffer:{n}"] for n, _ in buffers})
        _io.save_file(kept, dst, new_meta)
        _, loaded = _C._jit._load(dst)
    return _C._jit.ScriptModule(loaded.graph, params, buffers)


def _is_script_module(mod):
    return isinstance(getattr(mod, "_c", None), _C._jit.ScriptModule) or \
        (getattr(mod, "_c", 0) is None and hasattr(mod, "_method_names"))


class FrozenModule(GraphModuleAccessors):
    """A frozen traced module: forward (and the preserved traced methods) run graphs whose
    parameters and buffers are constants, except the preserved attributes. Like torch's frozen
    modules it has no `training` flag."""

    def __init__(self, c, returns_tuple, name, methods, params, buffers):
        self._c = c
        self._returns_tuple = returns_tuple
        self.__name__ = name
        self._method_names = list(methods)
        for method_name, method in methods.items():
            setattr(self, method_name, method)
        self._named_parameters = params
        self._named_buffers = buffers

    def forward(self, *inputs):
        outs = self._forward_c().forward(list(inputs))
        if self._returns_tuple is None:  # frozen from a loaded module, as LoadedModule returns
            return outs[0] if len(outs) == 1 else tuple(outs)
        return tuple(outs) if self._returns_tuple else outs[0]

    def __repr__(self):
        return f"<retorch.jit.FrozenModule {self.__name__}>"


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """Freezes a traced (or loaded) module in eval mode: its graph's parameters and buffers
    become constants (see Note [Freezing through the archive]), then the numerics-preserving
    passes (run_frozen_optimizations) fold what they can. preserved_attrs names attributes to keep
    (a parameter or buffer, or a submodule prefix such as "fc1") and trace_module methods to keep
    (frozen too); other methods are dropped, as torch's. optimize_numerics has no effect: retorch
    has no conv/batch-norm folding pass."""
    from . import TracedMethod, LoadedModule
    if not _is_script_module(mod):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use torch.jit.script "
                           "or torch.jit.trace to script your 'nn.Module'.")
    if getattr(mod, "training", False):
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    keep = list(preserved_attrs or [])
    method_names = [n for n in getattr(mod, "_method_names", []) if n in keep]
    methods = {}
    for name in method_names:
        m = getattr(mod, name)
        methods[name] = TracedMethod(_frozen_graph_c(m._c, keep), m._returns_tuple, name)
    c = None if mod._c is None else _frozen_graph_c(mod._c, keep)
    params = [] if c is None else list(c.named_parameters())
    buffers = [] if c is None else list(c.named_buffers())
    returns_tuple = None if isinstance(mod, LoadedModule) else mod._returns_tuple
    out = FrozenModule(c, returns_tuple, mod.__name__, methods, params, buffers)
    run_frozen_optimizations(out, optimize_numerics, method_names)
    return out


def run_frozen_optimizations(mod, optimize_numerics=True, preserved_methods=None):
    """Runs the default pass pipeline (inline, dce, constprop, pool, cse, peephole) on a frozen
    module's forward and preserved methods: ops on frozen constants fold away."""
    if getattr(mod, "_c", None) is not None:
        mod._c.run_default_passes()
    for name in preserved_methods or []:
        getattr(mod, name)._c.run_default_passes()


def optimize_for_inference(mod, other_methods=None):
    """Freezes mod (in eval mode; a module already frozen is kept) and runs the default passes on
    it. torch's extra inference rewrites (conv/batch-norm folding, MKL-DNN layouts) have no
    counterpart here."""
    if not _is_script_module(mod) and not isinstance(mod, FrozenModule):
        raise RuntimeError("optimize_for_inference expects a ScriptModule as input. Please use "
                           "torch.jit.script or torch.jit.trace to script your 'nn.Module'.")
    other_methods = list(other_methods or [])
    if not isinstance(mod, FrozenModule):
        if hasattr(mod, "eval"):
            mod = mod.eval()
        mod = freeze(mod, preserved_attrs=other_methods)
    run_frozen_optimizations(mod, True, [n for n in other_methods if n in mod._method_names])
    return mod
