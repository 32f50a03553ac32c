"""retorch.backends.opt_einsum: torch.backends.opt_einsum as torch has it without the opt_einsum
package. retorch's einsum never asks opt_einsum for a contraction path (it contracts left to
right), so opt_einsum is not available to it, installed or not: `enabled` is False and `strategy`
None, plain module attributes as in torch, and set_flags/flags refuse to turn it on."""
import contextlib

__all__ = ["is_available", "get_opt_einsum", "set_flags", "flags", "enabled", "strategy"]

enabled = False
strategy = None


def is_available():
    """Whether einsum can compute optimal contraction paths with opt_einsum: never in retorch."""
    return False


def get_opt_einsum():
    """The opt_einsum package einsum uses: None, see is_available()."""
    return None


def _set_enabled(value):
    if value:
        raise ValueError(f"opt_einsum is not available, so setting `enabled` to {value} will not "
                         "reap the benefits of calculating an optimal path for einsum. "
                         "retorch.einsum will fall back to contracting from left to right. To "
                         "enable this optimal path calculation, please install opt-einsum.")
    globals()["enabled"] = value


def _set_strategy(value):
    raise ValueError(f"opt_einsum is not available, so setting `strategy` to {value} will not be "
                     "meaningful. retorch.einsum will bypass path calculation and simply contract "
                     "from left to right. Please install opt_einsum or unset `strategy`.")


def set_flags(_enabled=None, _strategy=None):
    """Sets the flags given (None leaves one as it is); returns the previous (enabled, None)."""
    orig = (enabled, None)
    if _enabled is not None:
        _set_enabled(_enabled)
    if _strategy is not None:
        _set_strategy(_strategy)
    return orig


@contextlib.contextmanager
def flags(enabled=None, strategy=None):
    """set_flags for the block; the previous values come back after it."""
    orig = set_flags(enabled, strategy)
    try:
        yield
    finally:
        # Restored as they were, even a value set by plain assignment that set_flags refuses.
        globals()["enabled"] = orig[0]
