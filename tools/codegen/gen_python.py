"""Emits the pybind11 bindings: one module function and one Tensor method per op variant."""

CHUNKS = 4


# The ops whose results PyTorch returns as named tuples (torch.return_types), where this
# project's ops.yaml has them: their results come back as retorch.return_types.<name>.
RETURN_TYPES = {
    'max', 'min', 'sort', 'topk', 'kthvalue', 'cummax', 'cummin', 'mode', 'median', 'nanmedian',
    'aminmax', 'frexp', 'histogram', 'triangular_solve', 'slogdet', 'linalg_slogdet', 'qr',
    'linalg_qr', 'svd', 'linalg_svd', '_linalg_svd', 'linalg_eigh', '_linalg_eigh', 'linalg_eig',
    'linalg_lstsq', 'lu_unpack', 'geqrf', 'linalg_inv_ex', 'linalg_cholesky_ex',
    'linalg_lu_factor', 'linalg_lu_factor_ex', 'linalg_lu', 'linalg_solve_ex',
}


def named_returns(op):
    """The field names of op's results when it returns a torch.return_types tuple, else None."""
    names = [r.name for r in op.rets]
    if op.kind == 'out' or len(names) < 2 or not all(names) or op.name not in RETURN_TYPES:
        return None
    return names


def py_default(a):
    d = a.default
    if d is None:
        return None
    if d == 'None':
        return 'py::none()'
    if d in ('True', 'False'):
        return d.lower()
    if d.startswith('['):
        return 'std::vector<int64_t>{' + d[1:-1] + '}'
    if d.startswith('"') or d.startswith("'"):
        return '"' + d[1:-1] + '"'
    if a.type.startswith('ScalarType'):
        return f'ScalarType::{d}'
    if a.type.startswith('Scalar'):
        return f'py::int_({d})' if d.lstrip('-').isdigit() else f'py::float_({d})'
    return d


# Note [Python numbers for Tensor arguments]
# PyTorch's bindings take a Python number for a Tensor argument only where the op has a Scalar
# overload there (x.eq(2), torch.where(c, x, 0.5), torch.pow(2, x)) or is one of the few ops
# that take numbers as tensors (add, sub, mul, div ...); torch.atan2(x, 2) and torch.maximum(x, 1)
# raise TypeError. An entry's python_numbers lists those arguments: they keep the Tensor caster,
# which makes a number a wrapped 0-dim tensor; every other Tensor argument takes a StrictTensor
# (python/src/bindings.h), which refuses numbers. Where the arguments may be numbers only one at a
# time (torch.pow(2, 3) has no overload), the binding checks that no more were given.
def number_args(e):
    return set().union(*map(set, e.python_numbers)) if e.python_numbers else set()


def py_type(a, e=None):
    # Python-facing C++ types: the same as the C++ API, with owning lists; Tensor arguments that
    # refuse numbers are StrictTensors (Note [Python numbers for Tensor arguments]).
    if e is not None and a.is_tensor and a.name not in number_args(e):
        return 'const StrictTensor&' if a.type == 'Tensor' else \
            'const std::optional<StrictTensor>&'
    return a.cpp


def numbers_guard(op):
    """A statement refusing a call with more numbers than any alternative of python_numbers
    allows together, or '' where every combination is allowed."""
    e = op.entry
    given = number_args(e)
    if not given or sorted(given) in [sorted(alt) for alt in e.python_numbers]:
        return ''
    assert all(a.type == 'Tensor' for a in op.args if a.name in given), \
        f'{e.name}: python_numbers alternatives of optional tensors are not supported'
    def none_of(names):
        return '(' + ' && '.join(f'!{n}.impl()->is_wrapped_number()' for n in sorted(names)) + ')'
    ok = ' || '.join(none_of(given - set(alt)) for alt in e.python_numbers)
    return f'if (!({ok})) numbers_error("{op.name}"); '


def gen_binding(op, method, out_arg=False):
    """The def of op's module function (or Tensor method). out_arg adds PyTorch's out= to a
    functional op without an out variant: the result is written into out (Note [out= without
    an out variant])."""
    e = op.entry
    args = list(op.args)
    if method:  # called on the argument named self (where(condition, self, other)), else the first
        self_arg = next((a for a in args if a.name == 'self'), args[0])
        args = [a for a in args if a is not self_arg]
    params, pyargs = [], []
    kw_started = False
    for a in args:
        if op.has_options and a.name in ('dtype', 'device'):
            continue
        params.append(f'{py_type(a, e)} {a.name}')
        if a.kwarg_only and not kw_started:
            pyargs.append('py::kw_only()')
            kw_started = True
        name = 'input' if (a.name == 'self' and not method) else a.name
        d = py_default(a)
        pyargs.append(f'py::arg("{name}")' + (f' = {d}' if d else ''))
    if op.has_options:
        params += ['std::optional<ScalarType> dtype', 'std::optional<Device> device',
                   'bool requires_grad']
        if not kw_started:
            pyargs.append('py::kw_only()')
            kw_started = True
        pyargs += ['py::arg("dtype") = py::none()', 'py::arg("device") = py::none()',
                   'py::arg("requires_grad") = false']
    if out_arg:
        params.append(('const StrictTensor&' if len(op.rets) == 1 else 'const py::sequence&') +
                      ' out')
        if not kw_started:
            pyargs.append('py::kw_only()')
        pyargs.append('py::arg("out")')
    fn_args = []
    for a in op.args:
        if op.has_options and a.name in ('dtype', 'device'):
            continue
        fn_args.append(a.name)
    if op.has_options:
        # (a factory writing into out makes out's dtype when given none, as PyTorch's)
        dt = '(dtype ? dtype : std::optional<ScalarType>(out.dtype()))' if out_arg else 'dtype'
        fn_args.append(f'TensorOptions().dtype({dt}).device(device).requires_grad(requires_grad)')
    if op.kind == 'out':
        fn_args = ['out'] + [x for x in fn_args if x != 'out']
    fname = op.name + '_out' if op.kind == 'out' else op.name
    if method:
        params = [f'const Tensor& {self_arg.name}'] + params
    call = f'retorch::{fname}({", ".join(fn_args)})'
    guard = numbers_guard(op)
    fields = named_returns(op)
    if out_arg:
        write = (f'py::cast(write_out_arg({call}, out, "{op.name}"))' if len(op.rets) == 1
                 else f'write_out_args({call}, out, "{op.name}")')
        named = ''
        if fields:  # the outs come back as the op's named tuple, as torch's
            names = ', '.join(f'"{f}"' for f in fields)
            named = (f'static py::handle type = return_type("{op.name}", {{{names}}})'
                     f'.release(); ')
            write = f'type(*{write})'
        lam = f'[]({", ".join(params)}) -> py::object {{ {guard}{named}return {write}; }}'
    elif fields:
        names = ', '.join(f'"{f}"' for f in fields)
        call = (f'named_result(type, {call})')
        lam = (f'[]({", ".join(params)}) -> py::object {{ {guard}static py::handle type = '
               f'return_type("{op.name}", {{{names}}}).release(); return {call}; }}')
    else:
        lam = f'[]({", ".join(params)}) {{ {guard}return {call}; }}'
    pyname = op.name
    target = 'cls' if method else 'm'
    line = f'  {target}.def("{pyname}", {lam}'
    if pyargs:
        line += ', ' + ', '.join(pyargs)
    line += ');'
    lines = [line]
    # Size arguments may also be given as varargs: zeros(2, 3), x.view(2, 3).
    rest = [a for a in args if not (op.has_options and a.name in ('dtype', 'device'))]
    vararg_names = ('size', 'shape', 'dims', 'repeats')
    if rest and rest[0].type == 'int[]' and rest[0].name in vararg_names and \
            op.kind == 'functional':
        pos_rest = [a for a in rest[1:] if not a.kwarg_only]
        if not any(a.default is None for a in pos_rest):
            kw = [a for a in rest[1:]]
            vparams = (['const Tensor& self'] if method else []) + ['py::args sizes'] + \
                [f'{py_type(a, e)} {a.name}' for a in kw]
            vpy = [f'py::arg("{a.name}")' + (f' = {py_default(a)}' if py_default(a) else '')
                   for a in kw]
            if op.has_options:
                # device as an object: pybind11 applies no implicit str -> device conversion
                # to keyword arguments after *args, so device="cuda" is converted here.
                vparams += ['std::optional<ScalarType> dtype', 'py::object device',
                            'bool requires_grad']
                vpy += ['py::arg("dtype") = py::none()', 'py::arg("device") = py::none()',
                        'py::arg("requires_grad") = false']
            vcall = [('IntArrayRef(ints)' if a.name == rest[0].name else a.name) for a in
                     [x for x in op.args if not (op.has_options and x.name in ('dtype', 'device'))]]
            if op.has_options:
                vdt = '(dtype ? dtype : std::optional<ScalarType>(out.dtype()))' if out_arg \
                    else 'dtype'
                vcall.append(f'TensorOptions().dtype({vdt}).device(optional_device(device))'
                             '.requires_grad(requires_grad)')
            vresult = f'retorch::{fname}({", ".join(vcall)})'
            if out_arg:
                vparams.append('const StrictTensor& out')
                vpy.append('py::arg("out")')
                vresult = f'write_out_arg({vresult}, out, "{op.name}")'
            body = f'auto ints = pyargs_to_ints(sizes); return {vresult};'
            vl = f'  {target}.def("{pyname}", []({", ".join(vparams)}) {{ {body} }}'
            if vpy:
                vl += ', ' + ', '.join(vpy)
            vl += ');'
            lines.append(vl)
    return lines


def overload_order(entries):
    """Entries with Tensor parameters bind before same-named ones without: pybind11 tries
    overloads in order and its int caster accepts any object with __index__, so a 0-dim
    integer tensor would otherwise pick max(input, dim) over max(input, other)."""
    groups = {}
    for i, e in enumerate(entries):
        groups.setdefault(e.name, []).append(i)
    ordered = list(entries)
    for idx in groups.values():
        group = sorted((entries[i] for i in idx),
                       key=lambda e: -sum(a.type.startswith('Tensor') for a in e.args))
        for i, e in zip(idx, group):
            ordered[i] = e
    return ordered


# Note [out= without an out variant]
# PyTorch gives (nearly) every function an out= argument; here only entries whose variants list
# `out` have out kernels. Every other function returning tensors gets a second binding taking
# out= after its own: the functional result is written into out as PyTorch's out= variants
# write (write_out_arg in python/src/out_args.cpp). It binds after the plain one, so calls
# without out= never reach it.
def takes_out_arg(e, op):
    return ('out' not in e.variants and op.kind == 'functional' and
            ('function' in e.variants or 'factory' in e.variants) and
            all(r.type == 'Tensor' for r in op.rets))


def generate(entries, header):
    blocks = []
    ordered = overload_order(entries)
    last_of_name = {e.name: i for i, e in enumerate(ordered)}
    for i, e in enumerate(ordered):
        if not e.python:
            continue
        blk = []
        for op in e.ops():
            if 'function' in e.variants or 'factory' in e.variants or op.kind != 'functional':
                if not (op.kind == 'inplace' and 'method' in e.variants and
                        'function' not in e.variants):
                    blk += gen_binding(op, False)
            if 'method' in e.variants and op.kind != 'out':
                blk += gen_binding(op, True)
        blocks.append(blk)
        if last_of_name[e.name] == i:  # after every plain overload of the name
            for same in (x for x in ordered if x.name == e.name and x.python):
                for op in same.ops():
                    if takes_out_arg(same, op):
                        blk += gen_binding(op, False, out_arg=True)
    files = {}
    per = (len(blocks) + CHUNKS - 1) // CHUNKS
    for c in range(CHUNKS):
        part = blocks[c * per:(c + 1) * per]
        text = header + '// pybind11 bindings for a slice of ops.yaml.\n'
        text += '#include "python/src/bindings.h"\n\nnamespace retorch::python {\n\n'
        text += f'void bind_generated_{c}(py::module_& m, py::class_<Tensor>& cls) {{\n'
        text += '\n'.join(line for b in part for line in b)
        text += '\n}\n\n}  // namespace retorch::python\n'
        files[f'python_ops_{c}.cpp'] = text
    decl = header + '// Entry points of the generated bindings.\n#pragma once\n'
    decl += '#include "python/src/bindings.h"\n\nnamespace retorch::python {\n'
    decl += ''.join(f'void bind_generated_{c}(py::module_& m, py::class_<Tensor>& cls);\n'
                    for c in range(CHUNKS))
    decl += f'constexpr int kNumBindingChunks = {CHUNKS};\n'
    decl += 'inline void bind_generated(py::module_& m, py::class_<Tensor>& cls) {\n'
    decl += ''.join(f'  bind_generated_{c}(m, cls);\n' for c in range(CHUNKS))
    decl += '}\n}  // namespace retorch::python\n'
    files['python_ops.h'] = decl
    return files
