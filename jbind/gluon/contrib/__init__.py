"""`mx.gluon.contrib`: the contrib layers (`contrib.nn`)."""
from . import nn  # noqa: F401
