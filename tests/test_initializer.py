"""Initializers: deterministic ones against MXNet 1.9.1 (tests/golden/optimizer/initializer.*),
random ones by their distribution, bounds and fan computations."""
import importlib.util
import json
import pathlib
import warnings

import numpy as np
import pytest

import jbind as mx

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
_spec = importlib.util.spec_from_file_location("jbind_train_cases", GOLDEN / "train_cases.py")
tc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tc)
ARRAYS = dict(np.load(GOLDEN / "optimizer" / "initializer.npz"))
META = json.loads((GOLDEN / "optimizer" / "initializer.json").read_text())
CASES = tc.init_cases(mx)


def _run(name):
    init, desc, shape = CASES[name]
    arr = mx.nd.zeros(shape)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        init(desc, arr)
    return arr.asnumpy(), [x.category.__name__ for x in w]


RANDOM = {"desc_fc_weight_quantize"}  # one random int8 broadcast over the array


@pytest.mark.parametrize("name", sorted(n for n in CASES if not n.endswith("_by_attr") and n not in RANDOM))
def test_matches_mxnet(name):
    if name in META["errors"]:
        err = {"ValueError": ValueError, "KeyError": KeyError}[META["errors"][name]]
        with pytest.raises(err):
            _run(name)
        return
    got, warned = _run(name)
    np.testing.assert_allclose(got, ARRAYS[name], rtol=1e-7, atol=0)
    assert warned == META["warnings"][name]


def test_quantized_weight_is_one_random_int8():
    got, _ = _run("desc_fc_weight_quantize")
    assert len(np.unique(got)) == 1 and -127 <= got.flat[0] < 127


def test_fused_rnn_accepts_a_json_init():
    """MXNet 1.9.1 raises KeyError for FusedRNN(init=<dumps() string>), the __init__ attribute form; jbind doesn't."""
    assert META["errors"]["fused_gru_by_attr"] == "KeyError"
    got, _ = _run("fused_gru_by_attr")
    np.testing.assert_array_equal(got, ARRAYS["fused_gru"])


def test_dumps_match_mxnet():
    assert [tc.build_init(mx, spec).dumps() for spec in tc.DUMPS_CASES] == META["dumps"]


@pytest.mark.parametrize("shape", [(64, 100), (32, 16, 3, 3)], ids=["fc", "conv"])
@pytest.mark.parametrize("factor_type", ["avg", "in", "out"])
def test_xavier_uniform_bound(shape, factor_type):
    hw = np.prod(shape[2:]) if len(shape) > 2 else 1
    fan_in, fan_out = shape[1] * hw, shape[0] * hw
    factor = {"avg": (fan_in + fan_out) / 2, "in": fan_in, "out": fan_out}[factor_type]
    bound = np.sqrt(2.34 / factor)
    init = mx.init.Xavier(factor_type=factor_type, magnitude=2.34)
    assert init.scale_for(shape) == pytest.approx(bound)
    arr = mx.nd.zeros(shape)
    init(mx.init.InitDesc("conv_weight"), arr)
    a = arr.asnumpy()
    assert np.abs(a).max() <= bound and np.abs(a).max() > 0.98 * bound
    assert abs(a.mean()) < 0.05 * bound and a.std() == pytest.approx(bound / np.sqrt(3), rel=0.05)


def test_gaussian_initializers_std():
    shape = (64, 32, 3, 3)
    fan_avg = (32 * 9 + 64 * 9) / 2
    for init, std in [(mx.init.Xavier("gaussian", "avg", 3), np.sqrt(3 / fan_avg)),
                      (mx.init.MSRAPrelu(slope=0.25), np.sqrt(2 / (1 + 0.25 ** 2) / fan_avg)),
                      (mx.init.Normal(0.5), 0.5)]:
        arr = mx.nd.zeros(shape)
        init(mx.init.InitDesc("c_weight"), arr)
        assert arr.asnumpy().std() == pytest.approx(std, rel=0.03)
    arr = mx.nd.zeros((50, 40))
    mx.init.Uniform(0.2)(mx.init.InitDesc("u_weight"), arr)
    assert np.abs(arr.asnumpy()).max() <= 0.2 and np.abs(arr.asnumpy()).max() > 0.19


def test_xavier_rejects_vectors():
    with pytest.raises(ValueError, match="at least 2D"):
        mx.init.Xavier()(mx.init.InitDesc("v_weight"), mx.nd.zeros((5,)))


@pytest.mark.parametrize("shape", [(4, 6), (6, 2, 2)])
def test_orthogonal(shape):
    arr = mx.nd.zeros(shape)
    mx.init.Orthogonal(scale=2.0, rand_type="normal")(mx.init.InitDesc("o_weight"), arr)
    m = arr.asnumpy().reshape(shape[0], -1) / 2.0
    gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(gram, np.eye(gram.shape[0]), atol=1e-5)


def test_seed_makes_draws_repeatable():
    def draw():
        arr = mx.nd.zeros((3, 4))
        mx.init.Xavier()(mx.init.InitDesc("x_weight"), arr)
        return arr.asnumpy()

    mx.random.seed(7)
    a = draw()
    mx.random.seed(7)
    np.testing.assert_array_equal(a, draw())
    assert not np.array_equal(a, draw())


def test_create_forms_and_register():
    assert isinstance(mx.init.create("xavier"), mx.init.Xavier)
    x = mx.init.create('["xavier", {"rnd_type": "gaussian", "magnitude": 2}]')
    assert (x.rnd_type, x.magnitude) == ("gaussian", 2.0)
    assert mx.init.create('{"initializer": "normal", "sigma": 0.3}').sigma == 0.3
    assert mx.initializer.create(x) is x
    assert mx.init.create(mx.init.Xavier().dumps()) == mx.init.Xavier()
    with pytest.raises(ValueError, match="not registered"):
        mx.init.create("nosuch")

    @mx.init.register
    @mx.init.alias("halves")
    class Half(mx.init.Initializer):
        def _init_weight(self, _, arr):
            arr[:] = 0.5

    arr = mx.nd.zeros((2,))
    mx.init.Zero()(mx.init.InitDesc("h_weight", attrs={"__init__": "halves"}), arr)
    assert arr.asnumpy().tolist() == [0.5, 0.5]


def test_symbol_init_attribute_overrides_suffix():
    v = mx.sym.Variable("fc_bias", init=mx.init.Constant(3.0))
    arr = mx.nd.zeros((2,))
    mx.init.Uniform()(mx.init.InitDesc("fc_bias", v.attr_dict()["fc_bias"]), arr)
    assert arr.asnumpy().tolist() == [3.0, 3.0]


def test_load_from_file_and_mixed_errors(tmp_path):
    path = str(tmp_path / "p.params")
    mx.nd.save(path, {"arg:w_weight": mx.nd.ones((2, 2))})
    arr = mx.nd.zeros((2, 2))
    mx.init.Load(path)(mx.init.InitDesc("w_weight"), arr)
    assert arr.asnumpy().sum() == 4
    with pytest.raises(ValueError, match="Shape mismatch"):
        mx.init.Load(path)(mx.init.InitDesc("w_weight"), mx.nd.zeros((3,)))
    with pytest.raises(ValueError, match="no default"):
        mx.init.Load(path)(mx.init.InitDesc("other"), arr)
    with pytest.raises(ValueError, match="did not match any pattern"):
        mx.init.Mixed(["bias"], [mx.init.Zero()])(mx.init.InitDesc("fc_weight"), arr)


def test_lstm_bias_sets_forget_quarter():
    arr = mx.nd.ones((12,))
    desc = mx.init.InitDesc("lstm_i2h_bias", attrs={"__init__": mx.init.LSTMBias(2.0).dumps()})
    mx.init.Uniform()(desc, arr)
    assert arr.asnumpy().tolist() == [0] * 3 + [2] * 3 + [0] * 6


@pytest.mark.parametrize("seed", [0, 1, 42, 2 ** 31 - 1, -1, 2 ** 31])
def test_host_key_data_is_jax_key_data(seed):
    import jax

    from jbind.random import key_data
    np.testing.assert_array_equal(key_data(seed), np.asarray(jax.random.key_data(jax.random.key(seed))))
