"""`mx.gluon`: Parameters, Blocks, HybridBlocks (hybridized onto jbind's compile cache),
SymbolBlock, the layers of `gluon.nn`, `gluon.contrib.nn` and `gluon.rnn`, `Trainer` and
`gluon.loss`, `gluon.data`, `gluon.model_zoo` and `gluon.contrib.estimator` (Estimator).
"""
from . import parameter, utils  # noqa: F401
from ._parameter_dict import ParameterDict
from .block import Block, HybridBlock, SymbolBlock
from .parameter import Constant, DeferredInitializationError, Parameter
from . import nn, rnn, contrib, loss  # noqa: F401,E402
from . import data, model_zoo  # noqa: F401,E402
from .trainer import Trainer  # noqa: E402

__all__ = ["Block", "Constant", "DeferredInitializationError", "HybridBlock", "Parameter", "ParameterDict",
           "SymbolBlock", "Trainer", "contrib", "data", "loss", "model_zoo", "nn", "parameter", "rnn", "utils"]
