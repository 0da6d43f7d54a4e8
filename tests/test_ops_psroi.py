"""contrib.PSROIPooling against MXNet 1.9.1 (tests/golden/make_psroi_golden.py): forward and
the gradient of data, with group_size, several images, a ROI past the map and a one-pixel ROI."""
import pathlib

import numpy as np
import pytest

import jbind as mx

GOLDEN = np.load(pathlib.Path(__file__).parent / "golden" / "psroi" / "cases.npz")
CASES = {  # name: spatial_scale, output_dim, pooled_size, group_size (as the golden script)
    "basic": (0.0625, 2, 3, 0), "group2_batch2": (0.5, 3, 3, 2), "pooled2": (1.0, 1, 2, 0)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_psroipooling_matches_mxnet(name):
    scale, dim, pooled, group = CASES[name]
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
