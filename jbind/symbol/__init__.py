"""`mx.sym`: Symbol, Variable, Group, load/load_json, and one constructor per operator."""
from .. import _namespaces
from .. import ops as _ops  # noqa: F401  (registers operators)
from .json_io import load, load_json
from .ops import constructors as _constructors
from .symbol import Group, Symbol, Variable, var

globals().update(_constructors())
globals().update(_namespaces.install(__name__, _constructors()))  # mx.sym.contrib, .linalg, .random, .image
from .creation import arange, full, ones, zeros  # noqa: E402  (MXNet's Python signatures)

__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json"]
