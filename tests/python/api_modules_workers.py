"""Top-level functions that test_api_modules.py hands to multiprocessing.spawn (children import
this small module, not the test file with torch)."""
import os
import sys


def write_rank(i, directory, scale):
    with open(os.path.join(directory, f"{i}.txt"), "w") as f:
        f.write(str(i * scale))


def fail_on_rank_one(i):
    if i == 1:
        raise ValueError("boom from rank 1")


def exit_three(i):
    sys.exit(3)
