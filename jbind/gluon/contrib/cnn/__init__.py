"""`mx.gluon.contrib.cnn`: DeformableConvolution."""
from .conv_layers import *  # noqa: F401,F403
from .conv_layers import __all__  # noqa: F401
