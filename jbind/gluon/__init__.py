"""`mx.gluon`: Parameters, Blocks, HybridBlocks (hybridized onto jbind's compile cache),
SymbolBlock, and the layers of `gluon.nn`, `gluon.contrib.nn` and `gluon.rnn`.

Not here yet: training (`Trainer`, which needs `mx.autograd`), `gluon.loss`,
`gluon.data` and `gluon.model_zoo`.
"""
from . import parameter, utils  # noqa: F401
from ._parameter_dict import ParameterDict
from .block import Block, HybridBlock, SymbolBlock
from .parameter import Constant, DeferredInitializationError, Parameter
from . import nn, rnn, contrib  # noqa: F401,E402

__all__ = ["Block", "Constant", "DeferredInitializationError", "HybridBlock", "Parameter", "ParameterDict",
           "SymbolBlock", "contrib", "nn", "parameter", "rnn", "utils"]
