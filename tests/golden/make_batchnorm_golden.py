"""MXNet 1.9.1's BatchNorm on float16 data: float32 gamma, beta and moving statistics,
float32 arithmetic inside, float16 output (tests/test_batchnorm.py).

    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/make_batchnorm_golden.py

Writes tests/golden/batchnorm/fp16.npz: per case (fix_gamma, use_global_stats), the
inputs, the types MXNet infers, a training forward's outputs (with output_mean_var), the
gradients for a seeded head gradient and the moving statistics after backward.
Deterministic (seeded numpy).
"""
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPE = (4, 3, 5)


def main():
    rng = np.random.RandomState(7)
    out = {}
    for fix_gamma in (False, True):
        for glob in (False, True):
            tag = f"fix{int(fix_gamma)}_glob{int(glob)}"
            sym = mx.sym.BatchNorm(mx.sym.Variable("data"), name="bn", fix_gamma=fix_gamma, use_global_stats=glob,
                                   output_mean_var=True, momentum=0.8, eps=1e-3)
            args, outs, aux = sym.infer_type(data="float16")
            out[tag + "/types"] = np.array([np.dtype(t).name for t in args + outs + aux])
            exe = sym.simple_bind(mx.cpu(), data=SHAPE, type_dict={"data": "float16"})
            values = {"data": rng.normal(1, 2, SHAPE).astype(np.float16),
                      "bn_gamma": rng.uniform(0.5, 1.5, 3).astype(np.float32),
                      "bn_beta": rng.uniform(-1, 1, 3).astype(np.float32)}
            stats = {"bn_moving_mean": rng.uniform(-1, 1, 3).astype(np.float32),
                     "bn_moving_var": rng.uniform(0.5, 2, 3).astype(np.float32)}
            for k, v in values.items():
                exe.arg_dict[k][:] = v
                out[f"{tag}/in/{k}"] = v
            for k, v in stats.items():
                exe.aux_dict[k][:] = v
                out[f"{tag}/aux/{k}"] = v
            head = rng.normal(size=SHAPE).astype(np.float16)
            outputs = exe.forward(is_train=True)
            for i, o in enumerate(outputs):
                out[f"{tag}/out/{i}"] = o.asnumpy()
            exe.backward([mx.nd.array(head, dtype=np.float16), mx.nd.zeros(3), mx.nd.zeros(3)])
            out[f"{tag}/head"] = head
            for k, g in exe.grad_dict.items():
                out[f"{tag}/grad/{k}"] = g.asnumpy()
            for k, v in exe.aux_dict.items():
                out[f"{tag}/aux_after/{k}"] = v.asnumpy()
    os.makedirs(os.path.join(HERE, "batchnorm"), exist_ok=True)
    np.savez_compressed(os.path.join(HERE, "batchnorm", "fp16.npz"), **out)


if __name__ == "__main__":
    main()
