"""khatri_rao (MXNet's src/operator/contrib/krprod.cc): the column-wise Kronecker product
of `num_args` matrices."""
from __future__ import annotations

import numpy as np

from ..base import ShapeError, fmt_shape
from ._base import Op, float_types, register


@register
class khatri_rao(Op):
    """Column-wise Khatri-Rao product of `num_args` matrices A_i of shapes (M_i, N): the
    (M_1 ... M_n, N) matrix whose k-th column is the Kronecker product of the A_i's k-th
    columns (A_1's row index varies slowest). Inputs arg0, arg1, ...; floats only (MXNet
    1.9.1 refuses integers in the forward, jbind at type inference). MXNet 1.9.1 has no
    gradient (binding with one is an error); jbind gives the product's."""
    mxnet_order = ()
    num_args: int
    variadic = "num_args"

    def __post_init__(self):
        if self.num_args < 1:
            raise ValueError(f"num_args must be at least 1, got {self.num_args}")

    def arguments(self):
        return tuple(f"arg{i}" for i in range(self.num_args))

    def infer_shape(self, ins, outs):
        """Rows: the product of the inputs' (all known); columns: any side's, all equal."""
        out, cols = outs[0], None
        for what, s in [(f"input arg{i}", s) for i, s in enumerate(ins)] + [("the output", out)]:
            if s is None:
                continue
            if len(s) != 2:
                raise ShapeError(f"{what} must be a matrix, got shape {fmt_shape(s)}")
            if s[1] and cols is not None and s[1] != cols[1]:
                raise ShapeError(f"every input and the output must have the same number of "
                                 f"columns: {cols[0]} has {cols[1]}, {what} has {s[1]} (shape {fmt_shape(s)})")
            if s[1] and cols is None:
                cols = (what, s[1])
        n = cols[1] if cols else 0
        rows = [s[0] if s is not None else 0 for s in ins]
        m = int(np.prod(rows)) if all(rows) else 0
        if m and out is not None and out[0] and out[0] != m:
            raise ShapeError(f"the output has {out[0]} rows, the inputs' product of rows is {m} "
                             f"({' * '.join(map(str, rows))})")
        m = m or (out[0] if out is not None else 0)
        new_out = (m, n) if (m or n or out is not None) else None
        return [(r, n) if s is not None or n else None for r, s in zip(rows, ins)], [new_out], []

    def infer_type(self, ins, outs):
        return float_types(self, ins, outs)

    def lower(self, ins, aux, is_train, key):
        out = ins[0]
        for x in ins[1:]:  # rows (i, j) -> i * M_j + j: the left factor's index varies slowest
            out = (out[:, None, :] * x[None, :, :]).reshape(-1, x.shape[1])
        return [out], aux
