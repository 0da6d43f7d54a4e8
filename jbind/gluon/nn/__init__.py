"""`mx.gluon.nn`: neural network layers, and Block / HybridBlock / SymbolBlock."""
from ..block import Block, HybridBlock, SymbolBlock  # noqa: F401
from .activations import *  # noqa: F401,F403
from .basic_layers import *  # noqa: F401,F403
from .conv_layers import *  # noqa: F401,F403
from ..contrib.nn import Identity  # noqa: F401  (MXNet 1.9.1 has it in contrib.nn only; jbind in both)
