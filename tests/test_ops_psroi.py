"""contrib.PSROIPooling against MXNet 1.9.1 (tests/golden/make_psroi_golden.py): forward and
the gradient of data, with group_size, several images, a ROI past the map and a one-pixel ROI."""
import pathlib

import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op

GOLDEN = np.load(pathlib.Path(__file__).parent / "golden" / "psroi" / "cases.npz")
GOLDEN_CASES = {  # name: spatial_scale, output_dim, pooled_size, group_size (as the golden script)
    "basic": (0.0625, 2, 3, 0), "group2_batch2": (0.5, 3, 3, 2), "pooled2": (1.0, 1, 2, 0)}


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_psroipooling_matches_mxnet(name):
    scale, dim, pooled, group = GOLDEN_CASES[name]
    data, rois = GOLDEN[f"{name}:data"], GOLDEN[f"{name}:rois"]
    sym = mx.sym.contrib.PSROIPooling(mx.sym.Variable("data"), mx.sym.Variable("rois"), spatial_scale=scale,
                                      output_dim=dim, pooled_size=pooled, group_size=group)
    grad = mx.nd.zeros(data.shape)
    exe = sym.bind(mx.cpu(), {"data": mx.nd.array(data), "rois": mx.nd.array(rois)},
                   args_grad={"data": grad}, grad_req={"data": "write", "rois": "null"})
    out = exe.forward(is_train=True)[0]
    np.testing.assert_allclose(out.asnumpy(), GOLDEN[f"{name}:out"], rtol=1e-5, atol=1e-6)
    exe.backward(mx.nd.array(GOLDEN[f"{name}:head"]))
    np.testing.assert_allclose(grad.asnumpy(), GOLDEN[f"{name}:grad"], rtol=1e-5, atol=1e-6)


def test_psroipooling_shapes_and_refusals():
    sym = mx.sym.contrib.PSROIPooling(spatial_scale=0.0625, output_dim=2, pooled_size=3, name="ps")
    assert sym.list_arguments() == ["ps_data", "ps_rois"]
    assert sym.infer_shape(ps_data=(1, 18, 14, 14), ps_rois=(4, 5))[1] == [(4, 2, 3, 3)]
    with pytest.raises(mx.base.MXNetError, match="channels"):
        sym.infer_shape(ps_data=(1, 17, 14, 14), ps_rois=(4, 5))


def _cround(v):
    return float(np.sign(v) * np.floor(abs(v) + 0.5))


def _psroi_ref(data, rois, scale, dim, pooled, group=0):
    """MXNet's PSROIPoolForward, bin by bin."""
    g = group or pooled
    _, _, h, w = data.shape
    out = np.zeros((len(rois), dim, pooled, pooled))
    for r, (b, x0, y0, x1, y1) in enumerate(rois):
        sw, sh = _cround(x0) * scale, _cround(y0) * scale
        ew, eh = (_cround(x1) + 1) * scale, (_cround(y1) + 1) * scale
        bw, bh = max(ew - sw, 0.1) / pooled, max(eh - sh, 0.1) / pooled
        for ph in range(pooled):
            for pw in range(pooled):
                hs = int(min(max(np.floor(ph * bh + sh), 0), h))
                he = int(min(max(np.ceil((ph + 1) * bh + sh), 0), h))
                ws = int(min(max(np.floor(pw * bw + sw), 0), w))
                we = int(min(max(np.ceil((pw + 1) * bw + sw), 0), w))
                if he <= hs or we <= ws:
                    continue
                gh, gw = min(ph * g // pooled, g - 1), min(pw * g // pooled, g - 1)
                for d in range(dim):
                    out[r, d, ph, pw] = data[int(b), (d * g + gh) * g + gw, hs:he, ws:we].mean()
    return out


_ROIS = np.array([[0, 1, 0, 9, 7], [1, 3.5, 2, 6, 12], [0, 20, 20, 30, 30]])
CASES = [
    Case("psroipooling", lambda: mx.sym.contrib.PSROIPooling(mx.sym.Variable("data"), mx.sym.Variable("rois"),
                                                             spatial_scale=0.5, output_dim=2, pooled_size=2),
         lambda data, rois: [_psroi_ref(data, rois, 0.5, 2, 2)], {"data": (2, 8, 5, 6), "rois": _ROIS.shape},
         inputs={"rois": _ROIS}, no_grad=("rois",)),
]


CASES.append(Case(
    "rroialign", lambda: mx.sym.contrib.RROIAlign(mx.sym.Variable("data"), mx.sym.Variable("rois"), pooled_size=(2, 3),
                                                  spatial_scale=0.125, sampling_ratio=-1),
    lambda data, rois: [GOLDEN["rroi:out-1"]], {"data": (2, 3, 9, 10), "rois": (4, 6)},
    inputs={"data": GOLDEN["rroi:data"], "rois": GOLDEN["rroi:rois"]}, grad=False, rtol=1e-5, atol=1e-4))


@pytest.mark.parametrize("ratio", [-1, 2])
def test_rroialign_matches_mxnet(ratio):
    # rotated ROIs (0 to 135 degrees), one far past the map, a thin one: MXNet 1.9.1's values
    out = mx.nd.contrib.RROIAlign(mx.nd.array(GOLDEN["rroi:data"]), mx.nd.array(GOLDEN["rroi:rois"]),
                                  pooled_size=(2, 3), spatial_scale=0.125, sampling_ratio=ratio)
    np.testing.assert_allclose(out.asnumpy(), GOLDEN[f"rroi:out{ratio}"], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)
