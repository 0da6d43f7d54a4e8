"""`mx.nd`: NDArray handles over jax arrays, creation functions and imperative operators."""
from .. import _namespaces
from .ndarray import NDArray, arange, array, concat, empty, full, ones, waitall, zeros
from .imperative import imperative_functions as _imperative_functions
from .serialize import load, load_frombuffer, save

globals().update({k: v for k, v in _imperative_functions().items() if k not in globals()})
globals().update(_namespaces.install(__name__, _imperative_functions()))  # mx.nd.contrib, .linalg, .random, .image

__all__ = ["NDArray", "arange", "array", "concat", "empty", "full", "load", "load_frombuffer", "ones", "save",
           "waitall", "zeros"]
