"""Automatic mixed precision (`mx.contrib.amp`): `from mxnet.contrib.amp import amp` and
`from mxnet.contrib import amp` both work, as in MXNet."""
from . import amp, lists  # noqa: F401
from .amp import *  # noqa: F401,F403
from .amp import __all__  # noqa: F401
from .loss_scaler import LossScaler  # noqa: F401
