"""Golden data for contrib.Proposal / contrib.MultiProposal (forward; MXNet's backward is
zero) and contrib.DeformableConvolution (forward and every gradient) from real MXNet 1.9.1.

    /tmp/mxvenv_gluon/bin/python tests/golden/make_proposal_golden.py

Writes tests/golden/proposal/cases.npz (checked by tests/test_ops_proposal.py and
tests/test_ops_deformable.py): for each case its inputs, outputs and, for the
convolution, the head gradient and the gradients of data, offset, weight and bias."""
import os

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))

# name, op, batch, (A scales, ratios), feature (H, W), im_info rows, params
PROPOSAL_CASES = [
    ("single", "Proposal", 1, (2, 4), (0.5, 1, 2), (5, 6), [[70, 90, 1.0]],
     dict(rpn_pre_nms_top_n=50, rpn_post_nms_top_n=20, threshold=0.7, rpn_min_size=8)),
    ("single_all_cycle", "Proposal", 1, (1, 2), (1,), (4, 4), [[64, 64, 0.5]],
     dict(rpn_pre_nms_top_n=-1, rpn_post_nms_top_n=30, threshold=0.3, rpn_min_size=4)),
    ("multi", "MultiProposal", 3, (2, 4), (0.5, 1, 2), (5, 6), [[70, 90, 1.0], [80, 96, 0.8], [33, 40, 1.5]],
     dict(rpn_pre_nms_top_n=60, rpn_post_nms_top_n=25, threshold=0.6, rpn_min_size=8)),
    ("multi_iou", "MultiProposal", 2, (2, 3), (0.5, 2), (4, 5), [[64, 80, 1.0], [50, 70, 1.0]],
     dict(rpn_pre_nms_top_n=40, rpn_post_nms_top_n=15, threshold=0.7, rpn_min_size=4, iou_loss=True)),
]

# name, data shape, num_filter, kernel, stride, pad, dilate, num_group, num_deformable_group, no_bias
DEFORM_CASES = [
    ("basic", (2, 4, 5, 6), 6, (3, 3), (1, 1), (1, 1), (1, 1), 2, 2, False),
    ("strided", (1, 3, 7, 6), 4, (2, 3), (2, 1), (1, 0), (2, 2), 1, 1, True),
    ("dg4", (1, 4, 4, 4), 2, (3, 3), (1, 1), (2, 2), (2, 2), 1, 4, False),
]


def proposal_cases(rng, out):
    for name, op, batch, scales, ratios, (h, w), info, params in PROPOSAL_CASES:
        a = len(scales) * len(ratios)
        cls_prob = rng.uniform(0, 1, (batch, 2 * a, h, w)).astype(np.float32)
        bbox_pred = rng.uniform(-0.3, 0.3, (batch, 4 * a, h, w)).astype(np.float32)
        if params.get("iou_loss"):
            bbox_pred *= 20
        im_info = np.array(info, np.float32)
        fn = getattr(mx.nd.contrib, op)
        rois, score = fn(mx.nd.array(cls_prob), mx.nd.array(bbox_pred), mx.nd.array(im_info), feature_stride=16,
                         scales=scales, ratios=ratios, output_score=True, **params)
        for k, v in (("cls_prob", cls_prob), ("bbox_pred", bbox_pred), ("im_info", im_info),
                     ("rois", rois.asnumpy()), ("score", score.asnumpy())):
            out[f"proposal:{name}:{k}"] = v


def deform_cases(rng, out):
    for name, shape, nf, kernel, stride, pad, dilate, group, dg, no_bias in DEFORM_CASES:
        n, c, h, w = shape
        ho = (h + 2 * pad[0] - dilate[0] * (kernel[0] - 1) - 1) // stride[0] + 1
        wo = (w + 2 * pad[1] - dilate[1] * (kernel[1] - 1) - 1) // stride[1] + 1
        args = {
            "data": rng.uniform(-1, 1, shape).astype(np.float32),
            "offset": rng.uniform(-2.5, 2.5, (n, dg * 2 * kernel[0] * kernel[1], ho, wo)).astype(np.float32),
            "weight": rng.uniform(-1, 1, (nf, c // group) + kernel).astype(np.float32),
        }
        if not no_bias:
            args["bias"] = rng.uniform(-1, 1, (nf,)).astype(np.float32)
        sym = mx.sym.contrib.DeformableConvolution(
            mx.sym.Variable("data"), mx.sym.Variable("offset"), mx.sym.Variable("weight"),
            *([mx.sym.Variable("bias")] if not no_bias else []), num_filter=nf, kernel=kernel, stride=stride,
            pad=pad, dilate=dilate, num_group=group, num_deformable_group=dg, no_bias=no_bias)
        grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
        exe = sym.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in args.items()}, args_grad=grads)
        y = exe.forward(is_train=True)[0].asnumpy()
        head = rng.uniform(-1, 1, y.shape).astype(np.float32)
        exe.backward(mx.nd.array(head))
        for k, v in args.items():
            out[f"deform:{name}:{k}"] = v
            out[f"deform:{name}:grad_{k}"] = grads[k].asnumpy()
        out[f"deform:{name}:head"] = head
        out[f"deform:{name}:out"] = y


def main():
    rng = np.random.RandomState(11)
    out = {}
    proposal_cases(rng, out)
    deform_cases(rng, out)
    os.makedirs(os.path.join(HERE, "proposal"), exist_ok=True)
    path = os.path.join(HERE, "proposal", "cases.npz")
    np.savez_compressed(path + ".tmp.npz", **out)
    os.replace(path + ".tmp.npz", path)
    print("wrote", path, len(out), "arrays")


if __name__ == "__main__":
    main()
