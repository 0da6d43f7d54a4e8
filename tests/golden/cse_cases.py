"""Graphs for the common subexpression elimination goldens (make_cse_golden.py, test_cse.py)."""


def cases(sym):
    """name -> function building the symbol; `sym` is mx.sym or jbind.sym. Inputs 'a', 'b',
    'c', 'w' of shape (2, 3). Each function builds all its nodes, so that under a fresh
    NameManager the names do not depend on what ran before."""
    def inputs():
        a, b, c, w = sym.Variable("a"), sym.Variable("b"), sym.Variable("c"), sym.Variable("w")
        return a, b, c, w, a + 1

    def case(build):
        return lambda: build(*inputs())

    return {
        "different_scalars": case(lambda a, b, c, w, d: (a + 1) + (a + 2)),
        "same_scalar": case(lambda a, b, c, w, d: (a + 1) + (a + 1)),
        "sum_twice": case(lambda a, b, c, w, d: (a + b) + (a + b)),
        "nested": case(lambda a, b, c, w, d: ((a + b) + c) + ((a + b) + c)),
        "group_same_output": case(lambda a, b, c, w, d: sym.Group([a * d, a * d])),
        "group_same_tail": case(lambda a, b, c, w, d: sym.Group([a * d + b, a * d + b])),
        "dropout_not_merged": case(lambda a, b, c, w, d: sym.Dropout(a, p=0.5) + sym.Dropout(a, p=0.5)),
        "different_params": case(lambda a, b, c, w, d: sym.clip(a, 0, 1) + sym.clip(a, 0, 2)),
        "fc_shared_weight": case(lambda a, b, c, w, d: sym.FullyConnected(a, w, num_hidden=2, name="fc", no_bias=True)
                                 + sym.FullyConnected(a, w, num_hidden=2, name="fc2", no_bias=True)),
        "batchnorm_not_merged": case(lambda a, b, c, w, d: sym.BatchNorm(a, name="bn") + sym.BatchNorm(a, name="bn2")),
    }
