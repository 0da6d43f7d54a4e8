import copy
import json
import pickle

import numpy as np
import pytest

import jbind as mx


def mlp(prefix=""):
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data=data, num_hidden=10, name=prefix + "fc1")
    act = mx.sym.Activation(fc, act_type="relu", name=prefix + "relu1")
    return mx.sym.SoftmaxOutput(act, name=prefix + "softmax")


def test_issue_example_lists():
    net = mlp()
    assert net.list_arguments() == ["data", "fc1_weight", "fc1_bias", "softmax_label"]
    assert net.list_outputs() == ["softmax_output"]
    assert net.list_auxiliary_states() == []
    assert net.list_inputs() == net.list_arguments()
    assert net.name == "softmax"


def test_auto_naming_and_prefix():
    with mx.name.NameManager():
        a = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=3)
        b = mx.sym.FullyConnected(a, num_hidden=3)
        assert (a.name, b.name) == ("fullyconnected0", "fullyconnected1")
        assert b.list_arguments()[-2:] == ["fullyconnected1_weight", "fullyconnected1_bias"]
    with mx.name.Prefix("p_"):
        c = mx.sym.Activation(mx.sym.Variable("y"), act_type="relu")
        d = mx.sym.Activation(c, act_type="relu", name="named")
    assert c.name == "p_activation0" and d.name == "p_named"
    assert d.list_arguments() == ["y"], "variables are not prefixed"


def test_getitem_internals_children():
    net = mlp()
    internals = net.get_internals()
    assert internals.list_outputs() == ["data", "fc1_weight", "fc1_bias", "fc1_output", "relu1_output",
                                        "softmax_label", "softmax_output"]
    fc = internals["fc1_output"]
    assert fc.list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    assert internals[3].name == "fc1"
    assert net.get_children().list_outputs() == ["relu1_output", "softmax_label"]
    assert mx.sym.Variable("v").get_children() is None
    with pytest.raises(ValueError, match="no output named"):
        internals["nope"]
    with pytest.raises(IndexError):
        net[3]


def test_group_and_iteration():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    g = mx.sym.Group([mx.sym.Activation(a, act_type="relu", name="r"), b])
    assert g.list_outputs() == ["r_output", "b"]
    assert len(g) == 2 and [s.name for s in g] == ["r", "b"]
    assert g.name is None


def test_attributes():
    v = mx.sym.Variable("w", shape=(3, 4), lr_mult=2.0, wd_mult=0.5, dtype="float16", init="zeros")
    assert v.attr("__shape__") == "(3, 4)"
    assert v.attr("__dtype__") == "2"
    assert v.list_attr()["lr_mult"] == "2.0"
    with mx.AttrScope(ctx_group="dev1"):
        fc = mx.sym.FullyConnected(v, num_hidden=3, name="fc")
    d = fc.attr_dict()
    assert d["fc"]["num_hidden"] == "3" and d["fc"]["ctx_group"] == "dev1"
    assert d["fc_bias"]["num_hidden"] == "3", "MXNet copies op attributes onto the variables it creates"
    with pytest.raises(ValueError, match="double underscores"):
        mx.sym.Variable("x", foo="bar")


def test_arithmetic_names_and_scalar_strings():
    with mx.name.NameManager():
        a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
        outs = [a + b, a * 2, -a, 1.0 - a, a / b, a ** 2, 2 ** a]
    names = [o.name for o in outs]
    assert names == ["_plus0", "_mulscalar0", "_mulscalar1", "_rminusscalar0", "_div0", "_powerscalar0",
                     "_rpower_scalar0"]
    assert outs[1].attr("scalar") == "2" and outs[2].attr("scalar") == "-1.0"


def test_fingerprint_is_structural():
    assert mlp().fingerprint == mlp().fingerprint
    assert mlp().fingerprint != mlp("x").fingerprint  # argument names differ
    data = mx.sym.Variable("data")
    a = mx.sym.FullyConnected(data, num_hidden=10, name="fc")
    b = mx.sym.FullyConnected(data, num_hidden="10", name="fc")
    c = mx.sym.FullyConnected(data, num_hidden=11, name="fc")
    assert a.fingerprint == b.fingerprint != c.fingerprint
    # op node names do not change the computation, so they are not part of the key
    assert mx.sym.Activation(data, act_type="relu", name="r1").fingerprint == \
        mx.sym.Activation(data, act_type="relu", name="r2").fingerprint


def test_symbols_are_immutable_under_composition():
    x = mx.sym.Variable("x")
    net = mx.sym.Activation(x, act_type="relu", name="r")
    y = mx.sym.FullyConnected(mx.sym.Variable("z"), num_hidden=2, name="fc")
    composed = net(x=y)
    assert net.list_arguments() == ["x"]
    assert composed.list_arguments() == ["z", "fc_weight", "fc_bias"]


def test_json_edges_carry_mxnets_versions_of_aux_states():
    """MXNet 1.9.1 writes an aux state's edge with the variable's version: how many ops
    have written it so far (BatchNorm's moving statistics: 1; shared by a second: 2)."""
    x, mm, mv = mx.sym.Variable("x"), mx.sym.Variable("mm"), mx.sym.Variable("mv")
    a = mx.sym.BatchNorm(x, moving_mean=mm, moving_var=mv, name="bn")
    b = mx.sym.BatchNorm(a, moving_mean=mm, moving_var=mv, name="bn2")
    ops = [n for n in json.loads(b.tojson())["nodes"] if n["op"] != "null"]
    assert [n["inputs"] for n in ops] == [  # MXNet 1.9.1's tojson of the same graph
        [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 1], [4, 0, 1]],
        [[5, 0, 0], [6, 0, 0], [7, 0, 0], [3, 0, 2], [4, 0, 2]]]
    assert mx.sym.load_json(b.tojson()).tojson() == b.tojson()


def test_tojson_writes_mxnets_files_byte_for_byte():
    """MXNet 1.9.1's own -symbol.json files (tests/golden/e2e/) load and save again as the
    same bytes: dmlc's layout, node attributes in key order, MXNet's edge versions and
    hidden outputs (Dropout's mask, max Pooling's workspace in pip's oneDNN build)."""
    import pathlib
    files = sorted((pathlib.Path(__file__).parent / "golden" / "e2e").glob("*-symbol.json"))
    assert len(files) == 4
    for f in files:
        text = f.read_text()
        assert mx.sym.load_json(text).tojson() == text, f.name
    x = mx.sym.Variable("x")  # MXNet: [0, 1, 3], [0, 1, 2], [0, 1, 3] (NCHW max: a workspace)
    rows = [json.loads(s.tojson())["node_row_ptr"] for s in
            (mx.sym.Pooling(x, kernel=(2, 2)), mx.sym.Pooling(x, kernel=(2, 2), layout="NHWC"), mx.sym.Dropout(x))]
    assert rows == [[0, 1, 3], [0, 1, 2], [0, 1, 3]]


def test_json_round_trip(tmp_path):
    net = mlp()
    text = net.tojson()
    again = mx.sym.load_json(text)
    assert again.list_arguments() == net.list_arguments()
    assert again.list_outputs() == net.list_outputs()
    assert again.fingerprint == net.fingerprint
    assert again.tojson() == text
    path = tmp_path / "net-symbol.json"
    net.save(str(path))
    assert mx.sym.load(str(path)).fingerprint == net.fingerprint
    assert pickle.loads(pickle.dumps(net)).fingerprint == net.fingerprint
    assert copy.deepcopy(net).fingerprint == net.fingerprint


def test_json_layouts_and_bad_json(tmp_path):
    legacy = ('{"nodes": [{"op": "null", "name": "data", "inputs": []},'
              '{"op": "null", "name": "fc_weight", "param": {}, "inputs": []},'
              '{"op": "null", "name": "fc_bias", "inputs": []},'
              '{"op": "FullyConnected", "name": "fc", "param": {"num_hidden": "4"}, "inputs": [[0,0],[1,0],[2,0]]}],'
              '"arg_nodes": [0,1,2], "heads": [[3,0]]}')
    sym = mx.sym.load_json(legacy)
    assert sym.infer_shape(data=(2, 3))[1] == [(2, 4)]
    with pytest.raises(mx.base.MXNetError, match="not valid JSON"):
        mx.sym.load_json("{")
    with pytest.raises(mx.base.MXNetError, match="unknown operator 'Bogus'"):
        mx.sym.load_json('{"nodes": [{"op": "Bogus", "name": "b", "inputs": []}], "heads": [[0,0,0]]}')
    with pytest.raises(mx.base.MXNetError, match="has 1 inputs, expected 3"):
        mx.sym.load_json('{"nodes": [{"op": "null", "name": "d", "inputs": []},'
                         '{"op": "FullyConnected", "name": "fc", "attrs": {"num_hidden": "2"}, '
                         '"inputs": [[0,0,0]]}], "heads": [[1,0,0]], "attrs": {"mxnet_version": ["int", 10901]}}')
    with pytest.raises(mx.base.MXNetError, match="cannot read symbol file"):
        mx.sym.load(str(tmp_path / "missing.json"))


def test_unknown_and_bad_parameters():
    x = mx.sym.Variable("x")
    with pytest.raises(mx.base.MXNetError, match="unknown parameter.*'num_hiden'.*known parameters are num_hidden"):
        mx.sym.FullyConnected(x, num_hiden=3)
    with pytest.raises(mx.base.MXNetError, match="act_type.*must be one of"):
        mx.sym.Activation(x, act_type="swish")
    with pytest.raises(mx.base.MXNetError, match="required parameter"):
        mx.sym.FullyConnected(x)
    with pytest.raises(mx.base.MXNetError, match="cannot parse parameter num_hidden='ten'"):
        mx.sym.FullyConnected(x, num_hidden="ten")


def test_tojson_removes_amp_casts_feeding_other_nodes_as_mxnet():
    """MXNet's tojson/save drop the amp_cast / amp_multicast nodes other nodes read (their
    readers read the casts' inputs); a cast that is an output stays. Layouts read from
    MXNet 1.9.1."""
    import json
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    c = mx.sym.amp_cast(x, dtype="float16", name="c1")
    m = mx.sym.amp_multicast(c, y, num_outputs=2, name="mc")
    out = mx.sym.amp_cast(mx.sym.broadcast_add(m[0], m[1], name="add"), dtype="float32", name="c2")
    g = mx.sym.Group([out, mx.sym.relu(c, name="r")])

    def layout(text):
        doc = json.loads(text)
        return [(n["op"], n["name"], [i[:2] for i in n["inputs"]]) for n in doc["nodes"]], doc["heads"]
    assert layout(g.tojson()) == (
        [("null", "x", []), ("null", "y", []), ("broadcast_add", "add", [[0, 0], [1, 0]]),
         ("amp_cast", "c2", [[2, 0]]), ("relu", "r", [[0, 0]])], [[3, 0, 0], [4, 0, 0]])
    assert layout(g.tojson(remove_amp_cast=False)) == (
        [("null", "x", []), ("amp_cast", "c1", [[0, 0]]), ("null", "y", []),
         ("amp_multicast", "mc", [[1, 0], [2, 0]]), ("broadcast_add", "add", [[3, 0], [3, 1]]),
         ("amp_cast", "c2", [[4, 0]]), ("relu", "r", [[1, 0]])], [[5, 0, 0], [6, 0, 0]])
    assert g.list_outputs() == ["c2_output", "r_output"]  # the symbol itself keeps its casts


def test_aux_states_by_name_or_after_the_arguments_as_mxnet():
    """MXNet 1.9.1: BatchNorm(x, moving_mean=mm) lists ['mm', 'bn_moving_var']; aux states
    may also follow the arguments positionally."""
    x = mx.sym.Variable("x")
    named = mx.sym.BatchNorm(x, moving_mean=mx.sym.Variable("mm"), name="bn")
    assert named.list_auxiliary_states() == ["mm", "bn_moving_var"]
    assert named.list_arguments() == ["x", "bn_gamma", "bn_beta"]
    V = mx.sym.Variable
    positional = mx.sym.BatchNorm(x, V("g"), V("b"), V("m1"), V("v1"), name="bn")
    assert positional.list_auxiliary_states() == ["m1", "v1"] and positional.list_arguments() == ["x", "g", "b"]
    with pytest.raises(mx.base.MXNetError, match="given twice"):
        mx.sym.BatchNorm(x, V("g"), V("b"), V("m1"), moving_mean=V("m2"))


def test_a_bad_parameter_names_the_node():
    with pytest.raises(mx.base.MXNetError, match="FullyConnected 'fc7'"):
        mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden="many", name="fc7")


def test_hidden_keys_of_op_nodes_are_stored_as_mxnet_stores_them():
    """AttrScope(ctx_group=...) on an op node: `__ctx_group__` in the JSON, listed both ways,
    and `attr('ctx_group')` finds it (MXNet 1.9.1)."""
    with mx.AttrScope(ctx_group="dev1", mood="calm"):
        net = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=2, name="s")
        w = mx.sym.Variable("w", lr_mult=2)
    node = json.loads(net.tojson())["nodes"][-1]["attrs"]
    assert node == {"__ctx_group__": "dev1", "mood": "calm", "num_hidden": "2"}
    assert net.list_attr() == {"__ctx_group__": "dev1", "ctx_group": "dev1", "mood": "calm", "num_hidden": "2"}
    assert net.attr("ctx_group") == net.attr("__ctx_group__") == "dev1"
    assert w.attr("lr_mult") == w.attr("__lr_mult__") == "2"
