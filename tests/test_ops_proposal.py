"""contrib.Proposal and contrib.MultiProposal: against MXNet 1.9.1's outputs
(tests/golden/make_proposal_golden.py) and a loop-by-loop numpy reference of its kernel;
zero gradients; shapes, hidden score output and refusals."""
import pathlib

import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op

GOLDEN = np.load(pathlib.Path(__file__).parent / "golden" / "proposal" / "cases.npz")
GOLDEN_CASES = {  # name: op, scales, ratios, params (as the golden script)
    "single": ("Proposal", (2, 4), (0.5, 1, 2),
               dict(rpn_pre_nms_top_n=50, rpn_post_nms_top_n=20, threshold=0.7, rpn_min_size=8)),
    "single_all_cycle": ("Proposal", (1, 2), (1,),
                         dict(rpn_pre_nms_top_n=-1, rpn_post_nms_top_n=30, threshold=0.3, rpn_min_size=4)),
    "multi": ("MultiProposal", (2, 4), (0.5, 1, 2),
              dict(rpn_pre_nms_top_n=60, rpn_post_nms_top_n=25, threshold=0.6, rpn_min_size=8)),
    "multi_iou": ("MultiProposal", (2, 3), (0.5, 2),
                  dict(rpn_pre_nms_top_n=40, rpn_post_nms_top_n=15, threshold=0.7, rpn_min_size=4, iou_loss=True)),
}


def _golden_inputs(name):
    return [mx.nd.array(GOLDEN[f"proposal:{name}:{k}"]) for k in ("cls_prob", "bbox_pred", "im_info")]


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_proposal_matches_mxnet(name):
    op, scales, ratios, params = GOLDEN_CASES[name]
    rois, score = getattr(mx.nd.contrib, op)(*_golden_inputs(name), feature_stride=16, scales=scales,
                                             ratios=ratios, output_score=True, **params)
    np.testing.assert_allclose(rois.asnumpy(), GOLDEN[f"proposal:{name}:rois"], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(score.asnumpy(), GOLDEN[f"proposal:{name}:score"], rtol=1e-6, atol=1e-6)


def _anchors(stride, ratios, scales):
    out = []
    size = stride * stride
    ctr = 0.5 * (stride - 1)
    for r in ratios:
        for s in scales:
            w = np.floor(np.sqrt(np.floor(size / r)) + 0.5) * s
            h = np.floor(w / s * r + 0.5) * s
            out.append([ctr - 0.5 * (w - 1), ctr - 0.5 * (h - 1), ctr + 0.5 * (w - 1), ctr + 0.5 * (h - 1)])
    return np.array(out)


def _proposal_ref(cls_prob, bbox_pred, im_info, stride, scales, ratios, pre, post, thresh, min_size,
                  batched, iou_loss=False):
    """MXNet's proposal kernel written as plain loops, image by image."""
    base = _anchors(stride, ratios, scales)
    n, c, h, w = cls_prob.shape
    a = c // 2
    rois, scores = [], []
    for b in range(n):
        im_h, im_w, im_scale = im_info[b]
        real_h, real_w = int(im_h / stride), int(im_w / stride)
        dets = []
        for y in range(h):
            for x in range(w):
                for k in range(a):
                    x1, y1, x2, y2 = base[k] + [x * stride, y * stride, x * stride, y * stride]
                    d = bbox_pred[b, 4 * k:4 * k + 4, y, x]
                    if iou_loss:
                        box = [x1 + d[0], y1 + d[1], x2 + d[2], y2 + d[3]]
                    else:
                        bw, bh = x2 - x1 + 1, y2 - y1 + 1
                        cx, cy = x1 + 0.5 * (bw - 1) + d[0] * bw, y1 + 0.5 * (bh - 1) + d[1] * bh
                        pw, ph = np.exp(d[2]) * bw, np.exp(d[3]) * bh
                        box = [cx - 0.5 * (pw - 1), cy - 0.5 * (ph - 1), cx + 0.5 * (pw - 1), cy + 0.5 * (ph - 1)]
                    box = [min(max(v, 0), lim - 1) for v, lim in zip(box, [im_w, im_h, im_w, im_h])]
                    s = -1.0 if y >= real_h or x >= real_w else cls_prob[b, a + k, y, x]
                    m = min_size * im_scale
                    if box[2] - box[0] + 1 < m or box[3] - box[1] + 1 < m:
                        box = [box[0] - m / 2, box[1] - m / 2, box[2] + m / 2, box[3] + m / 2]
                        s = -1.0
                    dets.append(box + [s])
        dets = sorted(dets, key=lambda r: -r[4])[:pre if pre > 0 else len(dets)]
        keep, gone = [], set()
        for i, di in enumerate(dets):
            if len(keep) >= min(post, len(dets)):
                break
            if i in gone:
                continue
            keep.append(i)
            for j in range(i + 1, len(dets)):
                dj = dets[j]
                iw = max(0.0, min(di[2], dj[2]) - max(di[0], dj[0]) + 1)
                ih = max(0.0, min(di[3], dj[3]) - max(di[1], dj[1]) + 1)
                area = lambda q: (q[2] - q[0] + 1) * (q[3] - q[1] + 1)  # noqa: E731
                if iw * ih / (area(di) + area(dj) - iw * ih) > thresh:
                    gone.add(j)
        for i in range(post):
            d = dets[keep[i % len(keep)]]
            rois.append([b if batched else 0] + d[:4])
            scores.append([d[4]])
    return np.array(rois), np.array(scores)


def _info(n):
    return np.array([[70, 90, 1.0], [50, 60, 0.5], [90, 96, 2.0]][:n])


@pytest.mark.parametrize("batched", [False, True])
def test_proposal_matches_the_reference_loops(batched):
    n = 2 if batched else 1
    rng = np.random.default_rng(3)
    cls_prob = rng.uniform(0, 1, (n, 8, 6, 6)).astype(np.float32)
    bbox_pred = rng.uniform(-0.4, 0.4, (n, 16, 6, 6)).astype(np.float32)
    info = _info(n).astype(np.float32)
    fn = mx.nd.contrib.MultiProposal if batched else mx.nd.contrib.Proposal
    kw = dict(feature_stride=16, scales=(2, 3), ratios=(0.5, 2), rpn_pre_nms_top_n=70, rpn_post_nms_top_n=40,
              threshold=0.5, rpn_min_size=10)
    rois, score = fn(mx.nd.array(cls_prob), mx.nd.array(bbox_pred), mx.nd.array(info), output_score=True, **kw)
    want_rois, want_score = _proposal_ref(cls_prob.astype(np.float64), bbox_pred.astype(np.float64), info, 16,
                                          (2, 3), (0.5, 2), 70, 40, 0.5, 10, batched)
    np.testing.assert_allclose(rois.asnumpy(), want_rois, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(score.asnumpy(), want_score, rtol=1e-6, atol=1e-6)


def test_multiproposal_equals_proposal_image_by_image():
    op, scales, ratios, params = GOLDEN_CASES["multi"]
    cls_prob, bbox_pred, info = _golden_inputs("multi")
    kw = dict(feature_stride=16, scales=scales, ratios=ratios, output_score=True, **params)
    rois, score = mx.nd.contrib.MultiProposal(cls_prob, bbox_pred, info, **kw)
    post = params["rpn_post_nms_top_n"]
    for b in range(3):
        r1, s1 = mx.nd.contrib.Proposal(cls_prob[b:b + 1], bbox_pred[b:b + 1], info[b:b + 1], **kw)
        np.testing.assert_array_equal(r1.asnumpy()[:, 1:], rois.asnumpy()[b * post:(b + 1) * post, 1:])
        assert (r1.asnumpy()[:, 0] == 0).all() and (rois.asnumpy()[b * post:(b + 1) * post, 0] == b).all()
        np.testing.assert_array_equal(s1.asnumpy(), score.asnumpy()[b * post:(b + 1) * post])


def test_proposal_outputs_and_shapes():
    sym = mx.sym.contrib.MultiProposal(rpn_post_nms_top_n=7, name="mp")
    assert sym.list_arguments() == ["mp_cls_prob", "mp_bbox_pred", "mp_im_info"]
    assert sym.list_outputs() == ["mp_output"]  # the score is hidden without output_score
    args, outs, _ = sym.infer_shape(mp_cls_prob=(2, 24, 5, 6))
    assert args == [(2, 24, 5, 6), (2, 48, 5, 6), (2, 3)] and outs == [(14, 5)]
    scored = mx.sym.contrib.Proposal(rpn_post_nms_top_n=7, output_score=True, name="p")
    assert scored.list_outputs() == ["p_output", "p_score"]
    assert scored.infer_shape(p_cls_prob=(1, 24, 5, 6))[1] == [(7, 5), (7, 1)]
    again = mx.sym.load_json(sym.tojson())
    assert again.infer_shape(mp_cls_prob=(2, 24, 5, 6))[1] == [(14, 5)]


def test_proposal_refusals():
    with pytest.raises(mx.base.MXNetError, match="one image"):
        mx.sym.contrib.Proposal(name="p").infer_shape(p_cls_prob=(2, 24, 5, 6))
    with pytest.raises(mx.base.MXNetError, match="channels"):
        mx.sym.contrib.MultiProposal(name="p").infer_shape(p_cls_prob=(2, 23, 5, 6))
    with pytest.raises(mx.base.MXNetError, match="bbox_pred"):
        mx.sym.contrib.MultiProposal(name="p").infer_shape(p_cls_prob=(2, 24, 5, 6), p_bbox_pred=(2, 24, 5, 6))
    with pytest.raises(mx.base.MXNetError, match="rpn_post_nms_top_n"):
        mx.sym.contrib.MultiProposal(rpn_post_nms_top_n=0)


def test_backward_ignores_a_head_gradient_of_any_shape():
    # MXNet's backward of MultiProposal reads no head gradient, so it takes any
    sym = mx.sym.contrib.MultiProposal(scales=(2,), ratios=(1,), rpn_pre_nms_top_n=10, rpn_post_nms_top_n=4,
                                       name="mp")
    exe = sym.simple_bind(mx.cpu(), mp_cls_prob=(2, 2, 3, 3))
    exe.arg_dict["mp_cls_prob"][:] = np.random.default_rng(0).uniform(0, 1, (2, 2, 3, 3))
    exe.arg_dict["mp_im_info"][:] = np.array([[48, 48, 1], [40, 40, 1]])
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((4, 5))])
    for g in exe.grad_arrays:
        assert not g.asnumpy().any()


_KW = dict(feature_stride=16, scales=(2,), ratios=(0.5, 1), rpn_pre_nms_top_n=20, rpn_post_nms_top_n=6,
           threshold=0.6, rpn_min_size=4)
CASES = [
    Case(f"{name.lower()}", lambda fn=fn: fn(mx.sym.Variable("cls_prob"), mx.sym.Variable("bbox_pred"),
                                             mx.sym.Variable("im_info"), output_score=True, **_KW),
         lambda cls_prob, bbox_pred, im_info, batched=batched: list(_proposal_ref(
             cls_prob, bbox_pred, im_info, 16, (2,), (0.5, 1), 20, 6, 0.6, 4, batched)),
         {"cls_prob": (n, 4, 3, 4)},
         inputs={"cls_prob": (0.0, 1.0), "bbox_pred": (-0.3, 0.3), "im_info": _info(n)},
         ref_grad=lambda cls_prob, bbox_pred, im_info: {"cls_prob": np.zeros_like(cls_prob),
                                                        "bbox_pred": np.zeros_like(bbox_pred),
                                                        "im_info": np.zeros_like(im_info)},
         atol=1e-3)
    for name, fn, batched, n in [("Proposal", mx.sym.contrib.Proposal, False, 1),
                                 ("MultiProposal", mx.sym.contrib.MultiProposal, True, 2)]
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)
