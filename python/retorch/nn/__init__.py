"""retorch.nn: torch.nn's modules, parameters, functional forms, init and utils."""
from .parameter import Parameter, UninitializedParameter, UninitializedBuffer  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from .parallel import DataParallel  # noqa: F401
from . import functional  # noqa: F401
from . import grad  # noqa: F401
from . import init  # noqa: F401
from . import parallel  # noqa: F401
from . import utils  # noqa: F401
