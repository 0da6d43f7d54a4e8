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
