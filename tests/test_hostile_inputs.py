"""Small hostile files and malformed input (issue 20, parts 6 and 7): counts, element totals
and the bytes a bind allocates are checked before anything is built; every malformed hint,
parameter, RecordIO index and CSV number is an MXNetError naming what was wrong."""
import json
import os
import time

import numpy as np
import pytest

import jbind as mx
from helpers import raises_naming
from jbind import _limits

V = mx.sym.Variable


def _doc(nodes, heads=None):
    return json.dumps({"nodes": nodes, "arg_nodes": [0], "heads": heads or [[len(nodes) - 1, 0, 0]],
                       "attrs": {"mxnet_version": ["int", 10901]}})


def _var(name="x", **attrs):
    return {"op": "null", "name": name, "attrs": attrs, "inputs": []}


# --- part 6: counts ------------------------------------------------------------------------------
def test_a_224_byte_file_asking_for_a_billion_outputs_is_refused_at_once():
    text = _doc([_var(), {"op": "SliceChannel", "name": "s", "attrs": {"num_outputs": "1000000000"},
                          "inputs": [[0, 0, 0]]}])
    assert len(text) < 260
    start = time.perf_counter()
    raises_naming(lambda: mx.sym.load_json(text), "'s'", "SliceChannel", "num_outputs=1000000000",
                  "JBIND_MAX_COUNT")
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("op, attrs", [
    ("Concat", {"num_args": "500000000"}),
    ("add_n", {"num_args": "500000000"}),
    ("stack", {"num_args": "500000000"}),
    ("khatri_rao", {"num_args": "500000000"}),
    ("UpSampling", {"num_args": "500000000", "scale": "2", "sample_type": "nearest"}),
    ("amp_multicast", {"num_outputs": "500000000"}),
    ("_split_v2", {"sections": "500000000"}),
    ("RNN", {"num_layers": "500000000", "state_size": "4", "mode": "lstm"}),
])
def test_every_count_parameter_is_bounded_before_the_op_is_built(op, attrs):
    text = _doc([_var(), {"op": op, "name": "big", "attrs": attrs, "inputs": [[0, 0, 0]]}])
    raises_naming(lambda: mx.sym.load_json(text), "'big'", "500000000", "JBIND_MAX_COUNT")


def test_the_count_limit_is_generous_and_can_be_changed(monkeypatch):
    x = V("x")
    assert len(mx.sym.SliceChannel(x, num_outputs=5000)) == 5000  # far below the default
    monkeypatch.setenv("JBIND_MAX_COUNT", "10")
    raises_naming(lambda: mx.sym.Concat(*[x] * 11, name="c"), "Concat", "num_args=11", "limit of 10")
    monkeypatch.setenv("JBIND_MAX_COUNT", "ten")
    raises_naming(lambda: mx.sym.Concat(x, x), "JBIND_MAX_COUNT", "'ten'")


# --- part 6: element totals ------------------------------------------------------------------------
def test_a_shape_hint_of_1e11_elements_is_refused_before_numpy_sees_it():
    text = _doc([_var(__shape__="(100000000000,)"), {"op": "relu", "name": "r", "inputs": [[0, 0, 0]]}])
    sym = mx.sym.load_json(text)
    raises_naming(lambda: sym.infer_shape(), "Variable 'x'", "100000000000", "JBIND_MAX_ELEMENTS")
    raises_naming(lambda: sym.simple_bind(mx.cpu()), "Variable 'x'", "100000000000")


def test_inferred_and_given_shapes_are_bounded_too(monkeypatch):
    raises_naming(lambda: mx.sym.zeros(shape=(100000, 1000000), name="z").infer_shape(), "'z'",
                  "100000000000 elements")
    fc = mx.sym.FullyConnected(V("data"), num_hidden=1000000, name="fc")
    raises_naming(lambda: fc.infer_shape(data=(2, 100000)), "FullyConnected 'fc'", "100000000000 elements")
    raises_naming(lambda: mx.sym.relu(V("x")).infer_shape(x=(10 ** 6, 10 ** 6)), "'x'", "elements")
    monkeypatch.setenv("JBIND_MAX_ELEMENTS", "1000")
    raises_naming(lambda: mx.sym.relu(V("x")).infer_shape(x=(10, 101)), "1010 elements", "limit of 1000")
    assert mx.sym.relu(V("x")).infer_shape(x=(10, 100))[1] == [(10, 100)]


# --- part 6: bytes against the device's memory ---------------------------------------------------
def test_available_memory_is_known_on_this_machine():
    have = _limits.available_bytes(mx.cpu().jax_device)
    assert have is not None and have > 0


def test_simple_bind_bind_and_module_bind_refuse_more_than_the_device_has(monkeypatch):
    monkeypatch.setattr(_limits, "available_bytes", lambda device: 100 << 20)
    net = mx.sym.FullyConnected(V("data"), num_hidden=4096, name="fc")  # weight 4096 x 8192: 128 MiB
    raises_naming(lambda: net.simple_bind(mx.cpu(), data=(2, 8192)), "simple_bind", "'fc'", "cpu(0)",
                  "GiB", "available")
    mod = mx.mod.Module(mx.sym.MakeLoss(net), label_names=None, context=mx.cpu())
    raises_naming(lambda: mod.bind(data_shapes=[("data", (2, 8192))]), "binding", "available")
    big = mx.sym.broadcast_to(V("x"), shape=(8192, 8192), name="b")  # the output: 256 MiB
    raises_naming(lambda: big.bind(mx.cpu(), {"x": mx.nd.ones((1, 1))}), "bind of 'b'", "available")
    exe = net.simple_bind(mx.cpu(), data=(2, 100))  # small binds are not held up
    assert exe.arg_dict["fc_weight"].shape == (4096, 100)
    monkeypatch.setenv("JBIND_MEMORY_CHECK", "0")
    assert big.bind(mx.cpu(), {"x": mx.nd.ones((1, 1))}) is not None


def test_a_bind_larger_than_this_machine_is_an_error_not_an_allocation():
    fc = mx.sym.FullyConnected(V("data"), num_hidden=250000, no_bias=True, name="fc")  # 6.25e10 weights
    raises_naming(lambda: fc.simple_bind(mx.cpu(), data=(1, 250000)), "'fc'", "GiB", "available")


# --- part 7: hints, parameters -----------------------------------------------------------------------
@pytest.mark.parametrize("hint", ["(", "(a)", "(1,)*3", "(-1, 2)", "{1: 2}", "((1, 2),)", "1e3", "(2 3)",
                                  "__import__('os').system('touch /tmp/jbind_pwned')", "(" + "9" * 5000 + ",)",
                                  "[" * 10000])
def test_a_bad_shape_hint_is_a_shape_error_naming_the_variable(hint):
    sym = mx.sym.load_json(_doc([_var("w", __shape__=hint), {"op": "relu", "name": "r", "inputs": [[0, 0, 0]]}]))
    raises_naming(sym.infer_shape_partial, "Variable 'w'", "__shape__", cls=mx.base.ShapeError)
    assert not os.path.exists("/tmp/jbind_pwned")


@pytest.mark.parametrize("hint, shape", [("(2, 3)", (2, 3)), ("[2,3]", (2, 3)), ("(5,)", (5,)),
                                         ("(2L, 3L)", (2, 3)), (" ( 0 , 4 ) ", (0, 4))])
def test_shape_hints_in_every_form_mxnet_wrote_still_parse(hint, shape):
    sym = mx.sym.load_json(_doc([_var("w", __shape__=hint), {"op": "relu", "name": "r", "inputs": [[0, 0, 0]]}]))
    assert sym.infer_shape_partial()[0] == [shape]


@pytest.mark.parametrize("hint", ["9", "-1", "x", "float32", "1.0", "99999999999999999999"])
def test_a_bad_dtype_hint_is_a_dtype_error_naming_the_variable(hint):
    sym = mx.sym.load_json(_doc([_var("w", __dtype__=hint), {"op": "relu", "name": "r", "inputs": [[0, 0, 0]]}]))
    raises_naming(sym.infer_type_partial, "Variable 'w'", "__dtype__", cls=mx.base.DTypeError)


def test_bad_shapes_and_dtypes_given_in_python_are_mxnet_errors():
    net = mx.sym.relu(V("x"))
    raises_naming(lambda: net.infer_shape(x=("a", 2)), "'x'")
    raises_naming(lambda: net.simple_bind(mx.cpu(), type_dict={"x": 99}, x=(2,)), "dtype code 99")


def test_a_parameter_nested_past_the_parser_is_a_param_error_naming_the_node():
    text = _doc([_var(), {"op": "sum", "name": "s", "attrs": {"axis": "-" * 100000 + "1"}, "inputs": [[0, 0, 0]]}])
    raises_naming(lambda: mx.sym.load_json(text), "'s'", "axis", "too deeply nested")


def test_control_characters_in_attributes_round_trip():
    """MXNet's writer leaves control characters raw in its JSON and its reader takes them back."""
    sym = mx.sym.relu(V("x", attr={"__note__": "a\x1bb\x01"}), name="r")
    text = sym.tojson()
    assert "\x1b" in text
    assert mx.sym.load_json(text).get_internals()[0].attr("__note__") == "a\x1bb\x01"


@pytest.mark.parametrize("init", ['["constant"]', '["constant", {"nope": 1}]', '{"a": 1}',
                                  '["constant", {"value": "x"}]', "[" * 100000, "nosuch"])
def test_a_malformed_init_attribute_is_an_mxnet_error_naming_the_variable(init):
    text = _doc([{"op": "null", "name": "data", "inputs": []}, _var("w", __init__=init),
                 {"op": "FullyConnected", "name": "fc", "attrs": {"num_hidden": "2", "no_bias": "True"},
                  "inputs": [[0, 0, 0], [1, 0, 0]]}])
    mod = mx.mod.Module(mx.sym.load_json(text), label_names=None, context=mx.cpu())
    mod.bind(data_shapes=[("data", (1, 3))], for_training=False)
    raises_naming(lambda: mod.init_params(mx.init.Uniform()), "w")


def test_a_malformed_lr_mult_attribute_is_an_mxnet_error_naming_the_variable():
    net = mx.sym.FullyConnected(V("data"), weight=V("w", lr_mult="fast"), num_hidden=2, no_bias=True, name="fc")
    raises_naming(lambda: mx.optimizer.SGD(sym=mx.sym.load_json(net.tojson()), param_idx2name={0: "w"}),
                  "'w'", "__lr_mult__", "'fast'")


def test_arrays_shared_with_another_executor_are_not_counted_again(monkeypatch):
    net = mx.sym.FullyConnected(V("data"), num_hidden=4096, name="fc")  # weight 4096 x 8192: 128 MiB
    first = net.simple_bind(mx.cpu(), data=(2, 8192), grad_req="null")
    monkeypatch.setattr(_limits, "available_bytes", lambda device: 100 << 20)
    raises_naming(lambda: net.simple_bind(mx.cpu(), data=(4, 8192), grad_req="null"), "available")
    second = net.simple_bind(mx.cpu(), data=(4, 8192), grad_req="null", shared_exec=first,
                             shared_arg_names=["fc_weight", "fc_bias"])
    assert second.arg_dict["fc_weight"] is first.arg_dict["fc_weight"]
