"""retorch.amp: automatic mixed precision (torch.amp): autocast regions and gradient scaling."""
from .autocast_mode import (autocast, custom_fwd, custom_bwd, is_autocast_available,  # noqa: F401
                            get_autocast_dtype)
from .grad_scaler import GradScaler  # noqa: F401
