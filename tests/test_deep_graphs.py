"""Graphs far deeper than Python's recursion limit save, load, pickle, infer, lower and
hash: nothing on those paths recurses once per level of the graph (issue 20, part 4).
A chain of 100,000 cheap ops goes through every path but lowering, which gets a chain
of 3,000 (still three times the recursion limit): XLA takes minutes to compile 100,000
ops, and the lowering walks the same topological order as the other paths."""
import pickle
import sys

import numpy as np
import pytest

import jbind as mx

DEEP = 100_000


def _chain(n):
    x = mx.sym.Variable("data")
    for i in range(n):
        x = mx.sym.relu(x, name=f"r{i}") if i % 2 else mx.sym.negative(x, name=f"n{i}")
    return x


@pytest.fixture(scope="module")
def deep():
    return _chain(DEEP)


def _same_graph(a, b):
    assert a.fingerprint == b.fingerprint
    assert a.list_outputs() == b.list_outputs() and a.list_arguments() == b.list_arguments()


def test_a_100000_node_chain_round_trips_through_json_save_and_pickle(deep, tmp_path):
    assert DEEP > 50 * sys.getrecursionlimit()
    text = deep.tojson()
    loaded = mx.sym.load_json(text)
    _same_graph(loaded, deep)
    assert loaded.get_internals().list_outputs() == deep.get_internals().list_outputs()
    path = tmp_path / "deep-symbol.json"
    deep.save(str(path))
    assert path.read_text() == text
    _same_graph(mx.sym.load(str(path)), deep)
    _same_graph(pickle.loads(pickle.dumps(deep)), deep)


def test_a_100000_node_chain_infers_shapes_and_dtypes(deep):
    _, out_s, _ = deep.infer_shape(data=(2, 3))
    assert out_s == [(2, 3)]
    _, out_t, _ = deep.infer_type(data=np.float16)
    assert out_t == [np.float16]
    assert len(deep.get_internals()) == DEEP + 1


def test_a_chain_three_times_the_recursion_limit_lowers_and_runs():
    n = 3 * sys.getrecursionlimit()
    x = mx.sym.Variable("data")
    for i in range(n):
        x = x + 1.0 if i % 3 else mx.sym.negative(x, name=f"n{i}")
    sym = mx.sym.load_json(x.tojson())
    exe = sym.simple_bind(mx.cpu(), data=(2, 2), grad_req="null")
    v = np.array([[1.0, -2.0], [3.0, -4.5]], np.float32)
    want = v.astype(np.float64)
    for i in range(n):
        want = want + 1.0 if i % 3 else -want
    out = exe.forward(data=mx.nd.array(v))[0].asnumpy()
    np.testing.assert_array_equal(out, want.astype(np.float32))


def test_json_nested_deeper_than_the_parser_can_go_is_an_mxnet_error(tmp_path):
    deep_text = '{"nodes": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(mx.base.MXNetError, match="nested too deeply"):
        mx.sym.load_json(deep_text)
    path = tmp_path / "nested-symbol.json"
    path.write_text(deep_text)
    with pytest.raises(mx.base.MXNetError, match=r"nested-symbol\.json.*nested too deeply"):
        mx.sym.load(str(path))


# --- ResNet-152 (MXNet's example symbol: bottleneck units 3, 8, 36, 3), narrow ----------------
def _unit(x, filters, stride, project, name):
    S = mx.sym
    mid = max(filters // 4, 1)
    bn1 = S.Activation(S.BatchNorm(x, fix_gamma=False, name=name + "_bn1"), act_type="relu")
    c1 = S.Convolution(bn1, num_filter=mid, kernel=(1, 1), no_bias=True, name=name + "_conv1")
    bn2 = S.Activation(S.BatchNorm(c1, fix_gamma=False, name=name + "_bn2"), act_type="relu")
    c2 = S.Convolution(bn2, num_filter=mid, kernel=(3, 3), stride=stride, pad=(1, 1), no_bias=True,
                       name=name + "_conv2")
    bn3 = S.Activation(S.BatchNorm(c2, fix_gamma=False, name=name + "_bn3"), act_type="relu")
    c3 = S.Convolution(bn3, num_filter=filters, kernel=(1, 1), no_bias=True, name=name + "_conv3")
    short = S.Convolution(bn1, num_filter=filters, kernel=(1, 1), stride=stride, no_bias=True,
                          name=name + "_sc") if project else x
    return c3 + short


def resnet152(num_classes=4, widths=(8, 8, 8, 8)):
    S = mx.sym
    x = S.Convolution(S.Variable("data"), num_filter=8, kernel=(3, 3), pad=(1, 1), no_bias=True, name="conv0")
    for stage, (units, width) in enumerate(zip((3, 8, 36, 3), widths)):
        for u in range(units):
            stride = (2, 2) if stage and not u else (1, 1)
            x = _unit(x, width, stride, u == 0, f"stage{stage + 1}_unit{u + 1}")
    x = S.Activation(S.BatchNorm(x, fix_gamma=False, name="bn1"), act_type="relu")
    x = S.Flatten(S.Pooling(x, global_pool=True, kernel=(2, 2), pool_type="avg"))
    return S.SoftmaxOutput(S.FullyConnected(x, num_hidden=num_classes, name="fc1"), name="softmax")


def test_resnet152_goes_through_save_checkpoint_and_load_checkpoint(tmp_path):
    sym = resnet152()
    assert sum(1 for n in sym.get_internals().list_outputs() if n.endswith("_conv3_output")) == 50
    mod = mx.mod.Module(sym, context=mx.cpu())
    mod.bind(data_shapes=[("data", (1, 3, 16, 16))], label_shapes=[("softmax_label", (1,))], for_training=False)
    mod.init_params(mx.init.Xavier())
    prefix = str(tmp_path / "resnet152")
    mod.save_checkpoint(prefix, 3)
    loaded, args, auxs = mx.model.load_checkpoint(prefix, 3)
    assert loaded.tojson() == sym.tojson()
    _same_graph(loaded, sym)
    want_args, want_aux = mod.get_params()
    assert sorted(args) == sorted(want_args) and sorted(auxs) == sorted(want_aux)
    for k, v in want_args.items():
        np.testing.assert_array_equal(args[k].asnumpy(), v.asnumpy())
    again = mx.mod.Module.load(prefix, 3)
    _same_graph(again.symbol, sym)
