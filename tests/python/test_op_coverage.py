"""Every ops.yaml entry is tested: by the generated sweep or by a named hand-written oracle test."""
import glob
import importlib
import os
import subprocess
import sys

import test_ops_sweep
from oracle import DTYPE_SETS, load_ops

# Every tests/python/test_ops_*.py module with a CUSTOM table ({test name: [op names]}).
CUSTOM_MODULES = tuple(
    m for m in (importlib.import_module(os.path.basename(p)[:-3])
                for p in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "test_ops_*.py"))))
    if hasattr(m, "CUSTOM"))
HAND_KINDS = ("custom", "factory", "like", "random")


def coverage():
    """ops.yaml name -> the tests that exercise it."""
    cov = {}
    for e in test_ops_sweep.SWEPT:
        cov.setdefault(e["name"], []).append("test_ops_sweep")
    for mod in CUSTOM_MODULES:
        for test, ops in mod.CUSTOM.items():
            assert callable(getattr(mod, test, None)), f"{mod.__name__}.{test} does not exist"
            for op in ops:
                cov.setdefault(op, []).append(f"{mod.__name__}::{test}")
    return cov


def test_every_op_has_an_oracle_test():
    cov = coverage()
    missing = [e["name"] for e in load_ops() if e["name"] not in cov]
    assert not missing, f"ops.yaml entries without a PyTorch oracle test: {missing}"


def test_custom_tables_name_real_ops():
    names = {e["name"] for e in load_ops()}
    stale = sorted(op for op in coverage() if op not in names)
    assert not stale, f"CUSTOM tables name ops that ops.yaml lacks: {stale}"


def test_hand_written_kinds_have_a_named_test():
    named = {op for mod in CUSTOM_MODULES for ops in mod.CUSTOM.values() for op in ops}
    for e in load_ops():
        kind = e["test"].get("kind")
        assert kind in test_ops_sweep.SWEEP_KINDS + HAND_KINDS, f"{e['name']}: unknown kind {kind}"
        if kind in HAND_KINDS:
            assert e["name"] in named, f"{e['name']} (kind {kind}) needs a named custom test"
        assert e["test"].get("dtypes", "all") in DTYPE_SETS, f"{e['name']}: unknown dtypes hint"


def test_ops_doc_is_current():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    gen = os.path.join(root, "tools", "codegen", "gen_docs.py")
    done = subprocess.run([sys.executable, gen, "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
