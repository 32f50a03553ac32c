"""The op model: parses ops.yaml schemas into Op records that the emitters turn into C++ and Python."""
import os
import re

# schema type -> (C++ parameter type, C++ value type used when saving it in a Node)
CPP_ARG = {
    'Tensor': ('const Tensor&', None),
    'Tensor?': ('const std::optional<Tensor>&', None),
    'Tensor[]': ('TensorList', None),
    'Tensor?[]': ('ArrayRef<std::optional<Tensor>>', None),
    'Scalar': ('const Scalar&', 'Scalar'),
    'Scalar?': ('const std::optional<Scalar>&', 'std::optional<Scalar>'),
    'int': ('int64_t', 'int64_t'),
    'int?': ('std::optional<int64_t>', 'std::optional<int64_t>'),
    'int[]': ('IntArrayRef', 'std::vector<int64_t>'),
    'int[]?': ('OptionalIntArrayRef', 'std::optional<std::vector<int64_t>>'),
    'float': ('double', 'double'),
    'float?': ('std::optional<double>', 'std::optional<double>'),
    'bool': ('bool', 'bool'),
    'bool?': ('std::optional<bool>', 'std::optional<bool>'),
    'str': ('std::string_view', 'std::string'),
    'str?': ('std::optional<std::string_view>', 'std::optional<std::string>'),
    'ScalarType': ('ScalarType', 'ScalarType'),
    'ScalarType?': ('std::optional<ScalarType>', 'std::optional<ScalarType>'),
    'Device?': ('std::optional<Device>', 'std::optional<Device>'),
    'Generator?': ('std::optional<Generator>', 'std::optional<Generator>'),
}

CPP_RET = {
    'Tensor': 'Tensor',
    'Tensor[]': 'std::vector<Tensor>',
    'bool': 'bool',
    'float': 'double',
    'int': 'int64_t',
    'Scalar': 'Scalar',
}


class Arg:
    def __init__(self, text, kwarg_only):
        text = text.strip()
        default = None
        if '=' in text:
            text, default = text.split('=', 1)
            default = default.strip()
        typ, name = text.rsplit(' ', 1)
        typ = typ.strip()
        self.mutable = '!' in typ
        typ = re.sub(r'\([a-z]!?\)', '', typ)  # Tensor(a!) -> Tensor
        typ = re.sub(r'int\[\d*\]', 'int[]', typ)  # int[2] -> int[]
        self.fixed_len = None
        m = re.match(r'int\[(\d+)\]', text.strip())
        if m:
            self.fixed_len = int(m.group(1))
        self.type = typ
        self.name = name.strip()
        self.default = default
        self.kwarg_only = kwarg_only
        if typ not in CPP_ARG:
            raise SystemExit(f'ops.yaml: unknown argument type {typ!r} in {text!r}')

    @property
    def cpp(self):
        return CPP_ARG[self.type][0]

    @property
    def saved_cpp(self):
        return CPP_ARG[self.type][1]

    @property
    def is_tensor(self):
        return self.type in ('Tensor', 'Tensor?')

    @property
    def is_tensor_like(self):
        return self.type.startswith('Tensor')

    def cpp_default(self):
        d = self.default
        if d is None:
            return None
        if d == 'None':
            return 'std::nullopt'
        if d in ('True', 'False'):
            return d.lower()
        if d.startswith('['):
            return '{' + d[1:-1] + '}'
        if d.startswith('"') or d.startswith("'"):
            return '"' + d[1:-1] + '"'
        if self.type.startswith('ScalarType'):
            return 'k' + d
        return d


class Ret:
    def __init__(self, text):
        text = text.strip()
        parts = text.split(' ')
        typ = re.sub(r'\([a-z]!?\)', '', parts[0])
        self.type = typ
        self.name = parts[1] if len(parts) > 1 else None
        if typ not in CPP_RET:
            raise SystemExit(f'ops.yaml: unknown return type {typ!r}')


def split_args(s):
    out, depth, cur = [], 0, ''
    for ch in s:
        if ch in '([':
            depth += 1
        elif ch in ')]':
            depth -= 1
        if ch == ',' and depth == 0:
            out.append(cur)
            cur = ''
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


class Op:
    """One dispatcher operator (a schema). A yaml entry expands to 1-3 of these."""

    def __init__(self, entry, name, overload, args, rets, kind):
        self.entry = entry
        self.name = name
        self.overload = overload
        self.args = args
        self.rets = rets
        self.kind = kind  # 'functional' | 'inplace' | 'out'

    @property
    def uid(self):
        return self.name + ('_' + self.overload if self.overload else '')

    @property
    def full_name(self):
        return self.name + ('.' + self.overload if self.overload else '')

    @property
    def ret_cpp(self):
        if len(self.rets) == 1:
            return CPP_RET[self.rets[0].type]
        return 'std::tuple<' + ', '.join(CPP_RET[r.type] for r in self.rets) + '>'

    def schema_string(self):
        def fmt_arg(a):
            t = a.type
            if a.mutable:
                t = t.replace('Tensor', 'Tensor(a!)', 1)
            s = f'{t} {a.name}'
            if a.default is not None:
                s += '=' + a.default
            return s
        pos = [fmt_arg(a) for a in self.args if not a.kwarg_only]
        kw = [fmt_arg(a) for a in self.args if a.kwarg_only]
        body = ', '.join(pos + (['*'] + kw if kw else []))
        rets = ', '.join((r.type + ('(a!)' if self.kind != 'functional' and r.type == 'Tensor' else '')
                          + (' ' + r.name if r.name else '')) for r in self.rets)
        if len(self.rets) > 1:
            rets = '(' + rets + ')'
        return f'{self.full_name}({body}) -> {rets}'

    @property
    def tensor_args(self):
        return [a for a in self.args if a.is_tensor_like]

    @property
    def has_options(self):
        names = [a.name for a in self.args]
        return 'dtype' in names and 'device' in names and self.entry.factory


class Entry:
    """One ops.yaml entry."""

    def __init__(self, d):
        self.raw = d
        func = d['func']
        m = re.match(r'([\w]+)(?:\.(\w+))?\((.*)\)\s*->\s*(.*)$', func)
        if not m:
            raise SystemExit(f'ops.yaml: cannot parse {func!r}')
        self.name, self.overload, argstr, retstr = m.groups()
        self.overload = self.overload or ''
        self.args = []
        kw = False
        for a in split_args(argstr):
            if a.strip() == '*':
                kw = True
                continue
            self.args.append(Arg(a, kw))
        retstr = retstr.strip()
        if retstr.startswith('('):
            retstr = retstr[1:-1]
        self.rets = [Ret(r) for r in split_args(retstr)]
        variants = d.get('variants', 'function')
        self.variants = [v.strip() for v in variants.split(',')]
        self.dispatch = d.get('dispatch', {})
        self.derivatives = d.get('derivatives') or {}
        self.factory = 'factory' in self.variants
        self.scalar_overload = d.get('scalar_overload')
        self.view = bool(d.get('view', False))
        self.test = d.get('test', {})
        self.python = d.get('python', True)
        # Tensor arguments a Python number may stand for, as PyTorch's bindings allow (its
        # Scalar overloads and numbers-as-tensors ops): alternatives, each a list of arguments
        # that may be numbers in one call. Every other Tensor argument takes tensors only.
        self.python_numbers = [list(alt) for alt in d.get('python_numbers', [])]
        names = {a.name for a in self.args if a.is_tensor}
        assert all(set(alt) <= names for alt in self.python_numbers), \
            f'{self.name}: python_numbers names arguments that are not Tensors'
        self.nondiff = d.get('nondifferentiable', False)
        # Per result, whether autograd tracks it (PyTorch's output_differentiability): False
        # leaves that result without history, like lu_unpack's permutation P.
        self.output_differentiability = d.get('output_differentiability') or [True] * len(self.rets)
        assert len(self.output_differentiability) == len(self.rets), \
            f'{self.name}: output_differentiability needs one entry per result'
        # Tensors of several devices may meet in one call (PyTorch's exceptions to its
        # same-device rule, like copy_); see Note [Device routing].
        self.mixed_devices = bool(d.get('mixed_devices', False))
        # A Composite op's in-place variant written on its own (void fn(self, args...), writing
        # self through in-place ops), instead of the functional result copied into self.
        self.inplace_composite = d.get('inplace_composite')
        # What torch.autocast does to the op's tensors on cpu and on cuda (Note [Autocast]):
        # one policy for both, or {cpu: ..., cuda: ...}.
        ac = d.get('autocast') or {}
        self.autocast = ac if isinstance(ac, dict) else {'cpu': ac, 'cuda': ac}
        for dev, pol in self.autocast.items():
            assert dev in ('cpu', 'cuda') and pol in AUTOCAST_POLICIES, \
                f'{self.name}: autocast {dev}: {pol} (devices cpu/cuda; policies {AUTOCAST_POLICIES})'
        assert 'fp32_set_opt_dtype' not in self.autocast.values() or \
            any(a.name == 'dtype' for a in self.args), \
            f'{self.name}: fp32_set_opt_dtype needs a dtype argument'
        assert not self.inplace_composite or ('inplace' in self.variants and
                                              'Composite' in self.dispatch), \
            f'{self.name}: inplace_composite needs the inplace variant and a Composite kernel'

    @property
    def uses_out_kernel(self):
        return 'inplace' in self.variants or 'out' in self.variants

    def ops(self):
        res = [Op(self, self.name, self.overload, self.args, self.rets, 'functional')]
        if 'inplace' in self.variants:
            args = [Arg.__new__(Arg) for _ in self.args]
            for n, a in zip(args, self.args):
                n.__dict__.update(a.__dict__)
            args[0].mutable = True
            res.append(Op(self, self.name + '_', self.overload, args, self.rets, 'inplace'))
        if 'out' in self.variants:
            out = Arg('Tensor(a!) out', True)
            ov = (self.overload + '_out') if self.overload else 'out'
            res.append(Op(self, self.name, ov, list(self.args) + [out], self.rets, 'out'))
        return res


# PyTorch's CastPolicy names, as ops.yaml's `autocast:` spells them.
AUTOCAST_POLICIES = ('lower_precision_fp', 'fp32', 'fp32_set_opt_dtype', 'promote', 'banned')


def yaml_files(path):
    """ops.yaml and its family files (ops_*.yaml beside it), core first, then by name.
    The declarations are one list split across files only to keep each file small."""
    import glob
    folder = os.path.dirname(os.path.abspath(path))
    return [path] + sorted(glob.glob(os.path.join(folder, 'ops_*.yaml')))


def load(path):
    import yaml
    data = []
    for f_path in yaml_files(path):
        with open(f_path) as f:
            data += yaml.safe_load(f) or []
    entries = [Entry(d) for d in data]
    seen = set()
    for e in entries:
        for op in e.ops():
            if op.full_name in seen:
                raise SystemExit(f'ops.yaml: duplicate operator {op.full_name}')
            seen.add(op.full_name)
    return entries


def camel(name):
    # As PyTorch's node names, str.title() per word: a letter after a digit is capitalized too
    # (log1p -> Log1P, max_pool2d -> MaxPool2D, special_i0e -> SpecialI0E).
    return ''.join(p.title() for p in name.strip('_').split('_'))
