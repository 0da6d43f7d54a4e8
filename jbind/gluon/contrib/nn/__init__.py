"""`mx.gluon.contrib.nn`: Concurrent, HybridConcurrent, Identity, SparseEmbedding, PixelShuffle1D/2D/3D."""
from .basic_layers import *  # noqa: F401,F403
