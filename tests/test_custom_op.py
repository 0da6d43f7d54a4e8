"""Python custom operators (`mx.operator`, the op `Custom`, jbind/ops/custom.py): MXNet
1.9.1's numbers and symbol JSON (tests/golden/custom/, made by make_custom_golden.py),
mx.nd.Custom, training a custom loss head with Module.fit, the executable store leaving
such graphs out, naming, call order and the errors."""
import json
import os
import pathlib
import sys
import threading

import numpy as np
import pytest

import jbind as mx
from helpers import raises_naming

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
sys.path.insert(0, str(GOLDEN))
import custom_cases  # noqa: E402

custom_cases.define(mx)
CASES = {c["name"]: c for c in custom_cases.cases(mx)}
V = mx.sym.Variable


def _golden(name):
    with np.load(GOLDEN / "custom" / f"{name}.npz", allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


# --- MXNet 1.9.1's numbers -------------------------------------------------------------------
@pytest.mark.parametrize("source", ["built", "mxnet_json"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name, source):
    case, g = CASES[name], _golden(name)
    built = case["build"]()
    sym = built if source == "built" else mx.sym.load_json(str(g["symbol_json"]))
    assert sym.fingerprint == built.fingerprint
    assert sym.list_arguments() == list(g["list_arguments"])
    assert sym.list_outputs() == list(g["list_outputs"])
    assert sym.list_auxiliary_states() == list(g["list_auxiliary_states"])
    req = {a: case["grad_req"].get(a, "write") for a in sym.list_arguments()}
    exe = sym.simple_bind(mx.cpu(), grad_req=req, **case["shapes"])
    for a in sym.list_arguments():
        exe.arg_dict[a][:] = g["arg:" + a]
    for a in sym.list_auxiliary_states():
        exe.aux_dict[a][:] = g["aux:" + a]
    custom_cases.LOG.clear()
    outs = exe.forward(is_train=True)
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o.asnumpy(), g[f"out:{i}"], rtol=1e-5, atol=1e-6)
    exe.backward([mx.nd.array(g[f"head:{i}"]) for i in range(len(outs))] if case["head_grads"] else None)
    for a, r in req.items():
        if r != "null":
            np.testing.assert_allclose(exe.grad_dict[a].asnumpy(), g["grad:" + a], rtol=1e-5, atol=1e-6)
    for a in sym.list_auxiliary_states():
        np.testing.assert_allclose(exe.aux_dict[a].asnumpy(), g["auxafter:" + a], rtol=1e-5, atol=1e-6)
    # The same calls with the same req lists and is_train; with head gradients jbind's
    # backward() runs the forward again (tests/test_differences.py).
    mine = [list(c) for c in custom_cases.LOG[case["op_type"]] if c[0] != "prop"]
    theirs = json.loads(str(g["calls"]))
    assert [c for c in mine if c[0] == "backward"] == [c for c in theirs if c[0] == "backward"]
    assert {json.dumps(c) for c in mine if c[0] == "forward"} == {json.dumps(c) for c in theirs if c[0] == "forward"}


def test_symbol_names_and_keywords_as_mxnet():
    """Inputs by position or by the Prop's names; missing ones and aux states become
    `{name}_{input}` variables; outputs `{name}_{output}`; auto names `custom<N>`; keywords
    reach the Prop as strings."""
    custom_cases.LOG.clear()
    sq = mx.sym.Custom(V("x"), op_type="golden_scaled_square", scale=0.5)
    assert sq.name.startswith("custom") and sq.list_arguments() == ["x"]
    assert ["prop", "0.5"] in [list(c) for c in custom_cases.LOG["golden_scaled_square"]]
    rm = mx.sym.Custom(op_type="golden_running_mean", name="rm")
    assert rm.list_arguments() == ["rm_data"] and rm.list_auxiliary_states() == ["rm_moving_mean"]
    assert rm.list_outputs() == ["rm_output"]
    assert rm.attr_dict()["rm_moving_mean"]["op_type"] == "golden_running_mean"
    given = mx.sym.Custom(data=V("x"), moving_mean=V("m"), op_type="golden_running_mean", name="rm")
    assert given.list_auxiliary_states() == ["m"]
    assert given.infer_shape(x=(2, 3)) == ([(2, 3)], [(2, 3)], [(3,)])
    loaded = mx.sym.load_json(rm.tojson())
    assert loaded.list_auxiliary_states() == ["rm_moving_mean"] and loaded.fingerprint == rm.fingerprint
    two = mx.sym.Custom(b=V("q"), a=V("p"), op_type="test_echo", scale=[1, 2], flag=True, none=None, name="e")
    assert two.list_arguments() == ["p", "q"] and two.list_outputs() == ["e_product", "e_shifted"]
    assert ECHO[-1] == {"scale": "[1, 2]", "flag": "True", "none": "None"}  # str(value), as MXNet's Python
    assert two.attr_dict()["e"]["scale"] == "[1, 2]"
    # from a JSON file: a Prop taking **kwargs gets every attribute but MXNet's hidden ones
    with mx.AttrScope(ctx_group="dev1"):
        scoped = mx.sym.Custom(b=V("q"), a=V("p"), op_type="test_echo", scale=[1, 2], name="e")
    ECHO.clear()
    again = mx.sym.load_json(scoped.tojson())
    assert ECHO[-1] == {"scale": "[1, 2]"} and again.list_outputs() == ["e_product", "e_shifted"]


ECHO = []


@mx.operator.register("test_echo")
class _EchoProp(mx.operator.CustomOpProp):
    def __init__(self, **kwargs):
        super().__init__()
        ECHO.append(kwargs)

    def list_arguments(self):
        return ["a", "b"]

    def list_outputs(self):
        return ["product", "shifted"]


# --- mx.nd.Custom --------------------------------------------------------------------------------
class _Count(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        aux[0][:] = aux[0] + 1
        y = mx.nd.softmax(in_data[0]) * 2 + mx.nd.dot(in_data[0], in_data[0].T).sum()  # mx.nd inside the callback
        self.assign(out_data[0], req[0], y)


@mx.operator.register("test_count")
class _CountProp(mx.operator.CustomOpProp):
    def list_auxiliary_states(self):
        return ["count"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [[1]]

    def create_operator(self, ctx, shapes, dtypes):
        return _Count()


def _count_ref(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return 2 * e / e.sum(axis=-1, keepdims=True) + (x @ x.T).sum()


def test_nd_custom():
    """mx.nd.Custom runs the op at once; keywords as strings; aux arrays updated in place."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 6
    got = mx.nd.Custom(mx.nd.array(x), op_type="golden_scaled_square", scale="3")
    np.testing.assert_allclose(got.asnumpy(), 3 * x ** 2, rtol=1e-6)
    count = mx.nd.zeros((1,))
    out = mx.nd.Custom(mx.nd.array(x), count, op_type="test_count")
    np.testing.assert_allclose(out.asnumpy(), _count_ref(x), rtol=1e-5)
    mx.nd.Custom(data=mx.nd.array(x), count=count, op_type="test_count")
    assert count.asnumpy().tolist() == [2.0]
    raises_naming(lambda: mx.nd.Custom(mx.nd.array(x), op_type="test_count"), "test_count", "count")


def test_mx_nd_inside_compiled_callbacks_does_not_deadlock():
    """The user's forward calls mx.nd ops (which compile and run XLA programs) from inside a
    compiled program's callback: two such nodes, on cpu(1), finish."""
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    v = V("x")
    a = mx.sym.Custom(v, op_type="test_count", name="a")
    b = mx.sym.Custom(v * 2, op_type="test_count", name="b")
    done = {}

    def run():
        exe = mx.sym.Group([a, b]).simple_bind(mx.cpu(1), x=x.shape)
        exe.arg_dict["x"][:] = x
        done["outs"] = [o.asnumpy() for o in exe.forward()]
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "deadlock: the forward did not finish"
    np.testing.assert_allclose(done["outs"][0], _count_ref(x), rtol=1e-5)
    np.testing.assert_allclose(done["outs"][1], _count_ref(2 * x), rtol=1e-5)


# --- training ------------------------------------------------------------------------------------
def test_module_fit_with_a_custom_loss_head_learns():
    """MXNet's softmax example as the loss head of an MLP: Module.fit needs no head
    gradients (need_top_grad=False) and the training accuracy rises."""
    rng = np.random.RandomState(0)
    centers = rng.normal(0, 2, size=(3, 4))
    label = rng.randint(0, 3, size=96)
    data = (centers[label] + rng.normal(0, 0.7, size=(96, 4))).astype(np.float32)
    it = mx.io.NDArrayIter(data, label.astype(np.float32), batch_size=16, label_name="softmax_label")
    fc = mx.sym.FullyConnected(mx.sym.Activation(mx.sym.FullyConnected(V("data"), num_hidden=16, name="fc1"),
                                                 act_type="relu"), num_hidden=3, name="fc2")
    net = mx.sym.Custom(data=fc, label=V("softmax_label"), op_type="golden_softmax", name="softmax")
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mx.random.seed(1)
    mod.init_params(mx.init.Xavier())
    before = dict(mod.score(it, "acc"))["accuracy"]
    it.reset()
    mod.fit(it, num_epoch=8, optimizer="sgd", optimizer_params={"learning_rate": 0.05},
            arg_params=mod.get_params()[0], force_init=True)
    after = dict(mod.score(it, "acc"))["accuracy"]
    assert after > 0.85 and after > before + 0.3, (before, after)


# --- the executable store --------------------------------------------------------------------------
def test_graphs_with_custom_ops_stay_out_of_the_executable_store(tmp_path, recwarn):
    """Their executables call back into Python and cannot be serialized: nothing is written
    for them, with no warning; the other graphs of the same process are stored as before."""
    from jbind.compile import store
    saved = store.counts["saved"]
    mx.compile.enable_persistent_cache(tmp_path)
    try:
        net = mx.sym.Custom(mx.sym.FullyConnected(V("data"), num_hidden=7, name="fc"), op_type="golden_scaled_square",
                            scale=1.25, name="sq")
        exe = net.simple_bind(mx.cpu(), data=(3, 7))
        exe.arg_dict["data"][:] = 1.0
        exe.forward(is_train=True)
        exe.backward([mx.nd.ones((3, 7))])
        exe.grad_dict["fc_weight"].asnumpy()
        mx.nd.Custom(mx.nd.ones((2, 2)), op_type="golden_scaled_square")
        assert store.counts["saved"] == saved and not list(tmp_path.glob("jbind-exe-*"))
        plain = mx.sym.FullyConnected(V("data"), num_hidden=7, name="fc").simple_bind(mx.cpu(), data=(3, 11))
        plain.forward()[0].asnumpy()
        assert store.counts["saved"] == saved + 1
    finally:
        mx.compile.disable_persistent_cache()
    assert not [str(w.message) for w in recwarn]


# --- call order ------------------------------------------------------------------------------------
class _Probe(mx.operator.CustomOp):
    def __init__(self, calls):
        self.calls = calls

    def forward(self, is_train, req, in_data, out_data, aux):
        self.calls.append(("forward", id(self), bool(is_train)))
        self.assign(out_data[0], req[0], in_data[0] + 1)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.calls.append(("backward", id(self), tuple(req)))
        self.assign(in_grad[0], req[0], out_grad[0])


PROBE_CALLS = []


@mx.operator.register("test_probe")
class _ProbeProp(mx.operator.CustomOpProp):
    def infer_shape(self, in_shape):
        PROBE_CALLS.append(("infer_shape", [list(s) for s in in_shape]))
        return in_shape, [in_shape[0]], []

    def infer_type(self, in_type):
        PROBE_CALLS.append(("infer_type", list(in_type)))
        return super().infer_type(in_type)

    def create_operator(self, ctx, shapes, dtypes):
        PROBE_CALLS.append(("create_operator", str(ctx), shapes, dtypes))
        return _Probe(PROBE_CALLS)


def test_call_order_and_arguments():
    """Shape and dtype rules at bind (an unknown shape is []); create_operator with cpu(0),
    the argument shapes and MXNet's dtype codes when the graph is compiled, one operator
    per node; forward gets is_train; a fresh bind of a compiled graph creates nothing."""
    PROBE_CALLS.clear()
    x = V("x")
    net = mx.sym.Custom(x, op_type="test_probe", name="p") + mx.sym.Custom(x, op_type="test_probe", name="q")
    assert net.infer_shape_partial()[1] == [()] and ("infer_shape", [[]]) in PROBE_CALLS
    exe = net.simple_bind(mx.cpu(), x=(2, 5))
    assert ("infer_shape", [[2, 5]]) in PROBE_CALLS and ("infer_type", [np.float32]) in PROBE_CALLS
    PROBE_CALLS.clear()
    exe.forward(is_train=False)[0].asnumpy()
    created = [c for c in PROBE_CALLS if c[0] == "create_operator"]
    assert created == [("create_operator", "cpu(0)", [[2, 5]], [0])] * 2
    assert [c[2] for c in PROBE_CALLS if c[0] == "forward"] == [False, False]
    assert len({c[1] for c in PROBE_CALLS if c[0] == "forward"}) == 2
    PROBE_CALLS.clear()
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2, 5))])
    exe.grad_dict["x"].asnumpy()
    assert [c[2] for c in PROBE_CALLS if c[0] == "forward"][-2:] == [True, True]
    assert [c[2] for c in PROBE_CALLS if c[0] == "backward"] == [("write",), ("write",)]
    PROBE_CALLS.clear()
    again = net.simple_bind(mx.cpu(), x=(2, 5))
    again.forward()[0].asnumpy()
    assert not [c for c in PROBE_CALLS if c[0] == "create_operator"]


def test_registering_again_replaces_the_op_for_new_graphs():
    """A second registration of an op_type (a notebook cell run again) is used by symbols
    built afterwards, which compile anew."""
    def register(k):
        class Op(mx.operator.CustomOp):
            def forward(self, is_train, req, in_data, out_data, aux):
                self.assign(out_data[0], req[0], in_data[0] * k)

        @mx.operator.register("test_again")
        class Prop(mx.operator.CustomOpProp):
            def create_operator(self, ctx, shapes, dtypes):
                return Op()

    def run():
        exe = mx.sym.Custom(V("x"), op_type="test_again", name="g").simple_bind(mx.cpu(), x=(2,))
        exe.arg_dict["x"][:] = 1.0
        return exe.forward()[0].asnumpy().tolist()
    register(2.0)
    assert run() == [2.0, 2.0]
    register(3.0)
    assert run() == [3.0, 3.0]


# --- errors -----------------------------------------------------------------------------------------
class _Bad(mx.operator.CustomOpProp):
    def __init__(self, mode="ok"):
        super().__init__()
        self.mode = mode

    def infer_shape(self, in_shape):
        if self.mode == "count":
            return in_shape, [], []
        if self.mode == "raise":
            raise KeyError("no such dim")
        if self.mode == "conflict":
            return [[9, 9]], [in_shape[0]], []
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _BadOp(self.mode)


class _BadOp(mx.operator.CustomOp):
    def __init__(self, mode):
        self.mode = mode

    def forward(self, is_train, req, in_data, out_data, aux):
        if self.mode == "forward":
            raise ZeroDivisionError("user bug")
        self.assign(out_data[0], req[0], in_data[0].reshape((-1,)) if self.mode == "shape" else in_data[0])


mx.operator.register("test_bad")(_Bad)


def test_unregistered_op_type_is_an_error_naming_it_and_the_node():
    raises_naming(lambda: mx.sym.Custom(V("x"), op_type="no_such_op", name="mystery"), "no_such_op", "mystery",
                  "mx.operator.register")
    doc = json.loads(mx.sym.Custom(V("x"), op_type="test_bad", name="mystery").tojson())
    doc["nodes"][-1]["attrs"]["op_type"] = "no_such_op"
    raises_naming(lambda: mx.sym.load_json(json.dumps(doc)), "no_such_op", "mystery")
    raises_naming(lambda: mx.nd.Custom(mx.nd.ones((2,)), op_type="no_such_op"), "no_such_op")
    raises_naming(lambda: mx.sym.Custom(V("x"), name="n"), "op_type", cls=mx.base.ParamError)
    raises_naming(lambda: mx.sym.Custom(V("x"), op_type="test_bad", nope=1, name="n"), "test_bad", "nope", "'n'")


@pytest.mark.parametrize("mode, needles", [
    ("count", ["test_bad", "'b'", "output", "expected 1"]),
    ("raise", ["test_bad", "'b'", "KeyError", "no such dim"]),
    ("conflict", ["'b'", "(2, 3)", "(9, 9)"]),
])
def test_wrong_shape_rules_are_errors_naming_the_op_and_node(mode, needles):
    net = mx.sym.Custom(V("x"), op_type="test_bad", mode=mode, name="b")
    raises_naming(lambda: net.simple_bind(mx.cpu(), x=(2, 3)), *needles, cls=mx.base.ShapeError)


def test_errors_in_the_users_forward_name_the_op():
    """A failing forward (or one leaving an output of the wrong shape) is an error naming the
    op_type and the Python exception: an MXNetError from mx.nd, a RuntimeError (XLA's,
    which MXNetError also is) from a compiled graph."""
    raises_naming(lambda: mx.nd.Custom(mx.nd.ones((2, 3)), op_type="test_bad", mode="forward"),
                  "test_bad", "forward", "ZeroDivisionError", "user bug")
    raises_naming(lambda: mx.nd.Custom(mx.nd.ones((2, 3)), op_type="test_bad", mode="shape"),
                  "test_bad", "forward", "(6,)", "(2, 3)")
    exe = mx.sym.Custom(V("x"), op_type="test_bad", mode="forward", name="b").simple_bind(mx.cpu(), x=(2, 3))
    raises_naming(lambda: exe.forward()[0].asnumpy(), "test_bad", "ZeroDivisionError", "user bug",
                  cls=RuntimeError)


def test_assign_follows_req():
    op, dst = mx.operator.CustomOp(), mx.nd.ones((2,))
    op.assign(dst, "null", mx.nd.array([5, 5]))
    op.assign(dst, "add", mx.nd.array([1, 2]))
    assert dst.asnumpy().tolist() == [2.0, 3.0]
    for req in ("write", "inplace"):
        op.assign(dst, req, mx.nd.array([7, 8]))
        assert dst.asnumpy().tolist() == [7.0, 8.0]
    raises_naming(lambda: op.assign(dst, "overwrite", dst), "overwrite", "req")


class _NoOperatorProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        raise RuntimeError("no operator today")


mx.operator.register("test_no_operator")(_NoOperatorProp)


def test_create_operator_failing_is_an_error_naming_the_op_and_node():
    exe = mx.sym.Custom(V("x"), op_type="test_no_operator", name="nobody").simple_bind(mx.cpu(), x=(2,))
    raises_naming(lambda: exe.forward(), "test_no_operator", "nobody", "create_operator", "no operator today")


class _Raising(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        raise ValueError("boom")


@mx.operator.register("test_raising")
class _RaisingProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return _Raising()


def test_a_failing_forward_inside_a_compiled_graph_is_its_mxnet_error():
    """The user's exception comes out of the executor and of a Module's fused step as the
    MXNetError naming the op, not as XLA's runtime error."""
    sym = mx.sym.Custom(mx.sym.FullyConnected(V("data"), num_hidden=2, name="fc"), op_type="test_raising", name="r")
    exe = sym.simple_bind(mx.cpu(), data=(2, 3), grad_req="null")
    raises_naming(exe.forward, "test_raising", "forward raised ValueError: boom")
    it = mx.io.NDArrayIter(np.ones((4, 3), np.float32), batch_size=2)
    mod = mx.mod.Module(mx.sym.MakeLoss(sym), label_names=None)
    raises_naming(lambda: mod.fit(it, num_epoch=1), "test_raising", "boom")
