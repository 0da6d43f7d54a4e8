"""`mx.contrib`: experimental parts of MXNet. `amp` (automatic mixed precision); `symbol` /
`sym` and `ndarray` / `nd` are the `_contrib_*` operators (`mx.sym.contrib`, `mx.nd.contrib`)."""
from ..ndarray import contrib as ndarray
from ..symbol import contrib as symbol
from . import amp  # noqa: F401

nd = ndarray
sym = symbol
