"""Golden data for contrib.PSROIPooling (forward and data gradient) and contrib.RROIAlign
(forward: MXNet has no gradient for it) from real MXNet 1.9.1.

    /tmp/mxvenv_gluon/bin/python tests/golden/make_psroi_golden.py

Writes tests/golden/psroi/cases.npz: for each case, data, rois, the head gradient, the
output and the gradient of data (checked by tests/test_ops_psroi.py)."""
import os

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = [  # name, spatial_scale, output_dim, pooled_size, group_size, data shape, rois
    ("basic", 0.0625, 2, 3, 0, (1, 18, 14, 14), [[0, 10, 22, 161, 173], [0, 20, 15, 154, 160]]),
    ("group2_batch2", 0.5, 3, 3, 2, (2, 12, 9, 11), [[1, 0.4, 2.5, 13.6, 9.5], [0, -3, 1, 4, 30], [1, 6, 6, 6, 6]]),
    ("pooled2", 1.0, 1, 2, 0, (1, 4, 6, 5), [[0, 0, 0, 4, 5], [0, 3.5, 2.5, 2.5, 3.5]]),
]


def main():
    rng = np.random.RandomState(7)
    out = {}
    for name, scale, dim, pooled, group, shape, rois in CASES:
        data = rng.uniform(-1, 1, shape).astype(np.float32)
        rois = np.array(rois, np.float32)
        sym = mx.sym.contrib.PSROIPooling(mx.sym.Variable("data"), mx.sym.Variable("rois"), spatial_scale=scale,
                                          output_dim=dim, pooled_size=pooled, group_size=group)
        grad = mx.nd.zeros(shape)
        exe = sym.bind(mx.cpu(), {"data": mx.nd.array(data), "rois": mx.nd.array(rois)},
                       args_grad={"data": grad}, grad_req={"data": "write", "rois": "null"})
        y = exe.forward(is_train=True)[0].asnumpy()
        head = rng.uniform(-1, 1, y.shape).astype(np.float32)
        exe.backward(mx.nd.array(head))
        for k, v in (("data", data), ("rois", rois), ("head", head), ("out", y), ("grad", grad.asnumpy())):
            out[f"{name}:{k}"] = v
    data = rng.uniform(-5, 5, (2, 3, 9, 10)).astype(np.float32)
    rois = np.array([[0, 20, 30, 40, 24, 30], [1, 70, 20, 15, 50, 135], [1, 10, 10, 200, 3, 80],
                     [0, 150, 150, 30, 30, 0]], np.float32)
    out["rroi:data"], out["rroi:rois"] = data, rois
    for ratio in (-1, 2):
        y = mx.nd.contrib.RROIAlign(mx.nd.array(data), mx.nd.array(rois), pooled_size=(2, 3), spatial_scale=0.125,
                                    sampling_ratio=ratio)
        out[f"rroi:out{ratio}"] = y.asnumpy()
    path = os.path.join(HERE, "psroi", "cases.npz")
    np.savez_compressed(path + ".tmp.npz", **out)
    os.replace(path + ".tmp.npz", path)
    print("wrote", path, sorted(out)[:3], "...")


if __name__ == "__main__":
    main()
