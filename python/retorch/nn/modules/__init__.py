"""The layers of retorch.nn, one module per family like torch.nn.modules."""
from .module import Module  # noqa: F401
from .container import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .activation import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .misc import *  # noqa: F401,F403
from .cpp import *  # noqa: F401,F403
from .extra import *  # noqa: F401,F403
from .volumetric import *  # noqa: F401,F403
