"""`mx.model.FeedForward`, MXNet 1.x's legacy training API, against MXNet 1.9.1.

The golden cases (tests/golden/feedforward_cases.py, made by make_feedforward_golden.py)
run here with jbind and the same seeds: parameters after training, metrics per batch and
per epoch, predict and score, and numpy's RNG state after the shuffles.
"""
import logging
import pathlib
import pickle
import sys

import numpy as np
import pytest

import jbind as mx

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
sys.path.insert(0, str(GOLDEN))
import feedforward_cases as fc  # noqa: E402

RTOL, ATOL = 1e-5, 1e-6


def _model(*args, **kwargs):
    with pytest.deprecated_call(match="FeedForward has been deprecated"):
        return mx.model.FeedForward(*args, **kwargs)


def _fit(model, *args, **kwargs):
    """fit, whose initializer calls (with plain names) warn as in MXNet."""
    with pytest.deprecated_call(match="Calling initializer with init"):
        model.fit(*args, **kwargs)
    return model


def _trained_numpy(**kwargs):
    """The `numpy` golden case's model, trained."""
    x, y, xv, yv = fc.inputs()
    fc.seed(mx, "numpy")
    kw = dict(fc.NUMPY_KW, initializer=mx.init.Xavier())
    kw.update(kwargs)
    return _fit(_model(fc.net(mx), **kw), x, y, eval_data=(xv, yv))


def _assert_params(model, want):
    for kind, params in (("arg", model.arg_params), ("aux", model.aux_params)):
        names = sorted(k[4:] for k in want if k.startswith(kind + ":"))
        assert sorted(params) == names
        for name in names:
            np.testing.assert_allclose(params[name].asnumpy(), want[f"{kind}:{name}"], rtol=RTOL, atol=ATOL,
                                       err_msg=name)


@pytest.mark.parametrize("case", sorted(fc.CASES))
def test_matches_mxnet(case):
    want = np.load(GOLDEN / "feedforward" / f"{case}.npz")
    with pytest.warns(DeprecationWarning):
        got = fc.CASES[case](mx)
    assert sorted(got) == sorted(want)
    for key in sorted(want):
        np.testing.assert_allclose(np.asarray(got[key]), want[key], rtol=RTOL, atol=ATOL, err_msg=key)


def test_constructor_warns_as_mxnet():
    with pytest.deprecated_call(match="Please use mxnet.mod.Module instead"):
        mx.model.FeedForward(fc.net(mx))


def test_create_is_constructor_plus_fit():
    x, y, xv, yv = fc.inputs()
    fc.seed(mx, "numpy")
    with pytest.deprecated_call():
        model = mx.model.FeedForward.create(fc.net(mx), x, y, eval_data=(xv, yv), initializer=mx.init.Xavier(),
                                            **fc.NUMPY_KW)
    assert isinstance(model, mx.model.FeedForward) and model.num_epoch == 2
    _assert_params(model, np.load(GOLDEN / "feedforward" / "numpy.npz"))


def test_save_load_round_trip(tmp_path):
    model = _trained_numpy()
    prefix = str(tmp_path / "ff")
    model.save(prefix)  # epoch defaults to num_epoch
    sym, args, auxs = mx.model.load_checkpoint(prefix, 2)
    assert sym.tojson() == model.symbol.tojson()
    for mine, loaded in ((model.arg_params, args), (model.aux_params, auxs)):
        assert sorted(mine) == sorted(loaded)
        for k in mine:
            np.testing.assert_array_equal(loaded[k].asnumpy(), mine[k].asnumpy())
    x = fc.inputs()[0]
    with pytest.deprecated_call():
        again = mx.model.FeedForward.load(prefix, 2, numpy_batch_size=8)
    assert again.begin_epoch == 2
    np.testing.assert_array_equal(again.predict(x), model.predict(x))
    model.save(prefix, epoch=7)
    assert (tmp_path / "ff-0007.params").exists()


def test_loaded_model_trains_on_from_begin_epoch(tmp_path):
    """FeedForward.load(..., num_epoch=3) then fit: epoch 2 only, from the saved weights."""
    x, y, _, _ = fc.inputs()
    model = _trained_numpy()
    model.save(str(tmp_path / "ff"))
    with pytest.deprecated_call():
        again = mx.model.FeedForward.load(str(tmp_path / "ff"), 2, **dict(fc.NUMPY_KW, num_epoch=3))
    epochs = []
    again.fit(x, y, batch_end_callback=lambda p: epochs.append(p.epoch))  # every parameter given: no draws
    assert set(epochs) == {2}
    assert not np.allclose(again.arg_params["a_fc_weight"].asnumpy(), model.arg_params["a_fc_weight"].asnumpy())


def test_numpy_ndarray_and_dataiter_inputs_agree():
    x, y, _, _ = fc.inputs()
    model = _trained_numpy()
    want = model.predict(x)
    np.testing.assert_array_equal(model.predict(mx.nd.array(x)), want)
    np.testing.assert_array_equal(model.predict(mx.io.NDArrayIter(x, batch_size=5)), want)
    # training from an NDArray X is training from the numpy X
    fc.seed(mx, "numpy")
    nd_model = _fit(_model(fc.net(mx), initializer=mx.init.Xavier(), **fc.NUMPY_KW), mx.nd.array(x),
                    mx.nd.array(y), eval_data=(mx.nd.array(fc.inputs()[2]), fc.inputs()[3]))
    _assert_params(nd_model, np.load(GOLDEN / "feedforward" / "numpy.npz"))


def test_predict_return_data_without_labels():
    x = fc.inputs()[0]
    model = _trained_numpy()
    out, data, label = model.predict(mx.io.NDArrayIter(x, batch_size=8), return_data=True)
    assert out.shape == (22, 3) and label == []
    np.testing.assert_array_equal(data, x)


def test_callbacks_logging_and_checkpoints(tmp_path, caplog):
    x, y, _, _ = fc.inputs()
    seen, weights = [], []
    fc.seed(mx, "numpy")
    model = _model(fc.net(mx), **fc.NUMPY_KW)
    with caplog.at_level(logging.INFO):
        _fit(model, x, y, batch_end_callback=[lambda p: seen.append((p.epoch, p.nbatch)),
                                              lambda p: weights.append(model.arg_params["a_fc_weight"].asnumpy())],
             epoch_end_callback=mx.callback.do_checkpoint(str(tmp_path / "ck")))
    assert seen == [(0, 1), (0, 2), (1, 1), (1, 2), (1, 3)]  # nbatch counts from 1, as MXNet's FeedForward
    # model.arg_params change at the end of an epoch (here: for the epoch callback), as in MXNet
    assert np.array_equal(weights[0], weights[1]) and np.array_equal(weights[2], weights[4])
    assert not np.array_equal(weights[1], weights[2])
    text = caplog.text
    assert "Start training with [cpu(0)]" in text and "Epoch[1] Resetting Data Iterator" in text
    assert "Epoch[1] Time cost=" in text
    _, args, _ = mx.model.load_checkpoint(str(tmp_path / "ck"), 2)
    np.testing.assert_array_equal(args["a_fc_weight"].asnumpy(), model.arg_params["a_fc_weight"].asnumpy())
    assert (tmp_path / "ck-0001.params").exists()


def test_pickle_keeps_the_model():
    x = fc.inputs()[0]
    model = _trained_numpy()
    want = model.predict(x)
    again = pickle.loads(pickle.dumps(model))
    assert again._pred_exec is None
    np.testing.assert_array_equal(again.predict(x), want)


def test_allow_extra_params():
    model = _trained_numpy()
    x = fc.inputs()[0]
    args = dict(model.arg_params, extra=mx.nd.zeros((2,)))
    with pytest.raises(ValueError, match="extra"):
        _model(fc.net(mx), arg_params=args, aux_params=model.aux_params).predict(x)
    kept = _model(fc.net(mx), arg_params=args, aux_params=model.aux_params, allow_extra_params=True)
    assert "extra" not in kept.arg_params
    np.testing.assert_array_equal(kept.predict(x), model.predict(x))


# --- errors, as MXNet's --------------------------------------------------------------------

@pytest.mark.parametrize("call, err, match", [
    (lambda m, x, y: m.fit(None), TypeError, "X must be DataIter, NDArray or numpy.ndarray"),
    (lambda m, x, y: m.fit(x), ValueError, "y must be specified"),
    (lambda m, x, y: m.fit(x, y[:5]), ValueError, "The numbers of data points and labels not equal"),
    (lambda m, x, y: m.fit(x, list(y)), TypeError, "y must be ndarray"),
    (lambda m, x, y: m.fit(x, np.zeros((22, 2))), ValueError, "Label must be 1D or 2D"),
    (lambda m, x, y: m.fit(x, y, eval_data=(None, None)), ValueError, "Eval data is NONE"),
    (lambda m, x, y: m.fit(x, y, eval_data=5), TypeError, "Eval data must be DataIter"),
    (lambda m, x, y: m.predict(None), TypeError, "X must be DataIter"),
    (lambda m, x, y: m.predict(x), mx.MXNetError, "no parameters yet"),
    (lambda m, x, y: m.save("/nonexistent/p"), mx.MXNetError, "needs an epoch"),
])
def test_bad_input(call, err, match):
    x, y, _, _ = fc.inputs()
    model = _model(fc.net(mx))
    with pytest.raises(err, match=match):
        call(model, x, y)


def test_fit_errors_after_initialization():
    x, y, _, _ = fc.inputs()
    with pytest.raises(TypeError, match="num_epoch"), pytest.deprecated_call():
        _model(fc.net(mx)).fit(x, y)
    with pytest.raises(TypeError, match="rescale_grad"), pytest.deprecated_call():  # FeedForward sets it
        _model(fc.net(mx), num_epoch=1, rescale_grad=1.0).fit(x, y)
    regression = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=1),
                                               name="lro")
    with pytest.raises(mx.MXNetError, match="'softmax_label' is not an input"):  # numpy labels' name
        _model(regression, num_epoch=1).fit(x, y)
    with pytest.raises(TypeError, match="Symbol or a function"), pytest.deprecated_call():
        mx.model.FeedForward("net")


# --- deliberate differences -----------------------------------------------------------------

def test_difference_predict_after_second_fit_uses_new_params():
    """predict after a second fit uses the new weights (MXNet 1.9.1 reuses its first predictor's copy)."""
    x, y, _, _ = fc.inputs()
    model = _trained_numpy()
    before = model.predict(x)
    model.num_epoch, model.begin_epoch = 3, 2
    model.fit(x, y)
    after = model.predict(x)
    assert not np.allclose(after, before)
    fresh = _model(fc.net(mx), arg_params=model.arg_params, aux_params=model.aux_params)
    np.testing.assert_array_equal(fresh.predict(x), after)


def test_difference_sym_gen_with_a_bucket_smaller_than_the_default():
    """A sym_gen model trains on a bucket smaller than the default one (MXNet 1.9.1: 'Cannot reshape array')."""
    sym_gen = fc.bucket_sym_gen(mx)
    data = fc.bucket_iter(mx)
    data.default_bucket_key, data.provide_data = 3, [mx.io.DataDesc("data", (4, 3, 4))]
    mx.random.seed(2)
    model = _fit(_model(sym_gen, num_epoch=1, initializer=mx.init.Xavier(), learning_rate=0.1), data)
    mx.random.seed(2)
    start = _fit(_model(sym_gen, num_epoch=0, initializer=mx.init.Xavier()), data)  # initialization only
    mod = mx.mod.BucketingModule(lambda k: (sym_gen(k), ["data"], ["softmax_label"]), default_bucket_key=3)
    mod.fit(data, num_epoch=1, arg_params=start.arg_params, aux_params=start.aux_params,
            optimizer_params={"learning_rate": 0.1})
    np.testing.assert_allclose(model.arg_params["fc_weight"].asnumpy(),
                               mod.get_params()[0]["fc_weight"].asnumpy(), rtol=1e-6)


def test_difference_ndarray_label_of_shape_n_by_1():
    """An NDArray y of shape (n, 1) is taken as (n,), as a numpy one (MXNet 1.9.1: 'Label must be 1D or 2D')."""
    x, y, xv, yv = fc.inputs()
    fc.seed(mx, "numpy")
    model = _fit(_model(fc.net(mx), initializer=mx.init.Xavier(), **fc.NUMPY_KW), x, mx.nd.array(y[:, None]),
                 eval_data=(xv, yv))
    _assert_params(model, np.load(GOLDEN / "feedforward" / "numpy.npz"))
