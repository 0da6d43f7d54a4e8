"""The graph forms of MXNet's storage ops: `cast_storage` (the identity on dense graphs) and
`_square_sum` (sum of squares, reducing as `sum` does); the NDArray forms are in test_sparse.py."""
import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op

V = mx.sym.Variable
S = mx.sym

CASES = [
    Case("cast_storage", lambda: (lambda x: S.Group([S.cast_storage(x, stype="csr"),
                                                     S.cast_storage(x, stype="row_sparse") * 2]))(V("x")),
         lambda x: [x, 2 * x], {"x": (3, 4)}),
    Case("square_sum", lambda: (lambda x: S.Group([S._square_sum(x, axis=1, keepdims=True), S._square_sum(x),
                                                   S._square_sum(x, axis=(0,), exclude=True)]))(V("x")),
         lambda x: [(x * x).sum(1, keepdims=True), np.atleast_1d((x * x).sum()), (x * x).sum((1, 2))],
         {"x": (2, 3, 2)}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_storage_op(case):
    check_op(case)


def test_cast_storage_refuses_an_unknown_stype():
    with pytest.raises(mx.base.MXNetError, match="stype"):
        S.cast_storage(V("x"), stype="coo")
