"""`mx.sym.sparse`: MXNet's sparse operator namespace for symbols.

MXNet lists every operator here too (`mx.sym.sparse.dot`, `.elemwise_add`, `.sin`, ...),
and the `_sparse_*` operators without their prefix (`retain`, `adagrad_update`). jbind's
symbols compute with dense values (a `stype` on a Variable is kept as an attribute), so
each function is the `mx.sym` constructor of the same operator: results are those of
MXNet's storage fallback, in dense storage.
"""
from __future__ import annotations

from . import _functions as _ops
from .ops import _constructor

_PREFIX = "_sparse_"

globals().update({name: fn for name, fn in _ops.items() if not name.startswith("_")})
globals().update({name[len(_PREFIX):]: _constructor(name, hint=name[len(_PREFIX):].lower())
                  for name in _ops if name.startswith(_PREFIX)})

