"""retorch.backends.mkl: torch.backends.mkl. retorch links OpenBLAS/LAPACK, not MKL, so
is_available() is False and MKL's verbose mode cannot be switched on."""

VERBOSE_OFF = 0
VERBOSE_ON = 1


def is_available():
    """Whether this build has MKL (retorch.has_mkl)."""
    from .. import _api_gaps
    return _api_gaps.has_mkl


class verbose:  # noqa: N801  (torch.backends.mkl.verbose)
    """MKL's verbose messages for the block: only VERBOSE_OFF without MKL, as torch's."""

    def __init__(self, enable):
        self.enable = enable

    def __enter__(self):
        if self.enable == VERBOSE_OFF:
            return None
        assert is_available(), ("Failed to set MKL into verbose mode. Please consider to disable "
                                "this verbose scope.")
        return self

    def __exit__(self, *exc):
        return False
