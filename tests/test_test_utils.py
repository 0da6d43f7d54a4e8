"""jbind.test_utils (MXNet's mx.test_utils) against MXNet 1.9.1, and MXNet-style op tests through it.

Golden facts: tests/golden/test_utils/test_utils.json, written by
tests/golden/make_test_utils_golden.py under MXNet; its recorders run here with jbind.
"""
import contextlib
import importlib.util
import io
import json
import os
import pathlib

import numpy as np
import pytest

import jbind as mx
import jbind.test_utils as tu

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
_spec = importlib.util.spec_from_file_location("make_test_utils_golden", GOLDEN / "make_test_utils_golden.py")
rec = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rec)
REF = json.loads((GOLDEN / "test_utils" / "test_utils.json").read_text())


def _json(x):
    return json.loads(json.dumps(x))


def _close(want, got, path=""):
    """Equal structure; arrays equal to float32 rounding (the random draws themselves exactly)."""
    if isinstance(want, dict) and "dtype" in want:
        assert want["dtype"] == got["dtype"], path
        np.testing.assert_allclose(np.array(got["data"]), np.array(want["data"]), rtol=1e-6, atol=1e-7, err_msg=path)
    elif isinstance(want, dict):
        assert sorted(want) == sorted(got), path
        for k in want:
            _close(want[k], got[k], f"{path}/{k}")
    else:
        assert want == got, path


# --- MXNet's facts -----------------------------------------------------------------------------


def test_default_tolerances_and_get_tols_match_mxnet():
    assert _json(rec._plain(rec.tolerances(mx, tu))) == REF["tolerances"]


def test_assert_almost_equal_messages_match_mxnet():
    """The AssertionError text and the printed list of worst mismatches, character for character."""
    got = rec.messages(mx, tu)
    assert sorted(got) == sorted(REF["messages"])
    for name, (msg, printed) in REF["messages"].items():
        assert got[name][0] == msg, name
        assert got[name][1] == printed, name


def test_almost_equal_and_same_match_mxnet():
    assert _json(rec._plain(rec.verdicts(mx, tu))) == REF["verdicts"]


def test_seeded_random_helpers_draw_mxnet_values():
    assert _json(rec.draws(mx, tu)) == REF["draws"]


def test_symbolic_checks_draw_in_mxnets_order():
    """After each check numpy's stream is where MXNet's is: a seeded test's later data is MXNet's."""
    got = _json(rec.symbolic(mx, tu))
    _close(REF["symbolic"], got)
    for k in ("after_numeric", "after_numeric_nodes", "after_backward", "after_backward_add", "after_consistency"):
        assert got[k] == REF["symbolic"][k], k


# --- MXNet-style unit tests run through the helpers -----------------------------------------------


def test_numeric_gradient_fully_connected_activation():
    np.random.seed(0)
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    for act in ("tanh", "sigmoid", "softrelu"):
        net = mx.sym.Activation(fc, act_type=act)
        loc = [np.random.normal(size=s) for s in [(3, 5), (4, 5), (4,)]]
        tu.check_numeric_gradient(net, loc, numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


def test_numeric_gradient_convolution_and_pooling():
    np.random.seed(1)
    conv = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=2, pad=(1, 1), name="conv")
    net = mx.sym.Pooling(conv, kernel=(2, 2), stride=(2, 2), pool_type="avg")
    loc = {"data": np.random.normal(size=(1, 2, 4, 4)), "conv_weight": np.random.normal(size=(2, 2, 3, 3)),
           "conv_bias": np.random.normal(size=(2,))}
    tu.check_numeric_gradient(net, loc, numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


def test_numeric_gradient_batchnorm_with_aux_states():
    """MXNet's test_operator.py checks BatchNorm this way (aux states reset before each forward)."""
    np.random.seed(2)
    net = mx.sym.BatchNorm(mx.sym.Variable("data"), fix_gamma=False, name="bn")
    loc = [np.random.normal(size=(4, 3)), np.random.uniform(0.5, 1.5, (3,)), np.random.normal(size=(3,))]
    aux = [np.zeros(3), np.ones(3)]
    tu.check_numeric_gradient(net, loc, aux, numeric_eps=1e-2, rtol=0.16, atol=1e-2)


def test_numeric_gradient_grad_nodes_and_reqs():
    np.random.seed(3)
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    loc = {"x": np.random.rand(2, 3), "y": np.random.rand(2, 3) + 0.5}
    tu.check_numeric_gradient(x / y, loc, grad_nodes=["y"], rtol=1e-2, atol=1e-3)
    tu.check_numeric_gradient(x / y, loc, grad_nodes={"x": "add", "y": "null"}, rtol=1e-2, atol=1e-3)


def test_numeric_gradient_catches_a_wrong_gradient():
    """BlockGrad's backward is zero, its forward the identity: the check must fail, naming both sides."""
    np.random.seed(4)
    x = mx.sym.Variable("x")
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        with pytest.raises(AssertionError) as e:
            tu.check_numeric_gradient(mx.sym.BlockGrad(x) * 2, [np.random.rand(2, 2)])
    msg = str(e.value)
    assert "exceeds tolerance rtol=1.000000e-04, atol=1.000000e-03 (mismatch 100.000000%)" in msg
    assert "Location of maximum error: (" in msg and "NUMERICAL_x=" in msg and "BACKWARD_x=0.00000000" in msg
    assert "*** Maximum errors for vector of size 4:" in printed.getvalue()


def test_check_symbolic_forward_and_backward_with_numpy_expectations():
    np.random.seed(5)
    lhs, rhs = mx.sym.Variable("lhs"), mx.sym.Variable("rhs")
    a, b = np.random.rand(2, 3), np.random.rand(3, 4)
    outs = tu.check_symbolic_forward(mx.sym.dot(lhs, rhs), [a, b], [a @ b])
    assert isinstance(outs[0], mx.nd.NDArray)
    dot = mx.sym.dot(lhs, rhs, name="dot")
    tu.check_symbolic_forward(dot, {"lhs": a, "rhs": b}, {"dot_output": a @ b})
    og = np.random.rand(2, 4)
    grads = tu.check_symbolic_backward(mx.sym.dot(lhs, rhs), [a, b], [og], [og @ b.T, a.T @ og])
    assert sorted(grads) == ["lhs", "rhs"]
    # a loss head: backward without head gradients
    data, label = mx.sym.Variable("data"), mx.sym.Variable("label")
    x = np.random.normal(size=(3, 4))
    y = np.array([0, 3, 1])
    p = np.exp(x) / np.exp(x).sum(1, keepdims=True)
    net = mx.sym.SoftmaxOutput(data, label, name="sm")
    tu.check_symbolic_forward(net, {"data": x, "label": y}, {"sm_output": p})
    tu.check_symbolic_backward(net, {"data": x, "label": y}, None, {"data": p - np.eye(4)[y]},
                               grad_req={"data": "write", "label": "null"})


def test_check_symbolic_with_aux_states_and_dtypes():
    np.random.seed(6)
    net = mx.sym.BatchNorm(mx.sym.Variable("data"), fix_gamma=False, use_global_stats=True, name="bn")
    x, gamma, beta = np.random.normal(size=(2, 3)), np.random.rand(3) + 0.5, np.random.rand(3)
    mean, var = np.random.rand(3), np.random.rand(3) + 0.5
    want = (x - mean) / np.sqrt(var + 1e-3) * gamma + beta
    tu.check_symbolic_forward(net, [x, gamma, beta], [want], aux_states=[mean, var])
    tu.check_symbolic_forward(net, [x, gamma, beta], [want], aux_states={"bn_moving_mean": mean,
                              "bn_moving_var": var})
    relu = mx.sym.relu(mx.sym.Variable("x"))
    for dtype in (np.float16, np.float64):
        tu.check_symbolic_forward(relu, [x], [np.maximum(x, 0)], dtype=dtype)
    f32 = [v.astype(np.float32) for v in (x, gamma, beta, mean, var)]
    outs = tu.check_symbolic_forward(net, f32[:3], [want], aux_states=f32[3:], dtype="asnumpy")
    assert outs[0].dtype == np.float32


def test_check_consistency_across_cpu0_and_cpu1():
    np.random.seed(7)
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    sym = mx.sym.tanh(mx.sym.broadcast_mul(a, b), name="act")  # float16 on CPU: MXNet runs it too
    types = [np.float16, np.float32, np.float32]
    ctx_list = [{"ctx": c, "a": (2, 3), "b": (1, 3), "type_dict": {"a": t, "b": t}}
                for c, t in zip([mx.cpu(0), mx.cpu(1), mx.cpu(0)], types)]
    gt = tu.check_consistency(sym, ctx_list, scale=0.5)
    assert sorted(gt) == ["a", "act_output", "b"]
    # the reference is the first of the most precise runs: cpu(1)'s float32
    assert gt["act_output"].context == mx.cpu(1) and gt["act_output"].dtype == np.float32
    fc = mx.sym.FullyConnected(mx.sym.Variable("fc_data"), num_hidden=3, name="fc")
    tu.check_consistency(fc, [{"ctx": mx.cpu(0), "fc_data": (2, 4)}, {"ctx": mx.cpu(1), "fc_data": (2, 4)}],
                         grad_req="add")


def test_check_consistency_reports_a_difference():
    x = mx.sym.Variable("x")
    ctx_list = [{"ctx": mx.cpu(0), "x": (2, 2)}, {"ctx": mx.cpu(1), "x": (2, 2)}]
    truth = {"_mulscalar0_output": mx.nd.ones((2, 2)), "x": mx.nd.ones((2, 2))}
    with mx.name.NameManager():
        sym = x * 2
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        with pytest.raises(AssertionError):
            tu.check_consistency(sym, ctx_list, ground_truth=truth)
        tu.check_consistency(sym, ctx_list, ground_truth=truth, raise_on_err=False)  # prints, goes on


def test_simple_forward_and_default_context():
    x = mx.sym.Variable("x")
    out = tu.simple_forward(mx.sym.sqrt(x), x=np.array([4.0, 9.0]))
    np.testing.assert_allclose(out, [2, 3])
    assert len(tu.simple_forward(mx.sym.Group([x * 2, x + 1]), x=np.ones(2))) == 2
    assert tu.default_context() == mx.cpu(0) and tu.default_dtype() is np.float32
    try:
        tu.set_default_context(mx.cpu(1))
        assert tu.default_context() == mx.cpu(1) == mx.current_context()
        assert tu.rand_ndarray((2,)).context == mx.cpu(1)
        with mx.cpu(0):
            assert tu.default_context() == mx.cpu(0)
        assert tu.default_context() == mx.cpu(1)
    finally:
        tu.set_default_context(mx.cpu(0))


def test_small_helpers():
    assert list(tu.list_gpus()) == list(range(mx.context.num_gpus()))
    a = mx.nd.ones((2,))
    assert tu.same_array(a, a) and not tu.same_array(a, a.copy())
    assert np.array_equal(a.asnumpy(), [1, 1])
    tu.assert_almost_equal_ignore_nan(np.array([1.0, np.nan]), np.array([1.0, 5.0]))
    tu.assert_almost_equal_with_err(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 9.0]), etol=0.4)
    with pytest.raises(AssertionError), contextlib.redirect_stdout(io.StringIO()):
        tu.assert_almost_equal_with_err(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 9.0]), etol=0.2)
    with pytest.raises(AssertionError), contextlib.redirect_stdout(io.StringIO()):
        tu.assert_allclose(np.float64(1.0), np.float64(1.0 + 1e-6))
    tu.assert_almost_equal(mx.nd.array([1, 0]) > 0, mx.nd.array([2, 0]) > 0)  # same values: exact
    tu.assert_almost_equal(np.array([True, False]), np.array([True, False]))
    calls = []

    @tu.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) == 2
    flaky()
    assert len(calls) == 2
    with tu.environment("JBIND_TEST_UTILS_X", "1"):
        assert os.environ["JBIND_TEST_UTILS_X"] == "1"
        with tu.environment({"JBIND_TEST_UTILS_X": None}):
            assert "JBIND_TEST_UTILS_X" not in os.environ
    assert "JBIND_TEST_UTILS_X" not in os.environ
    assert tu.random_sample([1, 2, 3], 0) == []
    assert len(tu.random_uniform_arrays((2,), (3, 1), low=-1, high=1)) == 2


def test_discard_stderr(capfd):
    with tu.discard_stderr():
        os.write(2, b"hidden\n")
    os.write(2, b"shown\n")
    assert capfd.readouterr().err == "shown\n"


def test_random_sparse_arrays_and_their_parts():
    csr, (data, indices, indptr) = tu.rand_sparse_ndarray((6, 5), "csr", density=0.5)
    assert csr.stype == "csr" and csr.shape == (6, 5)
    dense = csr.asnumpy()
    assert indptr[-1] == len(data) == len(indices) == np.count_nonzero(dense)
    np.testing.assert_array_equal(dense[np.repeat(np.arange(6), np.diff(indptr)), indices], data)
    rsp, (rdata, rows) = tu.rand_sparse_ndarray((7, 3), "row_sparse", density=0.6)
    assert rsp.stype == "row_sparse" and list(rows) == sorted(set(rows))
    np.testing.assert_array_equal(rsp.asnumpy()[rows], rdata)
    assert not rsp.asnumpy()[np.setdiff1d(np.arange(7), rows)].any()
    assert tu.rand_ndarray((4, 4), stype="csr", density=0.0).asnumpy().sum() == 0
    ones = tu.rand_sparse_ndarray((4, 4), "csr", density=1.0, data_init=2.0)[0].asnumpy()
    assert (ones == 2.0).all()


def test_clear_errors():
    with pytest.raises(mx.MXNetError, match="stype must be"):
        tu.rand_ndarray((2, 2), stype="coo")
    with pytest.raises(mx.MXNetError, match="does not download"):
        tu.get_mnist()
    with pytest.raises(mx.MXNetError, match="does not download"):
        tu.download("http://example.com/x")
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    with pytest.raises(ValueError, match="do not match"):
        tu.check_symbolic_forward(x + y, {"x": np.ones(2)}, [np.ones(2)])
    with pytest.raises(mx.MXNetError, match="single-output"):
        tu.check_numeric_gradient(mx.sym.Group([x, y]), [np.ones(2), np.ones(2)])
    with pytest.raises(ValueError, match="dtype"):
        tu.check_symbolic_forward(x, [np.ones(2)], [np.ones(2)], dtype=np.int32)


# --- the names MXNet's tests import --------------------------------------------------------------


def test_star_import_hands_over_mxnets_module_level_names():
    """MXNet's test_utils has no __all__: a star import brings its imports (numpy as np,
    numpy.random as rnd, os, sys, ...) and functions, and jbind-only names stay behind."""
    ns = {}
    exec("from jbind.test_utils import *", ns)
    assert ns["np"] is np and ns["rnd"] is np.random and ns["os"] is os and ns["mx"] is mx
    assert ns["npt"] is np.testing and ns["ss"].norm is not None and ns["json"] is json
    for name in ("np_reduce", "verify_generator", "DummyIter", "environment", "assert_almost_equal",
                 "Context", "array", "Symbol", "Features", "use_np"):
        assert name in ns, name
    for name in ("random", "contextlib", "MXNetError", "waitall"):
        assert name not in ns, name  # a star import must not shadow e.g. the test's own `random`


def test_base_names():
    from jbind import base
    assert base.py_str(b"caf\xc3\xa9") == "café" and base.py_str("name") == "name"
    assert isinstance(np.int64(3), base.integer_types) and not isinstance(2.0, base.integer_types)
    assert isinstance(np.float16(1), base.numeric_types) and isinstance("s", base.string_types)
    assert base.mx_real_t is np.float32 and repr(base._Null) == "_Null"
    x = object()
    assert base._as_list(x) == [x] and base._as_list((1, 2)) == (1, 2)
    with tu.environment("MXNET_HOME", "/tmp/mxhome"):
        assert base.data_dir() == "/tmp/mxhome"
    with tu.environment("MXNET_HOME", None):
        assert base.data_dir().endswith(".mxnet")


def test_np_reduce_goes_axis_by_axis_from_the_last():
    x = np.arange(24.0).reshape(2, 3, 4)
    order = []

    def total(a, axis):
        order.append(axis)
        return np.sum(a, axis=axis)
    got = tu.np_reduce(x, (0, 2), True, total)
    assert order == [2, 0] and got.shape == (1, 3, 1)
    np.testing.assert_array_equal(got, x.sum(axis=(0, 2), keepdims=True))
    assert tu.np_reduce(x, None, False, np.max) == 23.0
    np.testing.assert_array_equal(tu.np_reduce(x, 1, False, np.min), x.min(axis=1))


def test_collapse_sum_like_sums_broadcast_axes():
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(tu.collapse_sum_like(a, (3, 1)), a.sum(axis=(0, 2)).reshape(3, 1))
    np.testing.assert_array_equal(tu.collapse_sum_like(a, (2, 3, 4)), a)
    assert tu.collapse_sum_like(np.ones((0, 3)), (3,)).tolist() == [0, 0, 0]
    with pytest.raises(AssertionError, match="broadcast"):
        tu.collapse_sum_like(a, (2, 4))


def test_compare_ndarray_tuple_walks_nested_tuples():
    one = mx.nd.ones((2,))
    tu.compare_ndarray_tuple((one, (one, one)), (np.ones(2), (np.ones(2), np.ones(2))))
    tu.compare_ndarray_tuple(None, one)  # a stateless optimizer: nothing to compare
    with pytest.raises(AssertionError), contextlib.redirect_stdout(io.StringIO()):
        tu.compare_ndarray_tuple((one, one), (np.ones(2), np.zeros(2)))


def test_chi_square_and_friends_accept_the_law_and_reject_another():
    rng = np.random.RandomState(0)
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: q * 4.0, 4)
    assert buckets == [(0.0, 1.0), (1.0, 2.0), (2.0, 3.0), (3.0, 4.0)] and probs == [0.25] * 4
    p, observed, expected = tu.chi_square_check(lambda n: rng.uniform(0, 4, n), buckets, probs, nsamples=4000)
    assert p > 0.01 and observed.sum() == 4000 and expected.tolist() == [1000] * 4
    p, _, _ = tu.chi_square_check(lambda n: rng.uniform(0, 3, n), buckets, probs, nsamples=4000)
    assert p < 1e-6
    p, observed, _ = tu.chi_square_check(lambda n: rng.randint(0, 3, n), [0, 1, 2], [1 / 3] * 3, nsamples=3000)
    assert p > 0.01 and observed.sum() == 3000
    assert len(tu.verify_generator(lambda n: rng.uniform(0, 4, n), buckets, probs, nsamples=2000, nrepeat=3)) == 3
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(lambda n: rng.uniform(0, 2, n), buckets, probs, nsamples=2000, nrepeat=3)
    assert tu.mean_check(lambda n: rng.normal(0, 1, n), 0, 1, nsamples=20000)
    assert not tu.mean_check(lambda n: rng.normal(0.2, 1, n), 0, 1, nsamples=20000)
    assert tu.var_check(lambda n: rng.normal(0, 2, n), 2, nsamples=20000)
    assert not tu.var_check(lambda n: rng.normal(0, 3, n), 2, nsamples=20000)


def test_dummy_iter_repeats_the_first_batch_forever():
    it = mx.io.NDArrayIter(np.arange(6.0).reshape(3, 2), batch_size=2)
    dummy = tu.DummyIter(it)
    assert dummy.batch_size == 2 and dummy.provide_data == it.provide_data
    batches = [next(dummy) for _ in range(5)]  # the real iterator has two batches
    assert all(b is batches[0] for b in batches)
    np.testing.assert_array_equal(batches[0].data[0].asnumpy(), [[0, 1], [2, 3]])


def test_environment_probes_and_use_np():
    with tu.environment("CD_JOB", "1"):
        assert tu.is_cd_run()
    with tu.environment("CD_JOB", None):
        assert not tu.is_cd_run()
    assert tu.is_op_runnable() and not tu.has_tvm_ops()
    assert mx.runtime.Features().is_enabled("LAPACK") and not mx.runtime.Features().is_enabled("TVM_OP")
    with pytest.raises(RuntimeError, match="unknown"):
        mx.runtime.Features().is_enabled("NOT_A_FEATURE")


def test_compare_optimizer_runs_both_updates():
    tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1), mx.optimizer.SGD(learning_rate=0.1), (3,), np.float32)
    with pytest.raises(AssertionError), contextlib.redirect_stdout(io.StringIO()):
        tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1), mx.optimizer.SGD(learning_rate=0.5), (3,),
                             np.float32)


# --- deliberate differences -----------------------------------------------------------------------


def test_assert_exception_fails_when_nothing_is_raised():
    """assert_exception(f, AssertionError) fails when f raises nothing (MXNet's passes: its own assert is caught)."""
    tu.assert_exception(lambda: 1 / 0, ZeroDivisionError)
    with pytest.raises(AssertionError, match="did not raise"):
        tu.assert_exception(lambda: None, AssertionError)


def test_float32_tolerances_on_gpu_stay_float32():
    """float32 on a GPU keeps float32's tolerances (MXNet uses float16's on A100-class GPUs, for TF32)."""
    class OnGpu:
        dtype = np.float32
        ctx = mx.gpu(0)
    assert tu.get_tols(OnGpu(), OnGpu(), None, None) == (1e-4, 1e-3)


def test_failing_assert_leaves_numpy_print_options():
    """A failing assert_almost_equal leaves numpy's print options (MXNet sets threshold=4, suppress=True)."""
    before = np.get_printoptions()
    with pytest.raises(AssertionError), contextlib.redirect_stdout(io.StringIO()):
        tu.assert_almost_equal(np.zeros(10), np.ones(10))
    assert np.get_printoptions() == before


def test_mx_test_utils_is_the_module():
    assert mx.test_utils is tu


def test_sparse_gradient_storage_requests_compare_dense_values():
    x = mx.sym.Variable("x")
    loc = {"x": np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)}
    tu.check_symbolic_backward(x * 2, loc, [np.ones((2, 2), np.float32)], {"x": np.full((2, 2), 2.0, np.float32)},
                               grad_stypes={"x": "row_sparse"})
    with pytest.raises(AssertionError):
        tu.check_symbolic_backward(x * 3, loc, [np.ones((2, 2), np.float32)],
                                   {"x": np.full((2, 2), 2.0, np.float32)}, grad_stypes={"x": "row_sparse"})


def test_numeric_gradient_of_many_elements_is_batched_and_agrees_with_one_at_a_time():
    # Past MIN_ELEMENTS the finite differences run as one vmapped forward over batches of
    # perturbed copies; they agree with perturbing one element per forward, and a wrong
    # backward is still caught.
    from jbind import _test_numeric
    x = mx.sym.Variable("x")
    sym = mx.sym.broadcast_mul(mx.sym.tanh(x), mx.sym.sum(x * x, axis=1, keepdims=True))
    loc = {"x": np.random.RandomState(3).uniform(-1, 1, (5, 20))}
    proj = mx.sym.Variable("p")
    exe = (sym * proj).bind(mx.cpu(), args={"x": mx.nd.array(loc["x"]), "p": mx.nd.ones((5, 20))})
    exe.forward(is_train=True)
    batched = tu.numeric_grad(exe, {"x": loc["x"].copy()}, eps=1e-3)["x"]
    old = _test_numeric.MIN_ELEMENTS
    _test_numeric.MIN_ELEMENTS = 10 ** 9
    try:
        single = tu.numeric_grad(exe, {"x": loc["x"].copy()}, eps=1e-3)["x"]
    finally:
        _test_numeric.MIN_ELEMENTS = old
    np.testing.assert_allclose(batched, single, rtol=1e-2, atol=1e-2)  # float32 rounding of eps=1e-3 steps
    tu.check_numeric_gradient(sym, loc, numeric_eps=1e-3, rtol=1e-2, atol=1e-3)
    with pytest.raises(AssertionError):  # the gradient of a different function is refused
        tu.check_numeric_gradient(mx.sym.BlockGrad(sym) + x * 0, loc, numeric_eps=1e-3, rtol=1e-2, atol=1e-3)
