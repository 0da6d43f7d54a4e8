"""`mx.gluon.contrib`: the contrib layers (`contrib.nn`, `contrib.cnn`), recurrent cells
(`contrib.rnn`), `contrib.data` (IntervalSampler) and `contrib.estimator` (Estimator, its event
handlers and BatchProcessor)."""
from . import nn  # noqa: F401
from . import rnn  # noqa: F401
from . import cnn  # noqa: F401
from . import data  # noqa: F401,E402
from . import estimator  # noqa: F401,E402
