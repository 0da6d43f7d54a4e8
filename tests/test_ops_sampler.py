"""GridGenerator, BilinearSampler and SpatialTransformer (jbind/ops/sampler.py).

check_op compares each op with a numpy reference, forward and numeric gradient, on random
grids (points inside, between and outside the pixels). Behaviours marked "MXNet 1.9.1"
were checked against it; tests/golden/ops_sampler/ holds MXNet's own forward and backward
values, among them grids of points exactly on pixel centres and borders.
"""
import json

import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op, raises_naming
from jbind.ops import REGISTRY

V = mx.sym.Variable
S = mx.sym
ST = dict(transform_type="affine", sampler_type="bilinear")


# ------------------------------------------------------------------ numpy references
def _affine_ref(theta, h, w):
    """theta (N, 6) applied to the target's (x, y, 1), x and y evenly from -1 to 1."""
    ys, xs = np.meshgrid(np.linspace(-1, 1, h), np.linspace(-1, 1, w), indexing="ij")
    dst = np.stack([xs.ravel(), ys.ravel(), np.ones(h * w)])
    return (theta.reshape(-1, 2, 3) @ dst).reshape(-1, 2, h, w)


def _warp_ref(flow):
    h, w = flow.shape[2:]
    ys, xs = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    return np.stack([(flow[:, 0] + xs) / ((w - 1) / 2) - 1, (flow[:, 1] + ys) / ((h - 1) / 2) - 1], axis=1)


def _sample_ref(data, grid):
    """Pixel ((x + 1) (W - 1) / 2, (y + 1) (H - 1) / 2) of data, bilinearly, zero outside."""
    n, c, h, w = data.shape
    out = np.zeros((n, c) + grid.shape[2:])
    for b, i, j in np.ndindex(n, *grid.shape[2:]):
        x, y = (grid[b, 0, i, j] + 1) * (w - 1) / 2, (grid[b, 1, i, j] + 1) * (h - 1) / 2
        x0, y0 = int(np.floor(x)), int(np.floor(y))
        for yy in (y0, y0 + 1):
            for xx in (x0, x0 + 1):
                if 0 <= yy < h and 0 <= xx < w:
                    out[b, :, i, j] += data[b, :, yy, xx] * (1 - abs(y - yy)) * (1 - abs(x - xx))
    return out


CASES = [
    Case("gridgen_affine", lambda: S.GridGenerator(V("x"), transform_type="affine", target_shape=(3, 4)),
         lambda x: [_affine_ref(x, 3, 4)], {"x": (2, 6)}),
    Case("gridgen_warp", lambda: S.GridGenerator(V("x"), transform_type="warp"),
         lambda x: [_warp_ref(x)], {"x": (2, 2, 3, 4)}, inputs={"x": (-2.0, 2.0)}),
    Case("bilinear_sampler", lambda: S.BilinearSampler(V("data"), V("grid")),
         lambda data, grid: [_sample_ref(data, grid)], {"data": (2, 2, 3, 4), "grid": (2, 2, 3, 3)},
         inputs={"grid": (-1.4, 1.4)}),
    Case("spatial_transformer", lambda: S.SpatialTransformer(V("data"), V("loc"), target_shape=(3, 2), **ST),
         lambda data, loc: [_sample_ref(data, _affine_ref(loc, 3, 2))], {"data": (1, 2, 4, 3), "loc": (1, 6)}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)


# ------------------------------------------------------------------ values
DOC_DATA = np.array([[[[1, 4, 3, 6], [1, 8, 8, 9], [0, 4, 1, 5], [1, 0, 1, 3]]]], np.float32)


def test_mxnet_doc_examples_zoom_and_shift():
    """BilinearSampler's two examples in MXNet's docs (MXNet 1.9.1 gives these values)."""
    data = mx.nd.array(DOC_DATA)
    zoom = mx.nd.array([[2, 0, 0, 0, 2, 0]])
    want = [[0, 0, 0, 0], [0, 3.5, 6.5, 0], [0, 1.25, 2.5, 0], [0, 0, 0, 0]]
    grid = mx.nd.GridGenerator(zoom, transform_type="affine", target_shape=(4, 4))
    np.testing.assert_allclose(mx.nd.BilinearSampler(data, grid).asnumpy()[0, 0], want, rtol=1e-6)
    out = mx.nd.SpatialTransformer(data, zoom, target_shape=(4, 4), **ST)
    np.testing.assert_allclose(out.asnumpy()[0, 0], want, rtol=1e-6)
    flow = np.zeros((1, 2, 4, 4), np.float32)
    flow[:, 0] = 1  # one pixel right: the image moves one pixel left
    grid = mx.nd.GridGenerator(mx.nd.array(flow), transform_type="warp")
    # within float32 rounding: each mx.nd call is one compiled program, which XLA may fuse
    np.testing.assert_allclose(mx.nd.BilinearSampler(data, grid).asnumpy()[0, 0],
                               [[4, 3, 6, 0], [8, 8, 9, 0], [4, 1, 5, 0], [0, 1, 3, 0]], rtol=1e-6, atol=1e-6)
    # MXNet 1.9.1's generated functions take the parameters positionally, in its order
    assert mx.nd.GridGenerator(zoom, "affine", (2, 3)).shape == (1, 2, 2, 3)
    assert mx.nd.SpatialTransformer(data, zoom, (2, 3), "affine", "bilinear").shape == (1, 1, 2, 3)


def _grads(sym, values):
    exe = sym.simple_bind(mx.cpu(), **{k: v.shape for k, v in values.items()})
    outs = exe.forward(is_train=True, **values)
    exe.backward([mx.nd.ones(outs[0].shape)])
    return outs[0].asnumpy(), {k: exe.grad_dict[k].asnumpy() for k in values}


def test_grid_gradient_on_pixels_and_borders_is_mxnets_one_sided_one():
    """At a point exactly on a pixel column the grid's gradient is the slope towards the
    next column (the top-left corner held), zero beyond the last; values from MXNet 1.9.1."""
    sym = S.BilinearSampler(V("data"), V("grid"))
    data = np.array([[[[2, 5, 11]]]], np.float32)  # H = 1: y's gradient is zero
    gx = np.array([-2, -1, -0.5, 0, 1, 2], np.float32)  # pixel x = -1, 0, 0.5, 1, 2, 3
    out, g = _grads(sym, {"data": data, "grid": np.stack([gx, 0 * gx]).reshape(1, 2, 1, 6)})
    np.testing.assert_array_equal(out[0, 0, 0], [0, 2, 3.5, 5, 11, 0])
    np.testing.assert_array_equal(g["grid"][0, :, 0], [[2, 3, 3, 6, -11, 0], [0] * 6])
    np.testing.assert_array_equal(g["data"][0, 0, 0], [1.5, 1.5, 1])
    data = np.array([[[[1, 2], [4, 8]]]], np.float32)  # the four corners, then outside
    grid = np.array([[-1, 1, 1, -1, 3], [-1, -1, 1, 1, -1]], np.float32).reshape(1, 2, 1, 5)
    out, g = _grads(sym, {"data": data, "grid": grid})
    np.testing.assert_array_equal(out[0, 0, 0], [1, 2, 8, 4, 0])
    np.testing.assert_array_equal(g["grid"][0, :, 0], [[0.5, -1, -4, 2, 0], [1.5, 3, -4, -2, 0]])
    np.testing.assert_array_equal(g["data"][0, 0], [[1, 1], [1, 1]])


def test_identity_transform_reproduces_the_image_and_its_gradient():
    rng = np.random.default_rng(1)
    data = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)
    loc = np.tile(np.array([1, 0, 0, 0, 1, 0], np.float32), (2, 1))
    out, g = _grads(S.SpatialTransformer(V("data"), V("loc"), target_shape=(4, 5), **ST), {"data": data, "loc": loc})
    np.testing.assert_allclose(out, data, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(g["data"], np.ones_like(data), rtol=1e-6)


# ------------------------------------------------------------------ structure, shapes, types
def test_names_parameters_and_json_match_mxnet():
    d, l, g = V("data"), V("loc"), V("grid")
    gg = S.GridGenerator(d, transform_type="affine", target_shape=(3, 4), name="gg")
    bs = S.BilinearSampler(d, g, name="bs")
    st = S.SpatialTransformer(d, l, target_shape=(3, 4), name="st", **ST)
    assert (gg.list_arguments(), gg.list_outputs()) == (["data"], ["gg_output"])
    assert (bs.list_arguments(), bs.list_outputs()) == (["data", "grid"], ["bs_output"])
    assert (st.list_arguments(), st.list_outputs()) == (["data", "loc"], ["st_output"])
    assert REGISTRY["GridGenerator"].declared_params() == ("transform_type", "target_shape")
    assert REGISTRY["BilinearSampler"].declared_params() == ("cudnn_off",)
    assert REGISTRY["SpatialTransformer"].declared_params() == ("target_shape", "transform_type", "sampler_type",
                                                               "cudnn_off")
    # MXNet 1.9.1's JSON: the given attributes only, and the hidden outputs counted (grid_dst;
    # tmp; grid_dst and grid_src) in node_row_ptr
    for sym, attrs, rows in [
        (gg, {"target_shape": "(3, 4)", "transform_type": "affine"}, [0, 1, 3]),
        (bs, None, [0, 1, 2, 4]),
        (st, {"sampler_type": "bilinear", "target_shape": "(3, 4)", "transform_type": "affine"}, [0, 1, 2, 5]),
        (S.BilinearSampler(d, g, cudnn_off=True), {"cudnn_off": "True"}, [0, 1, 2, 4]),
    ]:
        js = json.loads(sym.tojson())
        assert js["nodes"][-1].get("attrs") == attrs and js["node_row_ptr"] == rows
        back = S.load_json(sym.tojson())
        assert back.tojson() == sym.tojson() and back.list_outputs() == sym.list_outputs()


MXNET_ST_JSON = """{"nodes": [{"op": "null", "name": "data", "inputs": []},
  {"op": "null", "name": "loc", "inputs": []},
  {"op": "SpatialTransformer", "name": "st", "attrs": {"sampler_type": "bilinear", "target_shape": "(4, 4)",
   "transform_type": "affine"}, "inputs": [[0, 0, 0], [1, 0, 0]]},
  {"op": "null", "name": "g", "inputs": []},
  {"op": "GridGenerator", "name": "gw", "attrs": {"transform_type": "warp"}, "inputs": [[3, 0, 0]]},
  {"op": "BilinearSampler", "name": "bs", "inputs": [[2, 0, 0], [4, 0, 0]]}],
 "arg_nodes": [0, 1, 3], "node_row_ptr": [0, 1, 2, 5, 6, 8, 10], "heads": [[5, 0, 0]],
 "attrs": {"mxnet_version": ["int", 10901]}}"""


def test_loads_mxnets_json_and_runs_it():
    """A graph as MXNet 1.9.1 writes it: SpatialTransformer, then a warp of its output."""
    sym = S.load_json(MXNET_ST_JSON)
    assert sym.list_arguments() == ["data", "loc", "g"]
    assert sym.infer_shape(data=(1, 1, 4, 4), loc=(1, 6), g=(1, 2, 4, 4))[1] == [(1, 1, 4, 4)]
    flow = np.zeros((1, 2, 4, 4), np.float32)
    flow[:, 0] = 1
    exe = sym.simple_bind(mx.cpu(), grad_req="null", data=(1, 1, 4, 4), loc=(1, 6), g=(1, 2, 4, 4))
    out = exe.forward(data=DOC_DATA, loc=np.array([[2, 0, 0, 0, 2, 0]], np.float32), g=flow)[0].asnumpy()
    np.testing.assert_allclose(out[0, 0], [[0, 0, 0, 0], [3.5, 6.5, 0, 0], [1.25, 2.5, 0, 0], [0, 0, 0, 0]],
                               rtol=1e-6)
    assert json.loads(sym.tojson())["node_row_ptr"] == [0, 1, 2, 5, 6, 8, 10]


def test_infer_shape_full_and_partial():
    d, l, g = V("data"), V("loc"), V("grid")
    gg = S.GridGenerator(d, transform_type="affine", target_shape=(3, 4))
    assert gg.infer_shape(data=(2, 6)) == ([(2, 6)], [(2, 2, 3, 4)], [])
    # MXNet 1.9.1 gives (0, 2, 3, 4) for (0, 6); with data unknown it fails ("should be 2D")
    assert gg.infer_shape_partial(data=(0, 6))[1] == [(0, 2, 3, 4)]
    assert gg.infer_shape_partial()[1] == [(0, 2, 3, 4)]
    gw = S.GridGenerator(d, transform_type="warp", target_shape=(7, 7))  # ignored, as in MXNet 1.9.1
    assert gw.infer_shape(data=(2, 2, 3, 4)) == ([(2, 2, 3, 4)], [(2, 2, 3, 4)], [])
    assert gw.infer_shape_partial(data=(0, 2, 3, 4))[1] == [(0, 2, 3, 4)]
    bs = S.BilinearSampler(d, g)
    assert bs.infer_shape(data=(2, 3, 4, 5), grid=(2, 2, 6, 7)) == ([(2, 3, 4, 5), (2, 2, 6, 7)], [(2, 3, 6, 7)], [])
    # MXNet 1.9.1 infers nothing unless both shapes are known; jbind fills what they fix
    assert bs.infer_shape_partial(data=(2, 3, 4, 5)) == ([(2, 3, 4, 5), (2, 2, 0, 0)], [(2, 3, 0, 0)], [])
    assert bs.infer_shape_partial(grid=(2, 2, 6, 7)) == ([(2, 0, 0, 0), (2, 2, 6, 7)], [(2, 0, 6, 7)], [])
    st = S.SpatialTransformer(d, l, target_shape=(3, 4), **ST)
    assert st.infer_shape(data=(2, 3, 4, 5), loc=(2, 6)) == ([(2, 3, 4, 5), (2, 6)], [(2, 3, 3, 4)], [])
    # MXNet 1.9.1 needs loc's shape too; data's fixes it, (N, 6)
    assert st.infer_shape(data=(2, 3, 4, 5)) == ([(2, 3, 4, 5), (2, 6)], [(2, 3, 3, 4)], [])
    assert st.infer_shape_partial(loc=(2, 6)) == ([(2, 0, 0, 0), (2, 6)], [(2, 0, 3, 4)], [])


def test_bad_shapes_raise_naming_the_op_and_the_shapes():
    d, l, g = V("data"), V("loc"), V("grid")
    E = mx.base.ShapeError
    gg = S.GridGenerator(d, transform_type="affine", target_shape=(3, 4), name="gg")
    raises_naming(lambda: gg.infer_shape(data=(2, 6, 1)), "GridGenerator", "'gg'", "(2, 6, 1)", "2 dims", cls=E)
    raises_naming(lambda: gg.infer_shape(data=(2, 5)), "GridGenerator", "'gg'", "(2, 5)", "(batch, 6)", cls=E)
    gw = S.GridGenerator(d, transform_type="warp", name="gw")
    raises_naming(lambda: gw.infer_shape(data=(2, 2, 3)), "GridGenerator", "'gw'", "(2, 2, 3)", "4 dims", cls=E)
    raises_naming(lambda: gw.infer_shape(data=(2, 3, 3, 4)), "GridGenerator", "(2, 3, 3, 4)", "(batch, 2, H, W)",
                  cls=E)
    # MXNet 1.9.1 divides by (1 - 1) / 2: NaN and inf coordinates
    raises_naming(lambda: gw.infer_shape(data=(1, 2, 1, 3)), "GridGenerator", "(1, 2, 1, 3)", "at least 2", cls=E)
    bs = S.BilinearSampler(d, g, name="bs")
    raises_naming(lambda: bs.infer_shape(data=(2, 3, 4), grid=(2, 2, 6, 7)), "BilinearSampler", "'bs'",
                  "data (2, 3, 4)", "4 dims", cls=E)
    raises_naming(lambda: bs.infer_shape(data=(2, 3, 4, 5), grid=(2, 2, 6)), "BilinearSampler", "grid (2, 2, 6)",
                  "4 dims", cls=E)
    raises_naming(lambda: bs.infer_shape(data=(2, 3, 4, 5), grid=(3, 2, 6, 7)), "BilinearSampler", "'bs'",
                  "batch", "2 vs 3", cls=E)
    raises_naming(lambda: bs.infer_shape(data=(2, 3, 4, 5), grid=(2, 3, 6, 7)), "BilinearSampler",
                  "grid (2, 3, 6, 7)", "(batch, 2, Ho, Wo)", cls=E)
    st = S.SpatialTransformer(d, l, target_shape=(3, 4), name="st", **ST)
    raises_naming(lambda: st.infer_shape(data=(2, 3, 4), loc=(2, 6)), "SpatialTransformer", "'st'",
                  "data (2, 3, 4)", "4 dims", cls=E)
    raises_naming(lambda: st.infer_shape(data=(2, 3, 4, 5), loc=(2, 5)), "SpatialTransformer", "loc (2, 5)",
                  "(batch, 6)", cls=E)
    raises_naming(lambda: st.infer_shape(data=(2, 3, 4, 5), loc=(2, 6, 1)), "SpatialTransformer",
                  "loc (2, 6, 1)", "2 dims", cls=E)
    # MXNet 1.9.1 takes loc (3, 6) for data (2, ...) in infer_shape and fails in the forward
    raises_naming(lambda: st.infer_shape(data=(2, 3, 4, 5), loc=(3, 6)), "SpatialTransformer", "'st'",
                  "loc (3, 6)", "2 vs 3", cls=E)


def test_bad_parameters_raise_naming_the_op_and_the_value():
    d, l = V("data"), V("loc")
    P = mx.base.ParamError
    for make, needles in [
        (lambda: S.GridGenerator(d), ["GridGenerator", "transform_type"]),
        (lambda: S.GridGenerator(d, transform_type="foo"), ["GridGenerator", "'foo'", "'affine', 'warp'"]),
        # MXNet 1.9.1 fails in infer_shape ("incorrect target_shape: 0")
        (lambda: S.GridGenerator(d, transform_type="affine"), ["GridGenerator", "target_shape", "(0, 0)"]),
        # MXNet 1.9.1 gives NaN coordinates for a dim of 1, reads the first two of three dims
        (lambda: S.GridGenerator(d, transform_type="affine", target_shape=(1, 3)), ["GridGenerator", "(1, 3)"]),
        (lambda: S.GridGenerator(d, transform_type="affine", target_shape=(2, 3, 4)), ["GridGenerator", "(2, 3, 4)"]),
        (lambda: S.SpatialTransformer(d, l, target_shape=(3, 4)),
         ["SpatialTransformer", "transform_type", "sampler_type"]),
        (lambda: S.SpatialTransformer(d, l, target_shape=(3, 4), transform_type="warp", sampler_type="bilinear"),
         ["SpatialTransformer", "'warp'", "'affine'"]),
        (lambda: S.SpatialTransformer(d, l, target_shape=(3, 4), transform_type="affine", sampler_type="nearest"),
         ["SpatialTransformer", "'nearest'", "'bilinear'"]),
        (lambda: S.SpatialTransformer(d, l, **ST), ["SpatialTransformer", "target_shape", "(0, 0)"]),
        (lambda: S.SpatialTransformer(d, l, target_shape=(3, -1), **ST), ["SpatialTransformer", "(3, -1)"]),
        (lambda: S.BilinearSampler(d, l, cudnn_off="maybe"), ["BilinearSampler", "cudnn_off", "'maybe'"]),
    ]:
        raises_naming(make, *needles, cls=P)
    # warp ignores target_shape, as MXNet 1.9.1
    assert S.GridGenerator(d, transform_type="warp", target_shape=(5,)).infer_shape(data=(1, 2, 2, 3))[1] == \
        [(1, 2, 2, 3)]


def test_dtypes():
    d, l, g = V("data"), V("loc"), V("grid")
    bs = S.BilinearSampler(d, g, name="bs")
    assert bs.infer_type(data="float64") == ([np.float64, np.float64], [np.float64], [])
    assert S.SpatialTransformer(d, l, target_shape=(2, 2), **ST).infer_type(loc="float16")[1] == [np.float16]
    D = mx.base.DTypeError
    # MXNet 1.9.1 infers int32 and fails at bind ("only support floating point types")
    raises_naming(lambda: bs.infer_type(data="int32"), "BilinearSampler", "'bs'", "int32", cls=D)
    raises_naming(lambda: bs.infer_type(data="float32", grid="float64"), "BilinearSampler", "float64",
                  "float32", cls=D)
    # MXNet 1.9.1 has GridGenerator kernels for float32 only ("Other DTypes are not supported!" at bind)
    gg = S.GridGenerator(d, transform_type="warp", name="gw")
    assert gg.infer_type(data="float32")[1] == [np.float32]
    raises_naming(lambda: gg.infer_type(data="float64"), "GridGenerator", "'gw'", "float64", "float32", cls=D)
    data = mx.nd.array(np.full((1, 1, 2, 2), 3.0), dtype="float16")
    out = mx.nd.BilinearSampler(data, mx.nd.array(np.zeros((1, 2, 1, 1)), dtype="float16"))
    assert out.dtype == np.float16 and out.asnumpy().item() == 3.0
