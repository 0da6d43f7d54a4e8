"""A BucketingModule checkpoint written by MXNet 1.9.1's `save_checkpoint`.

Run from the repository root with the MXNet venv:

    MXNET_SUBGRAPH_BACKEND=NONE /tmp/mxvenv_gluon/bin/python tests/golden/make_bucketing_golden.py

Writes tests/golden/bucketing/: `bk-0003.params`, `bk-KEY-symbol.json` for the two bound
buckets (4, the default, and 2), `bk.buckets` (MXNet's list of bucket keys) and
`outputs.npz` (each bucket's output for a fixed input), checked by
tests/test_bucketing_checkpoint.py. Deterministic: constant parameters and inputs.
"""
import os

import numpy as np

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bucketing")


def sym_gen(key):
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    return mx.sym.sum(fc, axis=1, name="s") * key, ("data",), None


def main():
    os.makedirs(OUT, exist_ok=True)
    x = np.arange(10, dtype=np.float32).reshape(2, 5) / 10
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=4)
    mod.bind([("data", (2, 5))], for_training=False)
    mod.init_params(arg_params={"fc_weight": mx.nd.array(np.arange(15, dtype=np.float32).reshape(3, 5) / 7),
                                "fc_bias": mx.nd.array([0.5, -1.0, 2.0])})
    outs = {}
    for key in (4, 2):
        mod.switch_bucket(key, [("data", (2, 5))])
        mod.forward(mx.io.DataBatch([mx.nd.array(x)], bucket_key=key,
                                    provide_data=[mx.io.DataDesc("data", (2, 5))]), is_train=False)
        outs["out_%d" % key] = mod.get_outputs()[0].asnumpy()
    mod.save_checkpoint(os.path.join(OUT, "bk"), 3)
    np.savez(os.path.join(OUT, "outputs.npz"), x=x, **outs)


if __name__ == "__main__":
    main()
