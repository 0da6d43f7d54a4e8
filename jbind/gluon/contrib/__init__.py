"""`mx.gluon.contrib`: the contrib layers (`contrib.nn`) and `contrib.data` (IntervalSampler)."""
from . import nn  # noqa: F401
from . import data  # noqa: F401,E402
