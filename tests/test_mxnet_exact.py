"""Small behaviours of MXNet 1.9.1 that MXNet code leans on (issue 18 part 7)."""
import numpy as np
import pytest

import jbind as mx


def test_prelu_gamma_starts_at_a_quarter():
    s = mx.sym.LeakyReLU(mx.sym.var("data"), act_type="prelu", name="pr")
    assert s.attr_dict()["pr_gamma"]["__init__"] == '["Constant", {"value": 0.25}]'
    m = mx.mod.Module(s, data_names=["data"], label_names=None)
    m.bind([("data", (2, 3))])
    m.init_params(mx.init.Xavier())
    np.testing.assert_allclose(m.get_params()[0]["pr_gamma"].asnumpy(), [0.25] * 3)
    # a gamma the user gives keeps its own initialiser
    g = mx.sym.var("g", init=mx.init.One())
    assert "Constant" not in mx.sym.LeakyReLU(mx.sym.var("data"), g, act_type="prelu").attr_dict()["g"]["__init__"]


def test_lr_mult_keyword_on_an_op_reaches_its_variables():
    s = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc", lr_mult=2, wd_mult=0)
    attrs = s.attr_dict()
    assert attrs["fc_weight"]["__lr_mult__"] == "2" and attrs["fc_bias"]["__wd_mult__"] == "0"
    assert "__lr_mult__" not in attrs.get("data", {})
    opt = mx.optimizer.SGD(learning_rate=0.1, sym=s, param_idx2name={0: "fc_weight", 1: "fc_bias"})
    assert opt.lr_mult == {"fc_weight": 2.0, "fc_bias": 2.0}
    with pytest.raises(mx.base.MXNetError, match="weight_lr_mult is deprecated"):
        mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, weight_lr_mult=2)


def test_pcc_metric():
    fp, fn, tp, tn = 1000, 1, 10000, 1
    preds = [mx.nd.array([[.3, .7]] * fp + [[.7, .3]] * tn + [[.7, .3]] * fn + [[.3, .7]] * tp)]
    labels = [mx.nd.array([0] * (fp + tn) + [1] * (fn + tp))]
    pcc = mx.metric.create("pcc")
    pcc.update(labels, preds)
    # binary PCC is the Matthews coefficient: (tp*tn - fp*fn) / sqrt(...)
    mcc = (tp * tn - fp * fn) / np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    assert pcc.get()[0] == "pcc" and abs(pcc.get()[1] - mcc) < 1e-12


def test_pcc_grows_with_classes_and_keeps_global_stats():
    pcc = mx.metric.PCC()
    pcc.update([mx.nd.array([0, 1, 2, 2])], [mx.nd.array([0, 1, 2, 2])])  # class indices
    assert pcc.get()[1] == pytest.approx(1.0) and pcc.k == 3
    pcc.reset_local()
    assert np.isnan(pcc.get()[1])
    pcc.update([mx.nd.array([0, 1])], [mx.nd.array([[0.9, 0.1, 0.0], [0.2, 0.1, 0.7]])])
    cm = np.zeros((3, 3))
    for p, l in [(0, 0), (1, 1), (2, 2), (2, 2), (0, 0), (2, 1)]:
        cm[p, l] += 1
    n, x, y = cm.sum(), cm.sum(1), cm.sum(0)
    want = (np.trace(cm) * n - x @ y) / np.sqrt(np.sum(x * (n - x)) * np.sum(y * (n - y)))
    assert pcc.get_global()[1] == pytest.approx(want)


@pytest.mark.parametrize("xshape,gshape", [((3, 4), (4,)), ((3, 4), (3, 4)), ((3, 4, 2, 2), (3, 4)),
                                           ((3, 4, 2, 2), (1,)), ((3, 4, 2, 2), (4,))])
def test_prelu_gamma_covers_axes_one_and_zero(xshape, gshape):
    rng = np.random.default_rng(1)
    x, g = rng.uniform(-1, 1, xshape), rng.uniform(0, 1, gshape)
    y = mx.sym.LeakyReLU(mx.sym.var("x"), mx.sym.var("g"), act_type="prelu")
    got = y.eval(x=mx.nd.array(x), g=mx.nd.array(g))[0].asnumpy()
    gb = g.reshape(gshape + (1,) * (len(xshape) - len(gshape))) if len(gshape) == 2 else \
        g.reshape((1, -1) + (1,) * (len(xshape) - 2))
    np.testing.assert_allclose(got, np.where(x > 0, x, x * gb), rtol=1e-6)


def test_prelu_rejects_a_gamma_that_does_not_fit():
    y = mx.sym.LeakyReLU(mx.sym.var("x"), mx.sym.var("g"), act_type="prelu")
    with pytest.raises(mx.base.MXNetError, match="cannot broadcast gamma"):
        y.infer_shape(x=(3, 4), g=(5,))


def test_creation_shape_minus_one_is_unknown():
    b = mx.sym.ones(shape=[2, -1]) + mx.sym.transpose(mx.sym.ones(shape=[3, -1]))
    assert b.bind(mx.cpu(), args={}).forward()[0].shape == (2, 3)
