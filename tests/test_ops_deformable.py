"""contrib.DeformableConvolution: forward and the gradients of data, offset, weight and bias
against MXNet 1.9.1's CPU kernel (tests/golden/make_proposal_golden.py) and a point-by-point
numpy reference; shapes and refusals."""
import pathlib

import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op

GOLDEN = np.load(pathlib.Path(__file__).parent / "golden" / "proposal" / "cases.npz")
GOLDEN_CASES = {  # name: num_filter, kernel, stride, pad, dilate, num_group, num_deformable_group, no_bias
    "basic": (6, (3, 3), (1, 1), (1, 1), (1, 1), 2, 2, False),
    "strided": (4, (2, 3), (2, 1), (1, 0), (2, 2), 1, 1, True),
    "dg4": (2, (3, 3), (1, 1), (2, 2), (2, 2), 1, 4, False),
}


def _sym(nf, kernel, stride, pad, dilate, group, dg, no_bias):
    names = ["data", "offset", "weight"] + ([] if no_bias else ["bias"])
    return names, mx.sym.contrib.DeformableConvolution(
        *[mx.sym.Variable(k) for k in names], num_filter=nf, kernel=kernel, stride=stride, pad=pad, dilate=dilate,
        num_group=group, num_deformable_group=dg, no_bias=no_bias)


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_deformable_convolution_matches_mxnet(name):
    # offsets up to 2.5 pixels: points past every edge, and in the last row and column
    names, sym = _sym(*GOLDEN_CASES[name])
    args = {k: mx.nd.array(GOLDEN[f"deform:{name}:{k}"]) for k in names}
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    exe = sym.bind(mx.cpu(), args, args_grad=grads)
    out = exe.forward(is_train=True)[0]
    np.testing.assert_allclose(out.asnumpy(), GOLDEN[f"deform:{name}:out"], rtol=1e-5, atol=1e-5)
    exe.backward(mx.nd.array(GOLDEN[f"deform:{name}:head"]))
    for k in names:
        np.testing.assert_allclose(grads[k].asnumpy(), GOLDEN[f"deform:{name}:grad_{k}"], rtol=1e-5, atol=1e-5,
                                   err_msg=f"gradient of {k}")


def _sample(img, y, x):
    """One channel at a fractional point, as MXNet's CPU kernel reads it."""
    h, w = img.shape
    if not (0 <= y < h and 0 <= x < w):
        return 0.0
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    ly, lx = (0.0 if y0 >= h - 1 else y - y0), (0.0 if x0 >= w - 1 else x - x0)
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    return ((1 - ly) * (1 - lx) * img[y0, x0] + (1 - ly) * lx * img[y0, x1]
            + ly * (1 - lx) * img[y1, x0] + ly * lx * img[y1, x1])


def _deform_ref(data, offset, weight, bias, stride, pad, dilate, group, dg):
    n, c, _, _ = data.shape
    nf, cg, kh, kw = weight.shape
    _, _, ho, wo = offset.shape
    out = np.zeros((n, nf, ho, wo))
    for b in range(n):
        for f in range(nf):
            gi = f // (nf // group)
            for ci in range(cg):
                ch = gi * cg + ci
                d = ch // (c // dg)
                for i in range(kh):
                    for j in range(kw):
                        t = 2 * (i * kw + j) + d * 2 * kh * kw
                        for y in range(ho):
                            for x in range(wo):
                                py = y * stride[0] - pad[0] + i * dilate[0] + offset[b, t, y, x]
                                px = x * stride[1] - pad[1] + j * dilate[1] + offset[b, t + 1, y, x]
                                out[b, f, y, x] += weight[f, ci, i, j] * _sample(data[b, ch], py, px)
    return out + (0 if bias is None else bias.reshape(1, -1, 1, 1))


CASES = [
    Case("deformable_convolution",
         lambda: _sym(4, (2, 2), (1, 2), (1, 1), (1, 1), 2, 2, False)[1],
         lambda data, offset, weight, bias: [_deform_ref(data, offset, weight, bias, (1, 2), (1, 1), (1, 1), 2, 2)],
         {"data": (1, 4, 4, 5), "offset": (1, 16, 5, 3)},
         inputs={"offset": (-1.4, 1.4)}, grad_rtol=5e-3, grad_atol=5e-4),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)


def test_deformable_convolution_shapes():
    sym = mx.sym.contrib.DeformableConvolution(num_filter=6, kernel=(3, 3), pad=(1, 1), num_group=2,
                                               num_deformable_group=2, name="dc")
    assert sym.list_arguments() == ["dc_data", "dc_offset", "dc_weight", "dc_bias"]
    args, outs, _ = sym.infer_shape(dc_data=(2, 4, 5, 6))
    assert args == [(2, 4, 5, 6), (2, 36, 5, 6), (6, 2, 3, 3), (6,)] and outs == [(2, 6, 5, 6)]
    again = mx.sym.load_json(sym.tojson())
    assert again.infer_shape(dc_data=(2, 4, 5, 6)) == (args, outs, [])


def test_deformable_convolution_refusals():
    sym = mx.sym.contrib.DeformableConvolution(num_filter=2, kernel=(3, 3), num_deformable_group=3, name="dc")
    with pytest.raises(mx.base.MXNetError, match="num_deformable_group"):
        sym.infer_shape(dc_data=(1, 4, 5, 5))
    sym = mx.sym.contrib.DeformableConvolution(num_filter=2, kernel=(3, 3), name="dc")
    with pytest.raises(mx.base.MXNetError, match="offset"):
        sym.infer_shape(dc_data=(1, 4, 5, 5), dc_offset=(1, 18, 5, 5))
    with pytest.raises(mx.base.MXNetError, match="2-D"):
        mx.sym.contrib.DeformableConvolution(num_filter=2, kernel=(3, 3, 3))
