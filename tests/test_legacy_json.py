"""Symbol JSON from older MXNet (0.8 to 1.8) and broken symbol files.

The old-style document below is hand-written in MXNet 0.8's layout: parameters under
"param", other attributes under "attr", two-element inputs, "backward_source_id", no
node_row_ptr and no mxnet_version; it uses the legacy operator names. MXNet 1.9.1 loads
it (checked by hand: the same argument, auxiliary and output lists, the same attribute
upgrades and the same outputs to 3e-8) and so must jbind.
"""
import json

import numpy as np
import pytest
from hypothesis import given, strategies as st

import jbind as mx
from helpers import fuzz_settings
from jbind.ops import REGISTRY, get_op


def _node(op, name, inputs=(), param=None, attr=None):
    n = {"op": op, "param": param or {}, "name": name, "inputs": [list(i) for i in inputs],
         "backward_source_id": -1}
    if attr:
        n["attr"] = attr
    return n


OLD_JSON = json.dumps({"nodes": [
    _node("null", "a", attr={"lr_mult": "0.5", "ctx_group": "dev1"}),           # 0
    _node("null", "b"),                                                          # 1
    _node("_Plus", "plus0", [[0, 0], [1, 0]]),                                   # 2  a + b
    _node("_plus", "plus1", [[2, 0], [1, 0]]),                                   # 3  a + 2b
    _node("_add", "add0", [[3, 0], [0, 0]]),                                     # 4  2a + 2b
    _node("elemwise_add", "add1", [[4, 0], [1, 0]]),                             # 5  2a + 3b
    _node("_Minus", "minus0", [[5, 0], [1, 0]]),                                 # 6  2a + 2b
    _node("_sub", "sub0", [[6, 0], [0, 0]]),                                     # 7  a + 2b
    _node("_minus", "minus1", [[7, 0], [1, 0]]),                                 # 8  a + b
    _node("_Mul", "mul0", [[8, 0], [1, 0]]),                                     # 9
    _node("_mul", "mul1", [[9, 0], [0, 0]]),                                     # 10 (a + b) b a
    _node("_plus_scalar", "plusscalar0", [[1, 0]], {"scalar": "3"}),             # 11 b + 3
    _node("_Div", "div0", [[10, 0], [11, 0]]),                                   # 12
    _node("_div", "div1", [[12, 0], [11, 0]]),                                   # 13
    _node("_mul_scalar", "mulscalar0", [[13, 0]], {"scalar": "2"}),              # 14
    _node("_minus_scalar", "minusscalar0", [[14, 0]], {"scalar": "1"}),          # 15
    _node("_div_scalar", "divscalar0", [[15, 0]], {"scalar": "4"}),              # 16
    _node("_rminus_scalar", "rminusscalar0", [[16, 0]], {"scalar": "1"}),        # 17
    _node("_rdiv_scalar", "rdivscalar0", [[11, 0]], {"scalar": "1"}),            # 18
    _node("_Power", "power0", [[11, 0], [18, 0]]),                               # 19
    _node("_power", "power1", [[11, 0], [1, 0]]),                                # 20
    _node("_maximum", "maximum0", [[17, 0], [19, 0]]),                           # 21
    _node("_minimum", "minimum0", [[21, 0], [20, 0]]),                           # 22
    _node("_Maximum", "maximum1", [[22, 0], [0, 0]]),                            # 23
    _node("_Minimum", "minimum1", [[23, 0], [1, 0]]),                            # 24
    _node("Concat", "concat0", [[24, 0], [0, 0]], {"num_args": "2", "dim": "1"}),  # 25 (2, 6)
    _node("Reshape", "reshape0", [[25, 0]], {"shape": "(3, 4)"}),                # 26
    _node("SwapAxis", "swapaxis0", [[26, 0]], {"dim1": "0", "dim2": "1"}),       # 27 (4, 3)
    _node("BlockGrad", "blockgrad0", [[27, 0]]),                                 # 28
    _node("Flatten", "flatten0", [[28, 0]]),                                     # 29
    _node("SoftmaxActivation", "softmaxactivation0", [[29, 0]]),                 # 30
    _node("ElementWiseSum", "elementwisesum0", [[30, 0], [29, 0], [30, 0]], {"num_args": "3"}),  # 31
    _node("Cast", "cast0", [[31, 0]], {"dtype": "float16"}),                     # 32
    _node("cast", "cast1", [[32, 0]], {"dtype": "float32"}),                     # 33
    _node("crop", "crop0", [[33, 0]], {"begin": "(1, 0)", "end": "(3, 2)"}),     # 34 (2, 2)
    _node("concat", "concat1", [[34, 0], [34, 0]], {"num_args": "2", "dim": "0"}),  # 35 (4, 2)
    _node("reshape", "reshape1", [[35, 0]], {"shape": "(2, 4)"}),                # 36
    _node("swapaxes", "swapaxes0", [[36, 0]], {"dim1": "0", "dim2": "1"}),       # 37 (4, 2)
    _node("stop_gradient", "stopgradient0", [[37, 0]]),                          # 38
    _node("add_n", "addn0", [[38, 0], [38, 0]], {"num_args": "2"}),              # 39
    _node("flatten", "flatten1", [[39, 0]]),                                     # 40
    _node("null", "c"), _node("null", "bn_gamma"), _node("null", "bn_beta"),    # 41-43
    # MXNet 0.8 stored no auxiliary states: loading adds bn_moving_mean / bn_moving_var
    _node("BatchNorm", "bn", [[41, 0], [42, 0], [43, 0]], {"eps": "0.001", "fix_gamma": "False"}),  # 44
    _node("null", "x"), _node("null", "fc_weight"), _node("null", "fc_bias"),   # 45-47
    _node("FullyConnected", "fc", [[45, 0], [46, 0], [47, 0]], {"num_hidden": "3", "no_bias": "False"},
          attr={"weight_lr_mult": "2", "bias_wd_mult": "0"}),                    # 48
], "arg_nodes": [0, 1, 41, 42, 43, 45, 46, 47], "heads": [[40, 0], [44, 0], [48, 0]]}, indent=1)


def _reference(a, b, c, bn_gamma, bn_beta, x, fc_weight, fc_bias, bn_moving_mean, bn_moving_var):
    v = ((((2 * a + 3 * b) - b - a - b) * b * a) / (b + 3) / (b + 3)) * 2
    v = 1 - (v - 1) / 4
    v = np.minimum(np.maximum(np.minimum(np.maximum(v, (b + 3) ** (1 / (b + 3))), (b + 3) ** b), a), b)
    v = np.concatenate([v, a], axis=1).reshape(3, 4).T
    e = np.exp(v - v.max(axis=1, keepdims=True))
    s = e / e.sum(axis=1, keepdims=True)
    v = (2 * s + v).astype(np.float16).astype(np.float32)[1:3, 0:2]
    v = np.concatenate([v, v], axis=0).reshape(2, 4).T
    bn = (c - bn_moving_mean) / np.sqrt(bn_moving_var + 1e-3) * bn_gamma + bn_beta
    return [2 * v, bn, x @ fc_weight.T + fc_bias]


def test_old_json_with_legacy_op_names_loads_and_runs(tmp_path):
    path = tmp_path / "old-symbol.json"
    path.write_text(OLD_JSON)
    sym = mx.sym.load(str(path))
    assert sym.list_arguments() == ["a", "b", "c", "bn_gamma", "bn_beta", "x", "fc_weight", "fc_bias"]
    assert sym.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert sym.list_outputs() == ["flatten1_output", "bn_output", "fc_output"]
    attrs = sym.attr_dict()
    assert attrs["a"]["__lr_mult__"] == "0.5" and attrs["a"]["__ctx_group__"] == "dev1"
    assert attrs["fc_weight"]["__lr_mult__"] == "2" and attrs["fc_bias"]["__wd_mult__"] == "0"
    assert "weight_lr_mult" not in attrs["fc"]
    assert attrs["bn_moving_mean"]["__init__"] == '["zero", {}]'
    assert attrs["bn_moving_var"]["__init__"] == '["one", {}]'
    opt = mx.optimizer.SGD(sym=sym, param_idx2name={0: "a", 1: "fc_weight", 2: "fc_bias"})
    assert opt.lr_mult == {"a": 0.5, "fc_weight": 2.0} and opt.wd_mult["fc_bias"] == 0.0

    rng = np.random.RandomState(0)
    shapes = {"a": (2, 3), "b": (2, 3), "c": (2, 3), "bn_gamma": (3,), "bn_beta": (3,), "x": (2, 4),
              "fc_weight": (3, 4), "fc_bias": (3,)}
    vals = {k: rng.uniform(0.1, 1.0, s).astype(np.float32) for k, s in shapes.items()}
    aux = {"bn_moving_mean": rng.uniform(-0.5, 0.5, (3,)).astype(np.float32),
           "bn_moving_var": rng.uniform(0.5, 1.5, (3,)).astype(np.float32)}
    exe = sym.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in vals.items()},
                   aux_states={k: mx.nd.array(v) for k, v in aux.items()}, grad_req="null")
    outs = [o.asnumpy() for o in exe.forward(is_train=False)]
    want = _reference(**{k: v.astype(np.float64) for k, v in {**vals, **aux}.items()})
    for o, w in zip(outs, want):
        np.testing.assert_allclose(o, w, rtol=2e-3, atol=1e-5)  # one float16 round trip in the chain
    again = mx.sym.load_json(sym.tojson())
    assert again.fingerprint == sym.fingerprint
    assert json.loads(sym.tojson())["attrs"]["mxnet_version"] == ["int", 10901]


LEGACY_NAMES = {  # MXNet 1.9.1 name -> the op it is an alias of (checked with its NNGetOpHandle)
    "_plus": "elemwise_add", "_Plus": "elemwise_add", "_add": "elemwise_add", "elemwise_add": "elemwise_add",
    "_sub": "elemwise_sub", "_minus": "elemwise_sub", "_Minus": "elemwise_sub",
    "_mul": "elemwise_mul", "_Mul": "elemwise_mul", "_div": "elemwise_div", "_Div": "elemwise_div",
    "_mul_scalar": "_mul_scalar", "_minus_scalar": "_minus_scalar", "_plus_scalar": "_plus_scalar",
    "_div_scalar": "_div_scalar", "_rminus_scalar": "_rminus_scalar", "_rdiv_scalar": "_rdiv_scalar",
    "_power": "_power", "_Power": "_power", "_maximum": "_maximum", "_Maximum": "_maximum",
    "_minimum": "_minimum", "_Minimum": "_minimum", "Flatten": "Flatten", "flatten": "Flatten",
    "SoftmaxActivation": "SoftmaxActivation", "Concat": "Concat", "concat": "Concat",
    "Reshape": "Reshape", "reshape": "Reshape", "SwapAxis": "SwapAxis", "swapaxes": "SwapAxis",
    "BlockGrad": "BlockGrad", "stop_gradient": "BlockGrad", "ElementWiseSum": "add_n", "add_n": "add_n",
    "Cast": "Cast", "cast": "Cast", "crop": "slice", "Crop": "Crop",
}


def test_legacy_operator_names_resolve():
    for alias, op in LEGACY_NAMES.items():
        assert get_op(alias) is REGISTRY[op], alias


def _doc(nodes, heads, version=None):
    doc = {"nodes": nodes, "arg_nodes": [], "heads": heads}
    if version is not None:
        doc["attrs"] = {"mxnet_version": ["int", version]}
    return json.dumps(doc)


def test_upgrades_apply_only_to_older_files():
    var = {"op": "null", "name": "w", "inputs": [], "attrs": {"lr_mult": "3"}}
    assert "__lr_mult__" in mx.sym.load_json(_doc([var], [[0, 0, 0]], 10800)).attr_dict()["w"]
    assert "__lr_mult__" not in mx.sym.load_json(_doc([var], [[0, 0, 0]], 10901)).attr_dict()["w"]
    arg = [{"op": "null", "name": "x", "inputs": []},
           {"op": "argmax", "name": "am", "attrs": {"axis": "-1"}, "inputs": [[0, 0, 0]]}]
    for version, shape in ((904, (1,)), (905, (2,))):  # MXNet 0.9.5 made axis optional
        assert mx.sym.load_json(_doc(arg, [[1, 0, 0]], version)).infer_shape(x=(2, 3))[1] == [shape]
    fc = [{"op": "null", "name": "x", "inputs": []},
          {"op": "FullyConnected", "name": "fc", "attrs": {"num_hidden": "2"}, "inputs": [[0, 0]]}]
    assert mx.sym.load_json(_doc(fc, [[1, 0]])).list_arguments() == ["x", "fc_weight", "fc_bias"]
    with pytest.raises(mx.base.MXNetError, match="has 1 inputs, expected 3"):
        mx.sym.load_json(_doc(fc, [[1, 0]], 900))


# --- broken files: each a clear MXNetError naming the file and the problem -----------------
_X = {"op": "null", "name": "x", "inputs": []}
_BAD = {
    "self loop": (_doc([_X, {"op": "relu", "name": "r", "inputs": [[1, 0, 0]]}], [[1, 0, 0]], 10901),
                  "node 1 ('r', op 'relu'): input [1, 0, 0] refers to node 1, which does not come before it"),
    "cycle": (_doc([_X, {"op": "relu", "name": "r1", "inputs": [[2, 0, 0]]},
                    {"op": "relu", "name": "r2", "inputs": [[1, 0, 0]]}], [[2, 0, 0]], 10901),
              "refers to node 2, which does not come before it (a cycle"),
    "input out of range": (_doc([_X, {"op": "relu", "name": "r", "inputs": [[7, 0, 0]]}], [[1, 0, 0]], 10901),
                           "refers to node 7"),
    "negative input": (_doc([_X, {"op": "relu", "name": "r", "inputs": [[-1, 0, 0]]}], [[1, 0, 0]], 10901),
                       "refers to node -1"),
    "output index": (_doc([_X, {"op": "relu", "name": "r", "inputs": [[0, 3, 0]]}], [[1, 0, 0]], 10901),
                     "uses output 3 of 'x', which has 1 output(s)"),
    "unknown op": (_doc([_X, {"op": "NoSuchOp", "name": "r", "inputs": [[0, 0, 0]]}], [[1, 0, 0]], 10901),
                   "node 1 ('r', op 'NoSuchOp'): unknown operator 'NoSuchOp'"),
    "missing input": (_doc([_X, {"op": "FullyConnected", "name": "fc", "attrs": {"num_hidden": "2"},
                                 "inputs": [[0, 0, 0]]}], [[1, 0, 0]], 10901),
                      "has 1 inputs, expected 3 (data, weight, bias)"),
    "bad parameter": (_doc([_X, {"op": "FullyConnected", "name": "fc", "attrs": {"num_hidden": "two"},
                                 "inputs": [[0, 0, 0]]}], [[1, 0, 0]], 10901), "cannot parse parameter"),
    "head out of range": (_doc([_X], [[4, 0, 0]], 10901), "malformed head [4, 0, 0]"),
    "head output index": (_doc([_X], [[0, 2, 0]], 10901), "head [0, 2, 0] uses output 2"),
    "no heads": (_doc([_X], [], 10901), "no heads"),
    "bad version": (_doc([_X], [[0, 0, 0]], None).replace('"heads"', '"attrs": {"mxnet_version": "1.9"}, "heads"'),
                    "malformed mxnet_version"),
    "variable with inputs": (_doc([_X, {"op": "null", "name": "y", "inputs": [[0, 0, 0]]}], [[1, 0, 0]], 10901),
                             "a variable has inputs"),
    "not a graph": ('{"nodes": 3, "heads": []}', "not an MXNet symbol JSON"),
    "truncated": ('{"nodes": [{"op": "null", "na', "is not valid JSON"),
}


@pytest.mark.parametrize("case", sorted(_BAD))
def test_broken_symbol_file_raises_naming_file_and_problem(case, tmp_path):
    text, fragment = _BAD[case]
    path = tmp_path / "bad-symbol.json"
    path.write_text(text)
    with pytest.raises(mx.base.MXNetError) as e:
        mx.sym.load(str(path))
    assert fragment in str(e.value) and str(path) in str(e.value)


def test_broken_checkpoint_names_the_file(tmp_path):
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    mx.model.save_checkpoint(str(tmp_path / "m"), 1, sym, {"fc_weight": mx.nd.ones((2, 3))}, {})
    (tmp_path / "m-symbol.json").write_text(_BAD["cycle"][0])
    with pytest.raises(mx.base.MXNetError, match="m-symbol.json.*a cycle"):
        mx.model.load_checkpoint(str(tmp_path / "m"), 1)
    mx.model.save_checkpoint(str(tmp_path / "n"), 1, sym, {"fc_weight": mx.nd.ones((2, 3))}, {})
    blob = (tmp_path / "n-0001.params").read_bytes()
    for bad, fragment in ((b"\x13" + blob[1:], "bad list magic"), (blob[:-5], "truncated"),
                          (blob[:16] + b"\xff" * 8 + blob[24:], "declares")):
        (tmp_path / "n-0001.params").write_bytes(bad)
        with pytest.raises(mx.base.MXNetError, match="n-0001.params.*" + fragment):
            mx.model.load_checkpoint(str(tmp_path / "n"), 1)


# --- fuzz: a valid graph with up to three of its references, ops or versions broken -------
_OPS = {"relu": ({}, 1), "FullyConnected": ({"num_hidden": "3"}, 3), "elemwise_add": ({}, 2), "_Plus": ({}, 2),
        "Concat": ({"num_args": "2"}, 2), "SliceChannel": ({"num_outputs": "2"}, 1), "Dropout": ({}, 1),
        "BatchNorm": ({"fix_gamma": "False", "lr_mult": "2"}, 5), "argmax": ({"axis": "-1"}, 1),
        "Flatten": ({"weight_wd_mult": "0"}, 1)}


@st.composite
def _graphs(draw):
    nodes = [{"op": "null", "name": "x", "inputs": []}]
    for i in range(1, draw(st.integers(2, 8))):
        op = draw(st.sampled_from(sorted(_OPS) + ["null"]))
        attrs, arity = _OPS.get(op, ({}, 0))
        ins = [[draw(st.integers(0, i - 1)), 0, 0] for _ in range(arity)]
        nodes.append({"op": op, "name": f"n{i}", draw(st.sampled_from(["attrs", "attr", "param"])): attrs,
                      "inputs": ins})
    doc = {"nodes": nodes, "heads": [[len(nodes) - 1, 0, 0]]}
    version = draw(st.sampled_from([None, 800, 904, 10600, 10901]))
    if version is not None:
        doc["attrs"] = {"mxnet_version": ["int", version]}
    for _ in range(draw(st.integers(0, 3))):
        node = draw(st.sampled_from(nodes))
        what = draw(st.sampled_from(["src", "index", "drop", "op", "head", "version", "hint"]))
        if what in ("src", "index", "drop") and node["inputs"]:
            inp = draw(st.sampled_from(node["inputs"]))
            if what == "drop":
                node["inputs"].remove(inp)
            else:
                inp[0 if what == "src" else 1] = draw(st.integers(-2, len(nodes) + 1))
        elif what == "op":
            node["op"] = draw(st.sampled_from(sorted(_OPS) + ["null", "NoSuchOp", ""]))
        elif what == "head":
            doc["heads"].append([draw(st.integers(-1, len(nodes))), draw(st.integers(-1, 2))])
        elif what == "hint":  # a variable's shape or dtype hint: any text, never evaluated
            key = draw(st.sampled_from(["__shape__", "__dtype__"]))
            value = draw(st.one_of(st.text(max_size=10), st.lists(st.integers(-2, 2 ** 40), max_size=3).map(str)))
            node.setdefault(draw(st.sampled_from(["attrs", "attr", "param"])), {})[key] = value
        elif what == "version":
            doc["attrs"] = {"mxnet_version": draw(st.sampled_from([["int", 1.5], "1.9", ["int"], None]))}
    return json.dumps(doc)


@fuzz_settings(200)
@given(_graphs())
def test_fuzzed_graph_structure_loads_or_raises_mxnet_error(text):
    try:
        sym = mx.sym.load_json(text)
    except mx.base.MXNetError as e:
        assert str(e).startswith("<json>: ")
        return
    sym.list_arguments(), sym.list_auxiliary_states(), sym.list_outputs()
    assert mx.sym.load_json(sym.tojson()).fingerprint == sym.fingerprint
    for infer in (sym.infer_shape_partial, sym.infer_type_partial):
        try:
            infer()
        except mx.base.MXNetError as e:
            assert str(e)
