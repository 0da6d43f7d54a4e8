"""Every registered operator has a forward-and-gradient sample in some CASES list."""
import test_ops_conv
import test_ops_math
import test_ops_nn
import test_ops_shape
import test_rnn_fused

from helpers import ops_in
from jbind.ops import REGISTRY


def test_every_registered_op_has_a_sample():
    covered = set()
    for module in (test_ops_nn, test_ops_math, test_ops_shape, test_rnn_fused, test_ops_conv):
        for case in module.CASES:
            covered |= ops_in(case.build())
    missing = sorted(set(REGISTRY) - covered)
    assert not missing, f"operators without a check_op sample: {missing}"
