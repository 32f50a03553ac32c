"""Operator schemas for retorch.jit.script: parsed from the registered ops, matched by call."""
import functools

from .. import _C


class Arg:
    def __init__(self, name, type_, default, has_default, kwarg_only):
        self.name = name
        self.type = type_
        self.default = default
        self.has_default = has_default
        self.kwarg_only = kwarg_only


class Schema:
    def __init__(self, name, overload, args, returns):
        self.name = name
        self.overload = overload
        self.args = args
        self.returns = returns


def _split(s):
    parts, depth, cur = [], 0, ""
    for c in s:
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        if c == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _type(t):
    if t.startswith("Tensor"):
        rest = t[6:]
        while rest.startswith("("):  # alias annotation: Tensor(a!)
            rest = rest[rest.index(")") + 1:]
        return "Tensor" + rest
    if "[" in t:  # int[2] -> int[]
        return t[:t.index("[")] + "[]" + t[t.index("]") + 1:]
    return t


def _default(text):
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    if text.startswith("["):
        return [int(x) for x in _split(text[1:-1])]
    if text.startswith(("'", '"')):
        return text[1:-1]
    try:
        return int(text)
    except ValueError:
        return float(text)


def parse(schema):
    head, ret = schema.rsplit("->", 1)
    name, params = head.split("(", 1)
    params = params.strip()[:-1]
    base, _, overload = name.strip().partition(".")
    args, kwarg_only = [], False
    for p in _split(params):
        if p == "*":
            kwarg_only = True
            continue
        default, has_default = None, False
        if "=" in p:
            p, d = p.split("=", 1)
            default, has_default = _default(d.strip()), True
        type_, _, arg_name = p.strip().rpartition(" ")
        args.append(Arg(arg_name, _type(type_), default, has_default, kwarg_only))
    ret = ret.strip()
    if ret.startswith("("):
        ret = ret[1:-1]
    returns = [_type(r.split(" ")[0]) for r in _split(ret)]
    return Schema(base, overload, args, returns)


@functools.lru_cache(maxsize=None)
def _by_name():
    table = {}
    for s in _C._op_schemas():
        sc = parse(s)
        table.setdefault(sc.name, []).append(sc)
    return table


def _accepts(param, value_type, exact):
    """Whether a value of value_type may be passed for a parameter of type param."""
    if param.endswith("?"):
        if value_type == "NoneType":
            return True
        param = param[:-1]
    if param == value_type:
        return True
    if param == "Tensor":
        return not exact and value_type in ("int", "float", "bool")
    if param == "Scalar":
        return value_type in ("int", "float", "bool")
    if param == "float":
        return value_type == "int"
    if param in ("ScalarType", "Layout", "MemoryFormat"):
        return value_type == "int"
    if param == "Device":
        return value_type == "str"
    return False


def match(name, args, kwargs):
    """The first overload of `name` that takes these argument values (exact types first)."""
    for exact in (True, False):
        for sc in _by_name().get(name, []):
            if len(args) > len(sc.args) or any(a.kwarg_only for a in sc.args[:len(args)]):
                continue
            names = {a.name for a in sc.args}
            if any(k not in names for k in kwargs):
                continue
            ok = True
            for i, a in enumerate(sc.args):
                if i < len(args):
                    v = args[i]
                elif a.name in kwargs:
                    v = kwargs[a.name]
                elif a.has_default:
                    continue
                else:
                    ok = False
                    break
                if not _accepts(a.type, v.type, exact):
                    ok = False
                    break
            if ok:
                return sc
    return None


def return_type(r):
    return r
