"""retorch.nn.utils: gradient clipping, parameter vectors, packed sequences, weight and spectral
norms, parametrizations, skip_init, conv weight memory formats and stateless.functional_call."""
from . import rnn  # noqa: F401
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grad_norm  # noqa: F401
from .clip_grad import parameters_to_vector, vector_to_parameters  # noqa: F401
from . import fusion  # noqa: F401
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights  # noqa: F401
from .weight_norm import weight_norm, remove_weight_norm  # noqa: F401
from . import clip_grad as convert_parameters  # noqa: F401  (torch's module name for the vectors)
from . import parametrize, parametrizations  # noqa: F401
from .spectral_norm import spectral_norm, remove_spectral_norm  # noqa: F401
from . import prune  # noqa: F401
from . import init, memory_format  # noqa: F401
from .init import skip_init  # noqa: F401
from .memory_format import convert_conv2d_weight_memory_format  # noqa: F401
from . import stateless  # noqa: F401  (stateless.functional_call)
