"""Metrics against MXNet 1.9.1 (tests/golden/optimizer/metric.json, from make_optimizer_golden.py)."""
import importlib.util
import json
import math
import pathlib

import numpy as np
import pytest

import jbind as mx

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
_spec = importlib.util.spec_from_file_location("jbind_train_cases", GOLDEN / "train_cases.py")
tc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tc)
EXPECTED = json.loads((GOLDEN / "optimizer" / "metric.json").read_text())


def _check(got, want):
    assert [n for n, _ in got] == [n for n, _ in want]
    for (_, g), (_, w) in zip(got, want):
        assert g == pytest.approx(w, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("as_numpy", [False, True], ids=["ndarray", "numpy"])
@pytest.mark.parametrize("name", sorted(tc.METRIC_CASES))
def test_matches_mxnet(name, as_numpy):
    exp = EXPECTED[name]
    metric = tc.make_metric(mx, name)
    wrap = (lambda x: np.asarray(x, np.float32)) if as_numpy else (lambda x: mx.nd.array(np.asarray(x, np.float32)))
    for (labels, preds), value, global_value in zip(exp["batches"], exp["values"], exp["global_values"]):
        metric.update([wrap(x) for x in labels], [wrap(x) for x in preds])
        _check(metric.get_name_value(), value)
        # MXNet 1.9.1's micro Pearson has no global sums: its get_global() is 0.0 (README)
        _check(metric.get_global_name_value(), value if name == "pearsonr_micro" else global_value)
    assert float(getattr(metric, "num_inst", 0)) == exp["num_inst"]


def test_perplexity_is_exp_of_mean_negative_log():
    """The docstring example of MXNet: labels [0, 1, 1], p = [0.3, 1.0, 0.6]."""
    m = mx.metric.Perplexity(ignore_label=None)
    m.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.3, 0.7], [0, 1.0], [0.4, 0.6]])])
    assert m.get() == ("perplexity", pytest.approx(1.7710976285155853, rel=1e-6))
    ign = mx.metric.Perplexity(ignore_label=1)
    ign.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.3, 0.7], [0, 1.0], [0.4, 0.6]])])
    assert ign.num_inst == 1 and ign.get()[1] == pytest.approx(1 / 0.3, rel=1e-6)


def test_reset_nan_and_local():
    m = mx.metric.create("acc")
    assert m.get()[0] == "accuracy" and math.isnan(m.get()[1])
    m.update([mx.nd.array([0, 1])], [mx.nd.array([[1, 0], [1, 0]])])
    m.reset_local()
    assert math.isnan(m.get()[1]) and m.get_global()[1] == 0.5
    m.reset()
    assert math.isnan(m.get_global()[1])
    assert str(mx.metric.create("mse")) == "EvalMetric: {'mse': nan}"


def test_create_forms_and_errors():
    assert isinstance(mx.metric.create("ACC"), mx.metric.Accuracy)
    assert isinstance(mx.metric.create(mx.metric.MAE()), mx.metric.MAE)
    comp = mx.metric.create(["mse", "rmse"])
    assert isinstance(comp, mx.metric.CompositeEvalMetric) and len(comp.metrics) == 2
    assert mx.metric.create(lambda label, pred: 1.0).name == "custom(<lambda>)"
    cfg = mx.metric.create("top_k_acc", top_k=3).get_config()
    assert cfg["top_k"] == 3 and cfg["metric"] == "TopKAccuracy"
    assert isinstance(mx.metric.create(**{"metric": "f1", "average": "micro"}), mx.metric.F1)
    with pytest.raises(ValueError, match="not registered"):
        mx.metric.create("nosuch")
    with pytest.raises(ValueError, match="does not match"):
        mx.metric.Accuracy().update([mx.nd.zeros(2)], [mx.nd.zeros((2, 2)), mx.nd.zeros((2, 2))])
    with pytest.raises(ValueError, match="binary"):
        mx.metric.F1().update([mx.nd.array([0, 1, 2])], [mx.nd.zeros((3, 2))])


def test_update_dict_selects_names():
    m = mx.metric.Accuracy(output_names=["out"], label_names=["lab"])
    m.update_dict({"lab": mx.nd.array([1, 1]), "other": mx.nd.zeros(2)},
                  {"out": mx.nd.array([[0, 1], [1, 0]]), "x": mx.nd.zeros((2, 2))})
    assert m.get()[1] == 0.5
    comp = mx.metric.CompositeEvalMetric(["acc", "loss"], output_names=["out"])
    comp.update_dict({"lab": mx.nd.array([1, 1])}, {"out": mx.nd.array([[0, 1], [1, 0]]), "x": mx.nd.ones(4)})
    assert comp.get() == (["accuracy", "loss"], [0.5, 0.5])


def test_loss_and_single_array_inputs():
    m = mx.metric.Loss()
    m.update(None, mx.nd.array([1.0, 3.0]))
    assert m.get() == ("loss", 2.0)
    acc = mx.metric.Accuracy()
    acc.update(mx.nd.array([1, 0]), mx.nd.array([[0, 1], [0, 1]]))
    assert acc.get()[1] == 0.5


def test_perplexity_picks_on_the_device_for_accelerator_arrays(monkeypatch):
    """Arrays outside host memory are picked by a jitted gather (only the picked values come
    back); the result equals numpy's in-place read."""
    from jbind.metric import _classification
    rng = np.random.default_rng(0)
    # the prediction on another device than the label (cpu(1) for the GPU), as in a GPU
    # module whose labels come from the iterator in host memory
    pred = mx.nd.array(rng.uniform(0.01, 1, (12, 7)).astype(np.float32), ctx=mx.cpu(1))
    label = mx.nd.array(rng.integers(0, 7, 12).astype(np.float32))
    on_host = mx.metric.Perplexity(ignore_label=3)
    on_host.update([label], [pred])
    monkeypatch.setattr(_classification, "on_host", lambda x: False)
    device = mx.metric.Perplexity(ignore_label=3)
    device.update([label], [pred])
    assert device.num_inst == on_host.num_inst
    np.testing.assert_allclose(device.get()[1], on_host.get()[1], rtol=1e-6)
