"""`mx.sym`: Symbol, Variable, Group, load/load_json, and one constructor per operator."""
from .. import _namespaces, _random_api
from .. import ops as _ops  # noqa: F401  (registers operators)
from .json_io import load, load_json
from .ops import _constructor, constructors as _constructors
from .symbol import Group, Symbol, Variable, var

_functions = _constructors()
globals().update(_functions)
globals().update(_namespaces.install(  # mx.sym.contrib, .linalg, .random (MXNet's samplers), .image
    __name__, _functions, {"random": _random_api.wrappers(_functions, Symbol, imperative=False),
     "contrib": _random_api.contrib_wrappers(_functions, Symbol, imperative=False)},
    make=lambda op_name, short: _constructor(op_name, hint=short.lower())))
from .creation import arange, eye, full, linspace, ones, zeros  # noqa: E402  (MXNet's Python signatures)
from ._ufunc import histogram, hypot, maximum, minimum, pow, power  # noqa: E402,A004
from . import sparse  # noqa: E402  (MXNet's sparse namespace: every operator, dense storage)
from . import control_flow as _control_flow  # noqa: E402
for _name in ("foreach", "while_loop", "cond"):  # MXNet's Python functions of mx.sym.contrib
    setattr(contrib, _name, getattr(_control_flow, _name))  # noqa: F821 (installed above)

__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json"]


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """MXNet's `split_v2`: split `ary` along `axis` at a tuple's points, or into an int's
    number of equal parts (each squeezed if `squeeze_axis`)."""
    return ary.split_v2(indices_or_sections, axis, squeeze_axis)
