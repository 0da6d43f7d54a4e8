"""mx.mon.Monitor and Executor.set_monitor_callback (goldens from MXNet 1.9.1)."""
import json
import os

import numpy as np
import pytest

import jbind as mx

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "monitor", "step.json")
PARAMS = {"fc_0_weight": [[.15, .20], [.25, .30]], "fc_0_bias": [.35, .35],
          "fc_1_weight": [[.40, .45], [.50, .55]], "fc_1_bias": [.60, .60]}
# gradients MXNet does not compute (no argument's gradient needs them): its monitor shows
# whatever its buffers held; jbind reports the true values
UNCOMPUTED = {"out_backward_output1", "fc_0_backward_output0"}


def build():
    x = mx.sym.Variable("data")
    x = mx.sym.FullyConnected(name="fc_0", data=x, num_hidden=2)
    x = mx.sym.Activation(name="act_0", data=x, act_type="sigmoid")
    x = mx.sym.FullyConnected(name="fc_1", data=x, num_hidden=2)
    x = mx.sym.Activation(name="act_1", data=x, act_type="sigmoid")
    return mx.sym.LinearRegressionOutput(data=x, name="out", grad_scale=2)


def _module(contexts):
    mod = mx.mod.Module(build(), label_names=["out_label"], context=contexts)
    mod.bind([("data", (len(contexts), 2))], label_shapes=[("out_label", (len(contexts), 2))])
    mod.init_params(arg_params={k: mx.nd.array(v) for k, v in PARAMS.items()})
    return mod


def test_one_training_step_reports_what_mxnet_reports():
    with open(GOLDEN) as f:
        gold = json.load(f)
    mon = mx.mon.Monitor(1, stat_func=lambda a: mx.nd.mean(mx.nd.abs(a)), pattern=".*")
    mod = _module([mx.cpu()])
    mod.install_monitor(mon)
    mon.tic()
    mod.forward_backward(mx.io.DataBatch([mx.nd.array([[0.05, 0.10]])], [mx.nd.array([[0.01, 0.99]])]))
    got = [(name, float(text)) for _, name, text in mon.toc()]
    assert [n for n, _ in got] == [n for n, _ in gold]
    for (name, value), (_, want) in zip(got, gold):
        if name not in UNCOMPUTED:
            np.testing.assert_allclose(value, want, rtol=1e-5, err_msg=name)
    assert mon.toc() == []  # collection stops at toc until the next tic


def test_backward_outputs_are_each_edges_gradient():
    """Where an entry feeds two nodes, each node's backward reports only its own share."""
    a = mx.sym.Variable("a")
    y = mx.sym.sum(mx.sym.square(a, name="sq") * 3 + mx.sym.sin(a, name="s"), name="total")
    exe = y.simple_bind(mx.cpu(), a=(3,))
    seen = {}
    exe.set_monitor_callback(lambda name, arr: seen.setdefault(name, arr.asnumpy()))
    x = np.array([0.5, -1.0, 2.0], np.float32)
    exe.forward(is_train=True, a=x)
    exe.backward(mx.nd.ones((1,)))
    np.testing.assert_allclose(seen["sq_backward_output"], 6 * x, rtol=1e-6)
    np.testing.assert_allclose(seen["s_backward_output"], np.cos(x), rtol=1e-6)
    np.testing.assert_allclose(exe.grad_dict["a"].asnumpy(), 6 * x + np.cos(x), rtol=1e-6)
    np.testing.assert_allclose(seen["sq_output"], x * x)


def test_interval_pattern_and_two_devices_train_as_without_a_monitor():
    batch = mx.io.DataBatch([mx.nd.array([[0.05, 0.10], [0.3, -0.2]])], [mx.nd.array([[0.01, 0.99], [0.5, 0.5]])])
    mon = mx.mon.Monitor(2, pattern="fc_1.*", sort=True)
    watched, plain = _module([mx.cpu(0), mx.cpu(1)]), _module([mx.cpu(0), mx.cpu(1)])
    watched.install_monitor(mon)
    counts = []
    for mod in (watched, plain):
        mod.init_optimizer(optimizer_params={"learning_rate": 0.5})
    for _ in range(3):
        mon.tic()
        for mod in (watched, plain):
            mod.forward_backward(batch)
            mod.update()
        counts.append(mon.toc())
    # per executor: fc_1_output, its 3 backward outputs, fc_1_weight, fc_1_bias; steps 1 and 3 only
    assert [len(c) for c in counts] == [2 * 6, 0, 2 * 6]
    assert all(name.startswith("fc_1") for _, name, _ in counts[0])
    assert [n for _, n, _ in counts[0]] == sorted(n for _, n, _ in counts[0])
    for k, v in plain.get_params()[0].items():
        np.testing.assert_allclose(watched.get_params()[0][k].asnumpy(), v.asnumpy(), rtol=1e-6)


def test_removing_the_callback():
    exe = build().simple_bind(mx.cpu(), data=(1, 2), out_label=(1, 2))
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append(name))
    exe.forward(is_train=False)
    assert seen == ["fc_0_output", "act_0_output", "fc_1_output", "act_1_output", "out_output"]
    exe.set_monitor_callback(None)
    exe.forward(is_train=False)
    assert len(seen) == 5


@pytest.mark.parametrize("monitor_all", [True])
def test_monitor_all_reports_inputs_first(monitor_all):
    exe = build().simple_bind(mx.cpu(), data=(1, 2), out_label=(1, 2))
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append(name), monitor_all)
    exe.forward(is_train=False)
    # as MXNet 1.9.1: a variable input under its own name, then as the op's input;
    # Activation declares no input names (input0)
    assert seen[:9] == ["data", "fc_0_data", "fc_0_weight", "fc_0_weight", "fc_0_bias", "fc_0_bias",
                        "fc_0_output", "act_0_input0", "act_0_output"]


def test_monitor_survives_reshape():
    exe = build().simple_bind(mx.cpu(), data=(2, 2), out_label=(2, 2))
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append((name, arr.shape)), True)
    small = exe.reshape(data=(1, 2), out_label=(1, 2))
    small.forward(is_train=False)
    assert ("data", (1, 2)) in seen and ("out_output", (1, 2)) in seen


def test_module_monitor_survives_a_new_batch_shape():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc_0")
    mod = mx.mod.Module(net, data_names=["data"], label_names=None)
    mod.bind(data_shapes=[("data", (1, 2))], for_training=False)
    mod.init_params()
    seen = []
    mod._exec_group.execs[0].set_monitor_callback(lambda name, arr: seen.append(name), True)
    mod.forward(mx.io.DataBatch([mx.nd.ones((3, 2))]), is_train=False)
    assert "fc_0_output" in seen


def test_fit_with_a_monitor_logs_every_interval(caplog):
    """Module.fit(monitor=...) ticks before each batch and prints after it, as MXNet's fit."""
    import logging
    data = mx.sym.Variable("data")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=3, name="fc"), name="softmax")
    it = mx.io.NDArrayIter(np.random.RandomState(0).rand(8, 4).astype(np.float32), np.arange(8) % 3, batch_size=2)
    mod = mx.mod.Module(net)
    mon = mx.mon.Monitor(2, pattern="fc_output")
    with caplog.at_level(logging.INFO):
        mod.fit(it, num_epoch=1, monitor=mon, optimizer_params={"learning_rate": 0.1})
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Batch:")]
    assert [line.split()[1] for line in lines] == ["1", "3"] and all("fc_output" in line for line in lines)


def test_monitor_all_names_inputs_of_ops_mxnet_lists_no_names_for_by_position():
    # MXNet names Activation's and a unary op's input input0, a binary op's lhs / rhs
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    out = mx.sym.sqrt(mx.sym.Activation(mx.sym.elemwise_add(a, b, name="add"), act_type="relu", name="act"),
                      name="sq")
    exe = out.simple_bind(mx.cpu(), a=(2,), b=(2,))
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append(name), True)
    exe.forward(is_train=False, a=mx.nd.array([1, 4]), b=mx.nd.array([0, 5]))
    ops = [n for n in seen if n not in ("a", "b")]   # (MXNet also reports the variables themselves)
    assert ops == ["add_lhs", "add_rhs", "add_output", "act_input0", "act_output", "sq_input0", "sq_output"]


def test_names_come_from_the_executors_own_symbol():
    """Two structurally equal graphs with different names: each executor reports its own names."""
    def net(prefix):
        return mx.sym.FullyConnected(mx.sym.Variable(prefix + "data"), num_hidden=2, name=prefix + "fc")

    first = net("a_").simple_bind(mx.cpu(), a_data=(1, 3))
    first.forward(is_train=False)
    exe = net("b_").simple_bind(mx.cpu(), b_data=(1, 3))
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append(name), True)
    exe.forward(is_train=False)
    assert seen and all(not n.startswith("a_") for n in seen) and "b_fc_output" in seen


def test_a_callback_may_read_its_array_through_a_handle_as_mxnet_callbacks_do():
    import ctypes
    from jbind.operator import NDArray, NDArrayHandle   # what `from mxnet.operator import *` gives
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=1, no_bias=True, name="fc")
    exe = net.simple_bind(mx.cpu(), data=(1, 3), grad_req="null")
    exe.arg_dict["fc_weight"][:] = 1
    seen = {}

    def callback(name, arr):
        arr = NDArray(ctypes.cast(arr, NDArrayHandle), writable=False)
        seen[mx.base.py_str(name)] = arr.min().asscalar()

    exe.set_monitor_callback(callback, monitor_all=True)
    exe.forward(data=mx.nd.array([[1, -2, 4]]))
    assert seen == {"data": -2, "fc_data": -2, "fc_weight": 1, "fc_output": 3}
