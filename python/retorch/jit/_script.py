"""retorch.jit.script's front end: a Python function's AST -> graph text in PyTorch's IR form."""
import ast
import inspect
import textwrap

from . import _schema

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
           ast.MatMult: "matmul", ast.Pow: "pow", ast.FloorDiv: "floor_divide",
           ast.Mod: "remainder"}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
           ast.NotEq: "ne"}
_ANNOTATIONS = {"Tensor": "Tensor", "int": "int", "float": "float", "bool": "bool",
                "List[int]": "int[]", "Optional[Tensor]": "Tensor?", "str": "str"}
# Module prefixes under which a call names an operator: torch.relu, retorch.relu, F.relu.
_OP_NAMESPACES = {"torch", "retorch", "F", "functional", "nn.functional", "torch.nn.functional",
                  "retorch.nn.functional"}


class ScriptError(RuntimeError):
    """A construct outside the scripted subset, reported with its source line."""


class _Value:
    def __init__(self, name, type_):
        self.name = name
        self.type = type_


class _Block:
    """Lines of one block being emitted, and the variables it can see."""

    def __init__(self, indent, env):
        self.indent = indent
        self.lines = []
        self.env = dict(env)


class _Frontend:
    def __init__(self, fn):
        self.fn = fn
        src = textwrap.dedent(inspect.getsource(fn))
        self.tree = ast.parse(src)
        self.file = inspect.getsourcefile(fn) or "<unknown>"
        self.first_line = fn.__code__.co_firstlineno - 1
        self.counter = 0
        self.block = None

    # ------------------------------------------------------------ helpers
    def error(self, node, msg):
        line = self.first_line + getattr(node, "lineno", 1)
        raise ScriptError(f"jit.script: {msg} ({self.file}:{line})")

    def fresh(self, type_, hint=None):
        self.counter += 1
        name = f"{hint}.{self.counter}" if hint else str(self.counter)
        return _Value(name, type_)

    def loc(self, node):
        return f"{self.file}:{self.first_line + node.lineno}:{node.col_offset}"

    def emit(self, outs, kind, ins, attrs=None, node=None):
        lhs = ", ".join(f"%{o.name} : {o.type}" for o in outs)
        attr = ""
        if attrs:
            attr = "[" + ", ".join(f"{k}={v}" for k, v in attrs.items()) + "]"
        text = f"{lhs} = {kind}{attr}(" + ", ".join("%" + i.name for i in ins) + ")"
        if node is not None and hasattr(node, "lineno"):
            text += " # " + self.loc(node)
        self.block.lines.append(" " * self.block.indent + text)

    def constant(self, value, node=None):
        if value is None:
            v = self.fresh("NoneType")
            self.emit([v], "prim::Constant", [])
            return v
        if isinstance(value, bool):
            v = self.fresh("bool")
            self.emit([v], "prim::Constant", [], {"value": int(value)})
        elif isinstance(value, int):
            v = self.fresh("int")
            self.emit([v], "prim::Constant", [], {"value": value})
        elif isinstance(value, float):
            v = self.fresh("float")
            self.emit([v], "prim::Constant", [], {"value": repr(value)})
        elif isinstance(value, str):
            v = self.fresh("str")
            escaped = value.replace("\\", "\\\\").replace('"', '\\"')
            self.emit([v], "prim::Constant", [], {"value": f'"{escaped}"'})
        elif isinstance(value, (list, tuple)) and all(isinstance(x, int) for x in value):
            v = self.fresh("int[]")
            self.emit([v], "prim::Constant", [], {"value": "[" + ", ".join(map(str, value)) + "]"})
        else:
            self.error(node, f"unsupported constant {value!r}")
        return v

    def number_tensor(self, val, node):
        """A number used where an operator takes a Tensor: a 0-dim tensor (a wrapped number)."""
        if val.type in ("int", "float", "bool"):
            v = self.fresh("Tensor")
            self.emit([v], "prim::NumToTensor", [val], node=node)
            return v
        return val

    def call_op(self, name, args, kwargs, node):
        """Emits aten::<name> for positional and keyword arguments, filling defaults."""
        schema = _schema.match(name, args, kwargs)
        if schema is None:
            types = ", ".join(a.type for a in args)
            self.error(node, f"no operator {name}({types}) with keywords {sorted(kwargs)}")
        ins = []
        for i, arg in enumerate(schema.args):
            if i < len(args):
                val = args[i]
            elif arg.name in kwargs:
                val = kwargs[arg.name]
            else:
                val = self.constant(arg.default, node)
            if arg.type.startswith("Tensor") and not arg.type.startswith("Tensor[]"):
                val = self.number_tensor(val, node)
            ins.append(val)
        outs = [self.fresh(_schema.return_type(r)) for r in schema.returns]
        self.emit(outs, "aten::" + schema.name, ins, node=node)
        if len(outs) == 1:
            return outs[0]
        return outs

    # ------------------------------------------------------------ expressions
    def expr(self, e):
        if isinstance(e, ast.Name):
            if e.id in self.block.env:
                return self.block.env[e.id]
            if e.id in ("True", "False", "None"):
                return self.constant({"True": True, "False": False, "None": None}[e.id], e)
            self.error(e, f"undefined name '{e.id}'")
        if isinstance(e, ast.Constant):
            return self.constant(e.value, e)
        if isinstance(e, (ast.List, ast.Tuple)):
            if all(isinstance(x, ast.Constant) and isinstance(x.value, int) for x in e.elts):
                return self.constant([x.value for x in e.elts], e)
            vals = [self.expr(x) for x in e.elts]
            elem = "Tensor" if all(v.type == "Tensor" for v in vals) else "int"
            out = self.fresh(elem + "[]")
            self.emit([out], "prim::ListConstruct", vals, node=e)
            return out
        if isinstance(e, ast.BinOp):
            op = _BINOPS.get(type(e.op))
            if op is None:
                self.error(e, f"unsupported operator {type(e.op).__name__}")
            lhs, rhs = self.expr(e.left), self.expr(e.right)
            if lhs.type != "Tensor" and rhs.type != "Tensor":
                return self.scalar_binop(op, lhs, rhs, e)
            if lhs.type != "Tensor":  # 2 * x: the tensor goes first where that is the same op
                if op in ("add", "mul"):
                    lhs, rhs = rhs, lhs
                else:
                    lhs = self.number_tensor(lhs, e)
            return self.call_op(op, [lhs, rhs], {}, e)
        if isinstance(e, ast.UnaryOp):
            v = self.expr(e.operand)
            if isinstance(e.op, ast.USub):
                if v.type == "Tensor":
                    return self.call_op("neg", [v], {}, e)
                return self.scalar_binop("mul", v, self.constant(-1, e), e)
            if isinstance(e.op, ast.UAdd):
                return v
            self.error(e, f"unsupported unary operator {type(e.op).__name__}")
        if isinstance(e, ast.Compare):
            if len(e.ops) != 1:
                self.error(e, "chained comparisons are not supported")
            op = _CMPOPS.get(type(e.ops[0]))
            if op is None:
                self.error(e, f"unsupported comparison {type(e.ops[0]).__name__}")
            lhs, rhs = self.expr(e.left), self.expr(e.comparators[0])
            if lhs.type != "Tensor" and rhs.type != "Tensor":
                return self.scalar_binop(op, lhs, rhs, e)
            return self.call_op(op, [self.number_tensor(lhs, e), self.number_tensor(rhs, e)],
                                {}, e)
        if isinstance(e, ast.Call):
            return self.call(e)
        self.error(e, f"unsupported expression {type(e).__name__}")

    def scalar_binop(self, op, lhs, rhs, node):
        """Arithmetic on ints/floats: prim::<op> nodes the interpreter runs on numbers."""
        if op in _CMPOPS.values():
            out_type = "bool"
        elif op == "div" or "float" in (lhs.type, rhs.type):
            out_type = "float"
        else:
            out_type = "int"
        out = self.fresh(out_type)
        self.emit([out], "prim::" + op, [lhs, rhs], node=node)
        return out

    def call(self, e):
        func = e.func
        kwargs = {k.arg: self.expr(k.value) for k in e.keywords}
        if isinstance(func, ast.Attribute):
            base = _dotted(func.value)
            if base in _OP_NAMESPACES or base in ("nn.functional",):
                args = [self.expr(a) for a in e.args]
                return self.call_op(func.attr, args, kwargs, e)
            # A method call: x.relu() -> aten::relu(x).
            recv = self.expr(func.value)
            args = [recv] + [self.expr(a) for a in e.args]
            return self.call_op(func.attr, args, kwargs, e)
        if isinstance(func, ast.Name):
            if func.id == "print":
                args = [self.expr(a) for a in e.args]
                self.block.lines.append(" " * self.block.indent + " = prim::Print(" +
                                        ", ".join("%" + a.name for a in args) + ")")
                return None
            if func.id in ("float", "int", "bool") and len(e.args) == 1:
                v = self.expr(e.args[0])
                out = self.fresh(func.id)
                self.emit([out], "prim::" + func.id.capitalize(), [v], node=e)
                return out
            self.error(e, f"unsupported call of '{func.id}'")
        self.error(e, "unsupported call")

    # ------------------------------------------------------------ statements
    def stmts(self, body):
        for s in body:
            if self.stmt(s):
                return True
        return False

    def stmt(self, s):
        """Emits one statement; returns True after a return."""
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                self.error(s, "chained assignment is not supported")
            self.assign(s.targets[0], self.expr(s.value), s)
        elif isinstance(s, ast.AugAssign):
            fake = ast.BinOp(left=ast.Name(id=s.target.id, ctx=ast.Load()), op=s.op, right=s.value)
            ast.copy_location(fake, s)
            self.assign(s.target, self.expr(fake), s)
        elif isinstance(s, ast.AnnAssign):
            self.assign(s.target, self.expr(s.value), s)
        elif isinstance(s, ast.Return):
            if isinstance(s.value, ast.Tuple):
                vals = [self.expr(x) for x in s.value.elts]
            else:
                vals = self.expr(s.value) if s.value is not None else self.constant(None)
            self.block.returns = vals if isinstance(vals, list) else [vals]
            return True
        elif isinstance(s, ast.If):
            self.if_stmt(s)
        elif isinstance(s, ast.For):
            self.for_stmt(s)
        elif isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                return False  # a docstring
            self.expr(s.value)
        elif isinstance(s, ast.Pass):
            pass
        elif isinstance(s, ast.Raise):
            msg = self.constant("Exception")
            self.block.lines.append(" " * self.block.indent +
                                    f" = prim::RaiseException(%{msg.name})")
        else:
            self.error(s, f"unsupported statement {type(s).__name__}")
        return False

    def assign(self, target, val, node):
        if isinstance(target, ast.Name):
            if isinstance(val, list):
                self.error(node, "assigning several results to one name; unpack them")
            self.block.env[target.id] = val
        elif isinstance(target, ast.Tuple) and isinstance(val, list):
            if len(target.elts) != len(val):
                self.error(node, f"cannot unpack {len(val)} values into {len(target.elts)}")
            for t, v in zip(target.elts, val):
                self.assign(t, v, node)
        else:
            self.error(node, "unsupported assignment target")

    def sub_block(self, body, inputs=()):
        outer = self.block
        blk = _Block(outer.indent + 4, outer.env)
        for name, v in inputs:
            blk.env[name] = v
        blk.returns = None
        self.block = blk
        returned = self.stmts(body)
        self.block = outer
        if returned:
            self.error(body[-1], "return inside if/for is not supported")
        return blk

    def if_stmt(self, s):
        cond = self.expr(s.test)
        if cond.type == "Tensor":
            b = self.fresh("bool")
            self.emit([b], "prim::Bool", [cond], node=s)
            cond = b
        then_b = self.sub_block(s.body)
        else_b = self.sub_block(s.orelse)
        # Variables assigned in either branch and visible afterwards become the If's outputs.
        names = [n for n in _assigned(s.body) + _assigned(s.orelse)
                 if n in then_b.env and n in else_b.env]
        names = list(dict.fromkeys(n for n in names
                                   if then_b.env[n] is not self.block.env.get(n)
                                   or else_b.env[n] is not self.block.env.get(n)))
        outs = []
        for n in names:
            t1, t2 = then_b.env[n].type, else_b.env[n].type
            if t1 != t2:
                self.error(s, f"'{n}' is {t1} in one branch and {t2} in the other")
            outs.append(self.fresh(t1, n))
        pad = " " * self.block.indent
        lhs = ", ".join(f"%{o.name} : {o.type}" for o in outs)
        self.block.lines.append(f"{pad}{lhs} = prim::If(%{cond.name}) # {self.loc(s)}")
        for i, blk in enumerate((then_b, else_b)):
            self.block.lines.append(f"{pad}  block{i}():")
            self.block.lines.extend(blk.lines)
            res = ", ".join("%" + blk.env[n].name for n in names)
            self.block.lines.append(f"{pad}    -> ({res})")
        for n, o in zip(names, outs):
            self.block.env[n] = o

    def for_stmt(self, s):
        it = s.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and
                it.func.id == "range" and len(it.args) == 1 and isinstance(s.target, ast.Name)):
            self.error(s, "only `for i in range(n)` loops are supported")
        trip = self.expr(it.args[0])
        if trip.type != "int":
            self.error(s, "range() takes an int")
        carried = [n for n in dict.fromkeys(_assigned(s.body)) if n in self.block.env]
        true_c = self.constant(True)
        idx = self.fresh("int", s.target.id)
        params = [(s.target.id, idx)]
        inner = []
        for n in carried:
            v = self.fresh(self.block.env[n].type, n)
            inner.append(v)
            params.append((n, v))
        body = self.sub_block(s.body, params)
        outs = [self.fresh(v.type, n) for n, v in zip(carried, inner)]
        pad = " " * self.block.indent
        lhs = ", ".join(f"%{o.name} : {o.type}" for o in outs)
        ins = ", ".join("%" + v.name for v in [trip, true_c] + [self.block.env[n] for n in carried])
        self.block.lines.append(f"{pad}{lhs} = prim::Loop({ins}) # {self.loc(s)}")
        params_text = ", ".join(f"%{v.name} : {v.type}" for _, v in params)
        self.block.lines.append(f"{pad}  block0({params_text}):")
        self.block.lines.extend(body.lines)
        res = ", ".join("%" + x.name for x in [true_c] + [body.env[n] for n in carried])
        self.block.lines.append(f"{pad}    -> ({res})")
        for n, o in zip(carried, outs):
            self.block.env[n] = o

    # ------------------------------------------------------------ the function
    def graph_text(self):
        fdef = self.tree.body[0]
        if not isinstance(fdef, ast.FunctionDef):
            self.error(fdef, "script takes a function")
        params = []
        env = {}
        for a in fdef.args.args:
            ann = "Tensor"
            if a.annotation is not None:
                key = _dotted(a.annotation) or ast.unparse(a.annotation)
                key = key.replace("torch.", "").replace("retorch.", "").replace("typing.", "")
                if key not in _ANNOTATIONS:
                    self.error(a, f"unsupported annotation '{key}' of argument '{a.arg}'")
                ann = _ANNOTATIONS[key]
            v = _Value(a.arg, ann)
            env[a.arg] = v
            params.append(v)
        self.block = _Block(2, env)
        self.block.returns = None
        if not self.stmts(fdef.body):
            self.block.returns = [self.constant(None)]
        head = "graph(" + ",\n      ".join(f"%{p.name} : {p.type}" for p in params) + "):"
        ret = "  return (" + ", ".join("%" + r.name for r in self.block.returns) + ")"
        return "\n".join([head] + self.block.lines + [ret]) + "\n"


def _dotted(e):
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Attribute):
        base = _dotted(e.value)
        return base + "." + e.attr if base else None
    if isinstance(e, ast.Subscript):
        base = _dotted(e.value)
        inner = _dotted(e.slice)
        return f"{base}[{inner}]" if base and inner else None
    return None


def _assigned(body):
    """Names assigned anywhere in a list of statements, in order."""
    names = []
    for s in body:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.append(n.id)
    return names


def graph_text(fn):
    """The IR text of a scripted function (see retorch.jit.script)."""
    return _Frontend(fn).graph_text()
