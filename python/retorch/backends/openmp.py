"""retorch.backends.openmp: torch.backends.openmp (retorch's CPU kernels require OpenMP)."""


def is_available():
    """Whether this build has OpenMP (retorch.has_openmp)."""
    from .. import _api_gaps
    return _api_gaps.has_openmp
