"""Runs torch.nn modules and their retorch C++ twins (through build/tests/oracle/nn_oracle) on
the same state_dict, inputs and grad_outputs, and compares outputs, gradients and buffers."""
import json
import os
import struct
import subprocess
import tempfile

import numpy as np
import pytest
import torch

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORACLE = os.environ.get("RETORCH_NN_ORACLE",
                        os.path.join(_ROOT, "build", "tests", "oracle", "nn_oracle"))

_DTYPES = {torch.float32: ("F32", np.float32), torch.float64: ("F64", np.float64),
           torch.int64: ("I64", np.int64), torch.int32: ("I32", np.int32),
           torch.bool: ("BOOL", np.bool_)}
_NP = {name: npt for name, npt in _DTYPES.values()}

# Keys of the JSON options that are not torch constructor keywords.
ORACLE_KEYS = {"enforce_sorted", "need_weights", "average_attn_weights", "norm"}


def require_oracle():
    if not os.access(ORACLE, os.X_OK):
        pytest.skip(f"nn_oracle executable not built at {ORACLE} (build the tests target)")


def write_safetensors(path, tensors):
    """A minimal safetensors writer (header JSON + raw little-endian data)."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        code, npt = _DTYPES[t.dtype]
        data = t.numpy().astype(npt).tobytes()
        header[name] = {"dtype": code, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        arr = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=_NP[info["dtype"]])
        out[name] = torch.from_numpy(arr.reshape(info["shape"]).copy())
    return out


def run_cpp(spec, tensors, capture=False):
    """Runs nn_oracle on spec and tensors; returns its output tensors (and stdout)."""
    require_oracle()
    with tempfile.TemporaryDirectory() as d:
        spec_path, in_path, out_path = (os.path.join(d, n) for n in
                                        ("spec.json", "in.safetensors", "out.safetensors"))
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        write_safetensors(in_path, tensors)
        done = subprocess.run([ORACLE, spec_path, in_path, out_path], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, f"nn_oracle failed:\n{done.stderr}"
        out = read_safetensors(out_path)
    return (out, done.stdout) if capture else out


def assert_close(name, actual, expected, dtype):
    rtol, atol = (1e-4, 1e-5) if dtype == torch.float32 else (1e-7, 1e-9)
    assert actual.shape == expected.shape, f"{name}: shape {tuple(actual.shape)} vs " \
                                           f"{tuple(expected.shape)}"
    if not expected.is_floating_point():
        assert torch.equal(actual.to(expected.dtype), expected), f"{name}: {actual} vs {expected}"
        return
    torch.testing.assert_close(actual.to(expected.dtype), expected, rtol=rtol, atol=atol,
                               msg=lambda m: f"{name}: {m}")


def compare(module, name, options, inputs, forward, dtype=torch.float32, train=False,
            option_tensors=None, grad_inputs=None, seed=0):
    """Runs `forward(module, inputs)` in torch and nn_oracle's module `name` in C++ from the same
    state, then compares outputs, input and parameter gradients and the state after forward."""
    module = module.to(dtype).train(train)
    inputs = {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in inputs.items()}
    if grad_inputs is None:
        grad_inputs = [k for k, v in inputs.items()
                       if v.is_floating_point() and "mask" not in k]
    state = {k: v.clone() for k, v in module.state_dict().items()}
    t_in = {k: (v.clone().requires_grad_() if k in grad_inputs else v.clone())
            for k, v in inputs.items()}
    outs = forward(module, t_in)
    gen = torch.Generator().manual_seed(seed + 1)
    grad_outputs, roots, grads = {}, [], []
    for i, o in enumerate(outs):
        if o is not None and o.requires_grad:
            g = torch.randn(o.shape, generator=gen, dtype=torch.float64).to(o.dtype)
            grad_outputs[f"grad_output.{i}"] = g
            roots.append(o)
            grads.append(g)
    if roots:
        torch.autograd.backward(roots, grads)
    tensors = {f"state.{k}": v for k, v in state.items()}
    tensors.update({f"input.{k}": v for k, v in inputs.items()})
    tensors.update({f"option.{k}": v for k, v in (option_tensors or {}).items()})
    tensors.update(grad_outputs)
    spec = {"module": name, "options": options, "train": train,
            "dtype": "float64" if dtype == torch.float64 else "float32",
            "grad_inputs": list(grad_inputs)}
    got = run_cpp(spec, tensors)
    for i, o in enumerate(outs):
        if o is None:
            continue
        assert f"output.{i}" in got, f"output {i} missing"
        assert_close(f"output.{i}", got[f"output.{i}"], o.detach(), dtype)
    if roots:
        for k in grad_inputs:
            if t_in[k].grad is not None:
                assert_close(f"grad of input {k}", got[f"grad.input.{k}"], t_in[k].grad, dtype)
        for k, p in module.named_parameters():
            if p.grad is not None:
                assert f"grad.param.{k}" in got, f"no gradient for parameter {k}"
                assert_close(f"grad of {k}", got[f"grad.param.{k}"], p.grad, dtype)
    for k, v in module.state_dict().items():
        assert_close(f"state {k} after forward", got[f"state_after.{k}"], v, dtype)
    return got
