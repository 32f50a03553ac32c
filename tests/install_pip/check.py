"""Imports the retorch that pip installed into SITE (argv[1]), and every module of the checkout's
(argv[2]) python/retorch/ from there: run by run.sh with only SITE on PYTHONPATH."""
import importlib
import os
import sys

site, repo = (os.path.realpath(p) for p in sys.argv[1:3])
src = os.path.join(repo, "python", "retorch")


def inside(path, root):
    return os.path.realpath(path).startswith(root + os.sep)


assert not any(inside(p or ".", repo) for p in sys.path), sys.path

import retorch  # noqa: E402

assert inside(retorch.__file__, site), retorch.__file__
assert inside(retorch._C.__file__, site), retorch._C.__file__
y = retorch.ones(2) + 1
assert y.tolist() == [2.0, 2.0], y

# libretorch.so is the wheel's own, found next to _C through RPATH $ORIGIN.
with open("/proc/self/maps") as f:
    libs = {line.split()[-1] for line in f if "libretorch" in line}
assert libs == {os.path.join(site, "retorch", "libretorch.so")}, libs

# Every module of python/retorch/, each imported from the wheel.
names = []
for d, dirs, files in os.walk(src):
    dirs[:] = [x for x in dirs if x != "__pycache__"]
    rel = os.path.relpath(d, os.path.dirname(src)).split(os.sep)
    names += [".".join(rel if f == "__init__.py" else rel + [f[:-3]])
              for f in files if f.endswith(".py")]
for name in sorted(names):
    mod = importlib.import_module(name)
    assert inside(mod.__file__, site), (name, mod.__file__)
print(f"test-install: {len(names)} modules imported from the wheel: {', '.join(sorted(names))}")
print("test-install: 1 passed, 0 failed")
