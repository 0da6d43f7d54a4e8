"""`mx.gluon.contrib`: the contrib layers (`contrib.nn`, `contrib.cnn`), recurrent cells
(`contrib.rnn`) and `contrib.data` (IntervalSampler)."""
from . import nn  # noqa: F401
from . import rnn  # noqa: F401
from . import cnn  # noqa: F401
from . import data  # noqa: F401,E402
