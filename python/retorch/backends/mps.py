"""retorch.backends.mps: torch.backends.mps. retorch has no Metal backend (retorch.mps answers
for an absent device), so the build has no MPS and no MPS device is available."""


def is_built():
    """Whether this build has the MPS backend (retorch.has_mps)."""
    from .. import _api_gaps
    return _api_gaps.has_mps


def is_available():
    """Whether an MPS device can be used."""
    from .. import mps
    return mps.is_available()
