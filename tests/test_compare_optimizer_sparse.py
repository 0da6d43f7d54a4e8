"""`mx.test_utils.compare_optimizer` with sparse weights and gradients (MXNet's arguments)."""
import numpy as np
import pytest

import jbind as mx
from jbind.test_utils import compare_optimizer


@pytest.mark.parametrize("w_stype,g_stype", [("csr", "csr"), ("row_sparse", "row_sparse"), ("default", "row_sparse")])
def test_sgd_against_itself_on_sparse_storage(w_stype, g_stype):
    # lazy_update off: the first optimizer gets the dense copy of the gradient, and a lazy
    # update of the sparse one leaves the rows it lacks (momentum, weight decay) alone
    kw = dict(momentum=0.9, wd=0.01, lazy_update=False)
    compare_optimizer(mx.optimizer.SGD(**kw), mx.optimizer.SGD(**kw), (4, 3), np.float32,
                      w_stype=w_stype, g_stype=g_stype)


def test_a_different_rule_is_caught_on_sparse_storage():
    with pytest.raises(AssertionError):
        compare_optimizer(mx.optimizer.SGD(learning_rate=0.1), mx.optimizer.SGD(learning_rate=0.2), (4, 3),
                          np.float32, w_stype="row_sparse", g_stype="default")


def test_unknown_storage_type_is_an_error():
    with pytest.raises(mx.MXNetError, match="storage type"):
        compare_optimizer(mx.optimizer.SGD(), mx.optimizer.SGD(), (4, 3), np.float32, w_stype="dense")
