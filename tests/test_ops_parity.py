"""Operators added to close the gap with MXNet 1.9.1's operator list (issue 18 part 4):
_eye, _linspace, the elementwise logical ops, _identity_with_attr_like_rhs, all_finite,
multi_all_finite, index_array, quadratic, allclose, BatchNorm_v1, box_encode / box_decode,
_slice_assign(_scalar), choose_element_0index / fill_element_0index, _histogram,
quantize / dequantize, image normalize, crop and flips.
Each against a numpy reference written here, forward and gradient."""
import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op

V = mx.sym.Variable
S = mx.sym
C = mx.sym.contrib


def _zero_grad(*names):
    return lambda **v: {n: np.zeros_like(v[n]) for n in names}


def _eye_ref(n, m, k):
    return np.array([[1.0 if j - i == k else 0.0 for j in range(m)] for i in range(n)])


def _logical_ref(a, b):
    a, b = a != 0, b != 0
    return [np.logical_and(a, b) * 1.0, np.logical_or(a, b) * 1.0, np.logical_xor(a, b) * 1.0,
            np.logical_and(a, True) * 1.0, np.logical_or(a, False) * 1.0, np.logical_xor(a, True) * 1.0]


def _logical_group(a, b):
    I = S._internal  # noqa: E741
    return S.Group([I._logical_and(a, b), I._logical_or(a, b), I._logical_xor(a, b),
                    I._logical_and_scalar(a, scalar=2), I._logical_or_scalar(a, scalar=0),
                    I._logical_xor_scalar(a, scalar=1)])


def _index_ref(data, axes=None):
    idx = np.indices(data.shape)
    axes = range(data.ndim) if axes is None else axes
    return np.stack([idx[a] for a in axes], axis=-1).astype(np.float64)


def _bn_ref(data, gamma, beta, eps=1e-3):
    mean = data.mean(axis=(0, 2), keepdims=True)
    var = data.var(axis=(0, 2), keepdims=True)
    return (data - mean) / np.sqrt(var + eps) * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)


# corner boxes: anchors (1, 3, 4), refs (1, 2, 4); anchor 1 not sampled
ANCHORS = np.array([[[0.0, 0.0, 2.0, 2.0], [1.0, 1.0, 2.0, 3.0], [0.5, 0.0, 1.5, 4.0]]])
REFS = np.array([[[0.0, 0.5, 1.0, 2.5], [1.0, 1.0, 4.0, 2.0]]])
SAMPLES = np.array([[1.0, 0.0, 1.0]])
MATCHES = np.array([[1.0, 0.0, 0.0]])
MEANS = np.array([0.1, 0.0, -0.1, 0.2])
STDS = np.array([0.5, 1.0, 2.0, 0.25])


def _corner_to_center(b):
    w, h = b[..., 2] - b[..., 0], b[..., 3] - b[..., 1]
    return b[..., 0] + w / 2, b[..., 1] + h / 2, w, h


def _encode_ref(samples, matches, anchors, refs, means, stds):
    targets = np.zeros(anchors.shape)
    for b in range(anchors.shape[0]):
        for i in range(anchors.shape[1]):
            if samples[b, i] > 0.5:
                ax, ay, aw, ah = _corner_to_center(anchors[b, i])
                rx, ry, rw, rh = _corner_to_center(refs[b, int(matches[b, i])])
                raw = np.array([(rx - ax) / aw, (ry - ay) / ah, np.log(rw / aw), np.log(rh / ah)])
                targets[b, i] = (raw - means) / stds
    masks = np.repeat((samples > 0.5)[..., None] * 1.0, 4, axis=-1)
    return [targets, masks]


def _decode_ref(data, anchors, stds=(1.0, 1.0, 1.0, 1.0), clip=-1.0, corner=False):
    if corner:
        ax, ay, aw, ah = _corner_to_center(anchors[0])
    else:
        ax, ay, aw, ah = (anchors[0, :, k] for k in range(4))
    d = data * np.asarray(stds)
    dw, dh = d[..., 2], d[..., 3]
    if clip > 0:
        dw, dh = np.minimum(dw, clip), np.minimum(dh, clip)
    cx, cy = d[..., 0] * aw + ax, d[..., 1] * ah + ay
    w, h = np.exp(dw) * aw / 2, np.exp(dh) * ah / 2
    return np.stack([cx - w, cy - h, cx + w, cy + h], axis=-1)


CASES = [
    Case("eye_plus", lambda: S.broadcast_add(V("x"), S.eye(3, 4, 1)),
         lambda x: [x + _eye_ref(3, 4, 1)], {"x": (3, 4)}),
    Case("linspace_plus", lambda: S.broadcast_add(V("y"), S.linspace(-1, 1, 5, endpoint=False)),
         lambda y: [y + np.array([-1, -0.6, -0.2, 0.2, 0.6])], {"y": (2, 5)}),
    Case("logical_family", lambda: _logical_group(V("a"), V("b")), _logical_ref, {"a": (3, 4), "b": (3, 4)},
         inputs={"a": ("int", 0, 3), "b": ("int", 0, 2)}, ref_grad=_zero_grad("a", "b")),
    Case("identity_with_attr_like_rhs", lambda: S._internal._identity_with_attr_like_rhs(V("l"), V("r")) * 3,
         lambda l, r: [3 * l], {"l": (2, 3), "r": (2, 3)}),
    Case("all_finite", lambda p=V("p"): S.Group([S.all_finite(p), S.multi_all_finite(p, V("q"), num_arrays=2)]),
         lambda p, q: [np.ones(1), np.ones(1)], {"p": (2, 3), "q": (4,)}, ref_grad=_zero_grad("p", "q")),
    Case("index_array", lambda d=V("d"): S.Group([C.index_array(d), C.index_array(d, axes=(-1, 0))]),
         lambda d: [_index_ref(d), _index_ref(d, (2, 0))], {"d": (2, 3, 2)}, ref_grad=_zero_grad("d")),
    Case("quadratic", lambda: C.quadratic(V("x"), a=1.5, b=-2, c=0.5),
         lambda x: [1.5 * x * x - 2 * x + 0.5], {"x": (3, 2)}),
    Case("allclose", lambda a=V("a"): S.Group([C.allclose(a, a), C.allclose(a, V("b"), rtol=0, atol=0.1)]),
         lambda a, b: [np.array(1, np.uint8), np.array(int(np.allclose(a, b, 0, 0.1)), np.uint8)],
         {"a": (3, 2), "b": (3, 2)}, ref_grad=_zero_grad("a", "b")),
    Case("batchnorm_v1_train", lambda: S.BatchNorm_v1(V("data"), V("gamma"), V("beta"), fix_gamma=False,
                                                      name="bn"),
         lambda data, gamma, beta: [_bn_ref(data, gamma, beta)],
         {"data": (4, 3, 2)}, is_train=True, grad_rtol=5e-3, grad_atol=1e-3),
    Case("box_encode", lambda: C.box_encode(V("s"), V("m"), V("an"), V("rf"), V("mu"), V("sd")),
         lambda s, m, an, rf, mu, sd: _encode_ref(s, m, an, rf, mu, sd),
         {"s": (1, 3), "m": (1, 3), "an": (1, 3, 4), "rf": (1, 2, 4), "mu": (4,), "sd": (4,)},
         inputs={"s": SAMPLES, "m": MATCHES, "an": ANCHORS, "rf": REFS, "mu": MEANS, "sd": STDS},
         ref_grad=_zero_grad("s", "m", "an", "rf", "mu", "sd")),
    Case("box_decode", lambda x=V("x"), an=V("an"): S.Group([
        C.box_decode(x, an), C.box_decode(x, an, std0=0.5, std2=2.0, clip=0.3, format="corner")]),
         lambda x, an: [_decode_ref(x, an), _decode_ref(x, an, (0.5, 1, 2, 1), 0.3, corner=True)],
         {"x": (2, 3, 4), "an": (1, 3, 4)}, inputs={"an": ANCHORS}, ref_grad=_zero_grad("x", "an")),
    Case("slice_assign", lambda lhs=V("lhs"): S.Group([
        S._internal._slice_assign(lhs, V("rhs"), begin=(0, 1), end=(2, None), step=(1, 2)),
        S._internal._slice_assign_scalar(lhs, scalar=-3, begin=(None, 2), end=(None, 3))]),
         lambda lhs, rhs: [_assigned(lhs, (np.s_[0:2], np.s_[1::2]), rhs),
                           _assigned(lhs, (np.s_[:], np.s_[2:3]), -3.0)],
         {"lhs": (3, 5), "rhs": (2, 2)}),
    Case("element_0index", lambda lhs=V("lhs"), r=V("r"): S.Group([
        S.choose_element_0index(lhs, r), S.fill_element_0index(lhs, V("m"), r)]),
         lambda lhs, r, m: [lhs[np.arange(3), r.astype(int)], _assigned(lhs, (np.arange(3), r.astype(int)), m)],
         {"lhs": (3, 4), "r": (3,), "m": (3,)}, inputs={"r": ("int", 0, 4)}, no_grad=("r",)),
    Case("histogram", lambda x=V("x"): S.Group(list(S.histogram(x, bins=4, range=(-0.5, 0.5))) +
                                               list(S.histogram(x, bins=V("edges"))) + [S.histogram(x, bins=3)[0]]),
         lambda x, edges: [*np.histogram(x, 4, range=(-0.5, 0.5)), *np.histogram(x, edges), np.histogram(x, 3)[0]],
         {"x": (4, 6), "edges": (4,)}, inputs={"edges": np.array([-1.0, -0.2, 0.1, 0.7])},
         ref_grad=_zero_grad("x", "edges")),
    Case("quantize_dequantize", lambda x=V("x"), lo=V("lo"), hi=V("hi"): S.Group(
        [S.contrib.dequantize(*S.contrib.quantize(x, lo, hi, out_type=t)) for t in ("int8", "uint8")]),
         lambda x, lo, hi: [_qdq(x, lo, hi, "int8"), _qdq(x, lo, hi, "uint8")],
         {"x": (3, 4), "lo": (1,), "hi": (1,)}, inputs={"lo": np.array([-1.0]), "hi": np.array([1.5])},
         ref_grad=_zero_grad("x", "lo", "hi"), atol=1e-6),
    Case("image_normalize", lambda img=V("img"): S.Group([S.image.normalize(img, mean=(0.5, 1, 2), std=(2, 1, 0.5)),
                                                         S.image.normalize(img, mean=(1,), std=(4,))]),
         lambda img: [(img - np.array([0.5, 1, 2])[:, None, None]) / np.array([2, 1, 0.5])[:, None, None],
                      (img - 1) / 4], {"img": (2, 3, 2, 2)}),
    Case("multi_sum_sq", lambda: S.multi_sum_sq(V("p"), V("q"), num_arrays=2),
         lambda p, q: [np.array([np.sum(p * p), np.sum(q * q)])], {"p": (2, 3), "q": (4,)},
         ref_grad=_zero_grad("p", "q")),
    Case("image_crop_flip", lambda img=V("img"), batch=V("batch"): S.Group(
        [S.image.crop(img, x=1, y=0, width=2, height=3), S.image.crop(batch, 0, 1, 3, 1),
         S.image.flip_left_right(img), S.image.flip_top_bottom(batch)]),
         lambda img, batch: [img[0:3, 1:3], batch[:, 1:2, 0:3], img[:, ::-1], batch[:, ::-1]],
         {"img": (4, 3, 3), "batch": (2, 3, 4, 1)}),
    Case("image_to_tensor", lambda: S.Group([S.image.to_tensor(V("hwc")), S.image.to_tensor(V("nhwc"))]),
         lambda hwc, nhwc: [np.moveaxis(hwc, -1, 0) / 255, np.moveaxis(nhwc, -1, 1) / 255],
         {"hwc": (3, 4, 2), "nhwc": (2, 3, 4, 3)}, inputs={"hwc": (0, 255), "nhwc": (0, 255)}),
]


def test_rnn_param_concat_is_concat():
    out = mx.nd._internal._rnn_param_concat(mx.nd.ones((2,)), mx.nd.zeros((3,)), dim=0)
    assert out.asnumpy().tolist() == [1, 1, 0, 0, 0]


def _qdq(x, lo, hi, kind):
    """quantize then dequantize, in numpy (truncation toward zero, as MXNet's cast)."""
    x = x.astype(np.float32)
    if kind == "int8":
        r = max(abs(lo[0]), abs(hi[0]))
        q = np.trunc(np.sign(x) * np.minimum(np.abs(x) * (127 / r) + 0.5, 127))
        return q * (r / 127)
    q = np.trunc((x - lo[0]) * (255 / (hi[0] - lo[0])) + 0.5)
    return q * ((hi[0] - lo[0]) / 255) + lo[0]


def _assigned(a, index, value):
    out = a.copy()
    out[index] = value
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)


def test_batchnorm_v1_keeps_its_name_in_json():
    s = S.BatchNorm_v1(V("x"), name="bn")
    assert '"op": "BatchNorm_v1"' in s.tojson()
    assert s.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]


def test_internal_namespace_has_underscore_ops():
    assert mx.sym._internal._plus is mx.sym._plus
    from jbind.ndarray._internal import _minus_scalar  # noqa: F401
    assert not hasattr(mx.sym._internal, "FullyConnected")


def test_grad_add_is_elementwise_add():
    a, b = mx.nd.array([1, 2]), mx.nd.array([3, 5])
    assert mx.nd._internal._grad_add(a, b).asnumpy().tolist() == [4, 7]


def test_backward_shape_inference_through_identity_like_rhs():
    w = V("w")
    shifted = S.broadcast_add(w, V("shift", shape=(1,)))
    net = S.FullyConnected(V("data"), S._internal._identity_with_attr_like_rhs(shifted, w), num_hidden=5,
                           no_bias=True)
    shapes = dict(zip(net.list_arguments(), net.infer_shape(data=(2, 7))[0]))
    assert shapes["w"] == (5, 7)


def test_index_array_rejects_bad_axis():
    with pytest.raises(mx.base.MXNetError, match="axis 3"):
        C.index_array(V("d"), axes=(3,)).infer_shape(d=(2, 2))


def test_one_number_for_a_tuple_parameter_is_a_one_tuple():
    # MXNet parses a tuple parameter given one number as a 1-tuple (image.normalize's mean/std).
    sym = mx.sym.image.normalize(data=mx.sym.Variable("data"), mean=1.0, std=2.0)
    out = sym.eval(data=mx.nd.full((3, 2, 2), 5.0))[0]
    np.testing.assert_allclose(out.asnumpy(), np.full((3, 2, 2), 2.0))
    again = mx.sym.load_json(sym.tojson()).eval(data=mx.nd.full((3, 2, 2), 3.0))[0]
    np.testing.assert_allclose(again.asnumpy(), np.full((3, 2, 2), 1.0))
