"""retorch.backends.cuda: settings of the CUDA backend (as torch.backends.cuda)."""
from .. import _C


class _MatmulSettings:
    """torch.backends.cuda.matmul: `allow_tf32` lets float32 matrix products on CUDA round
    their inputs to TF32 (cuBLAS's fast mode); False by default, as in PyTorch since 1.12."""

    @property
    def allow_tf32(self):
        return _C._cuda_matmul_allow_tf32()

    @allow_tf32.setter
    def allow_tf32(self, value):
        _C._set_cuda_matmul_allow_tf32(bool(value))


matmul = _MatmulSettings()



def is_built():
    """Whether this build of retorch has the CUDA backend (a GPU may still be absent)."""
    return _C._cuda_is_built()
