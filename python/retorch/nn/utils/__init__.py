"""retorch.nn.utils: gradient clipping, parameter vectors and packed sequences."""
from . import rnn  # noqa: F401
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grad_norm  # noqa: F401
from .clip_grad import parameters_to_vector, vector_to_parameters  # noqa: F401
