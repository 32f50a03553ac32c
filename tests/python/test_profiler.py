"""retorch.profiler against torch.profiler: the same program yields the same ops with the same
counts; record_function nests (also as a decorator); the Chrome trace loads; errors."""
import json

import pytest
import torch

import retorch
from retorch.profiler import profile, record_function


def program(lib, a):
    for _ in range(3):
        a = (a @ a * 0.01 + a).relu()
    return a


def counts(names, keys):
    return {k: sum(1 for n in names if n == k) for k in keys}


def test_ops_and_counts_match_torch():
    keys = ["aten::matmul", "aten::mm", "aten::mul", "aten::add", "aten::relu"]
    ra, ta = retorch.randn(32, 32), torch.randn(32, 32)
    with profile(record_shapes=True) as p:
        with record_function("step"):
            program(retorch, ra)
    with torch.profiler.profile(record_shapes=True) as tp:
        with torch.profiler.record_function("step"):
            program(torch, ta)
    got = counts([e["name"] for e in p.events()], keys)
    want = counts([e.name for e in tp.events()], keys)
    assert got == want == {k: 3 for k in keys}
    avg = {r["key"]: r for r in p.key_averages()}
    assert avg["step"]["count"] == 1
    top = [e for e in p.events() if e["depth"] == 1]  # directly inside "step"
    assert {e["name"] for e in top} == {"aten::matmul", "aten::mul", "aten::add", "aten::relu"}
    assert avg["step"]["cpu_time_total"] >= sum(e["end_ns"] - e["start_ns"] for e in top) / 1e3
    shaped = {(r["key"], r["input_shapes"]) for r in p.key_averages(group_by_input_shape=True)}
    assert ("aten::mm", "[[32, 32], [32, 32]]") in shaped
    table = p.key_averages().table(sort_by="cpu_time_total", row_limit=3)
    assert "Self CPU time total:" in table and "# of Calls" in table
    rules = [i for i, ln in enumerate(table.splitlines()) if ln.startswith("---")]
    assert rules[2] - rules[1] - 1 == 3  # row_limit rows between the header and the end
    # Kernel launches are events too, inside their ops: mm's kernel under aten::mm.
    kernels = [e for e in p.events() if e["name"] == "cpu::mm"]
    assert len(kernels) == 3 and all(k["op"] == "aten::mm" for k in kernels)
    summary = p.kernel_summary()
    assert summary.splitlines()[1].split() == ["Time", "%", "Total", "Time", "Instances", "Avg",
                                               "Med", "Min", "Max", "StdDev", "Name"]
    assert "cpu::mm" in summary and "aten::mm" in p.kernel_summary(by_op=True)


def test_record_function_decorator_and_chrome_trace(tmp_path):
    @record_function("forward")
    def forward(x):
        return (x * 2).exp()

    with profile() as p:
        with record_function("outer"):
            forward(retorch.ones(4))
    ev = {e["name"]: e for e in p.events()}
    assert ev["outer"]["depth"] == 0 and ev["forward"]["depth"] == 1 and ev["aten::exp"]["depth"] == 2
    path = tmp_path / "trace.json"
    p.export_chrome_trace(path)
    doc = json.loads(path.read_text())
    names = [e["name"] for e in doc["traceEvents"]]
    assert {"outer", "forward", "aten::mul", "aten::exp"} <= set(names)
    for e in doc["traceEvents"]:
        assert e["ph"] == "X" and e["dur"] >= 0


def test_errors():
    with profile():
        with pytest.raises(RuntimeError, match="already active"):
            with profile():
                pass
    with pytest.raises(RuntimeError, match="not been started"):
        profile().key_averages()
    with profile() as p:
        retorch.ones(2) + 1
    with pytest.raises(RuntimeError, match="sort_by"):
        p.key_averages().table(sort_by="bogus")
    # Nothing is recorded after the block.
    n = len(p.events())
    retorch.ones(2) * 3
    assert len(p.events()) == n


def test_schedule_step_and_csv(tmp_path):
    ready = []
    a = retorch.randn(8, 8)
    sched = retorch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
    with profile(schedule=sched, on_trace_ready=lambda prof: ready.append(len(prof.events()))) as p:
        for step in range(6):
            for _ in range(step + 1):
                a = (a @ a).tanh()
            p.step()
    assert len(ready) == 1  # one active window
    names = [e["name"] for e in p.events()]
    assert names.count("aten::matmul") == 3 + 4  # steps 2 and 3
    assert "ProfilerStep#2" in names and "ProfilerStep#1" not in names
    csv_path = tmp_path / "table.csv"
    p.export_table_csv(csv_path)
    import csv
    rows = list(csv.reader(open(csv_path)))
    assert rows[0][0] == "Name" and rows[0][-1] == "# of Calls"
    assert {r[0]: int(r[-1]) for r in rows[1:]}["aten::matmul"] == 7


def test_profile_memory_and_summary():
    a = retorch.randn(128, 128)
    with profile(profile_memory=True) as p:
        b = a @ a
        del b
    mem = p.memory_events()
    assert any(e[1] >= 128 * 128 * 4 for e in mem) and any(e[1] <= -128 * 128 * 4 for e in mem)
    assert {e[4] for e in mem} == {"cpu"}  # whose allocator (a GPU's own memory: "cuda:0")
    assert "Self CPU Mem" in p.key_averages().table()
    summary = retorch.profiler.memory_summary()
    assert "Allocated memory" in summary and "Reserved memory" in summary


def helper_that_multiplies(a):
    return a * 3


def test_with_stack_records_the_callers_frames():
    a = retorch.ones(4)
    with profile(with_stack=True) as p:
        helper_that_multiplies(a)
    (mul,) = [e for e in p.events() if e["name"] == "aten::mul"]
    assert "helper_that_multiplies" in mul["stack"][0] and "test_profiler.py" in mul["stack"][0]
    assert any("test_with_stack_records_the_callers_frames" in f for f in mul["stack"])
    kernels = [e for e in p.events() if e["kind"] == "kernel"]
    assert kernels and all(not k["stack"] for k in kernels)  # only the user's calls carry one
    assert all(k["device_ns"] == -1 for k in kernels)  # cpu kernels: no device clock
    with profile() as q:
        helper_that_multiplies(a)
    assert all(not e["stack"] for e in q.events())
