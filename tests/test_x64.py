"""64-bit dtypes are real (JAX's x64 mode is on at import), and float32 programs stay float32.

A float64 constant or a dtype-less `jnp.zeros` in a lowering would silently promote a
float32 model to float64 (twice the memory, far slower on GPUs); these tests read the
compiled programs' HLO text and fail on any f64 in them.
"""
import os
import re
import subprocess
import sys

import jax
import numpy as np
import pytest

import jbind as mx
from jbind.compile.cache import CACHE

_F64 = re.compile(r"\bf64\b")
_F64_ARRAY = re.compile(r"\dxf64|f64\[\d")  # a float64 array (StableHLO or HLO); scalars are constants XLA folds


def _compiled_texts():
    texts = []
    for fn in list(CACHE._entries.values()):
        if isinstance(fn, tuple):  # gluon's (executable, pure function, tag)
            fn = fn[0]
        texts.append(fn.as_text())
    return texts


def _assert_no_f64(texts):
    assert texts, "nothing was compiled"
    for t in texts:
        bad = [line.strip() for line in t.splitlines() if _F64.search(line)]
        assert not bad, "f64 in a float32 program:\n" + "\n".join(bad[:10])


def test_x64_mode_is_on():
    """MXNet's float64 / int64 are stored as such: JAX's x64 mode is on after import."""
    assert jax.config.jax_enable_x64
    assert mx.nd.ones((2,), dtype="float64").asnumpy().dtype == np.float64
    assert mx.nd.zeros((2,), dtype="int64").asnumpy().dtype == np.int64


def test_jbind_x64_0_leaves_jax_setting():
    """JBIND_X64=0 leaves JAX's x64 mode as JAX_ENABLE_X64 sets it (off by default)."""
    code = "import jbind as mx, jax; print(jax.config.jax_enable_x64, mx.nd.ones((1,), dtype='float64').dtype.__name__)"
    env = {**os.environ, "JBIND_X64": "0", "JAX_PLATFORMS": "cpu"}
    env.pop("JAX_ENABLE_X64", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "float32"]


def _lm_symbol(seq_len=3, vocab=11, hidden=8):
    data, label = mx.sym.Variable("data"), mx.sym.Variable("softmax_label")
    embed = mx.sym.Embedding(data, input_dim=vocab, output_dim=hidden, name="embed")
    cell = mx.rnn.SequentialRNNCell()
    cell.add(mx.rnn.LSTMCell(hidden, prefix="lstm_l0_"))
    cell.add(mx.rnn.LSTMCell(hidden, prefix="lstm_l1_"))
    outputs, _ = cell.unroll(seq_len, inputs=embed, merge_outputs=True)
    pred = mx.sym.FullyConnected(mx.sym.Reshape(outputs, shape=(-1, hidden)), num_hidden=vocab, name="pred")
    return mx.sym.SoftmaxOutput(pred, mx.sym.Reshape(label, shape=(-1,)), name="softmax")


def _conv_symbol():
    x = mx.sym.Variable("data")
    x = mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, pad=(1, 1), name="c1")
    x = mx.sym.BatchNorm(x, name="bn1")
    x = mx.sym.Activation(x, act_type="relu")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max")
    x = mx.sym.Dropout(x, p=0.2)
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(x, name="softmax")


@pytest.mark.parametrize("which", ["lm", "conv"])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_float32_module_compiles_without_f64(which, optimizer):
    """A float32 Module's fused train step (forward, backward, optimizer update) and its
    inference forward hold no f64 op, and its parameters stay float32."""
    mx.compile.clear()
    if which == "lm":
        sym, dshape, lshape = _lm_symbol(), (2, 3), (2, 3)
        data = mx.nd.array(np.random.randint(0, 11, dshape))
        label = mx.nd.array(np.random.randint(0, 11, lshape))
    else:
        sym, dshape, lshape = _conv_symbol(), (2, 1, 6, 6), (2,)
        data, label = mx.nd.array(np.random.rand(*dshape)), mx.nd.array([0, 2])
    mod = mx.mod.Module(sym, data_names=["data"], label_names=["softmax_label"])
    mod.bind(data_shapes=[("data", dshape)], label_shapes=[("softmax_label", lshape)])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer=optimizer, optimizer_params={"learning_rate": 0.1, "wd": 1e-4,
                                                              "rescale_grad": 0.5})
    batch = mx.io.DataBatch([data], [label])
    mod.train_step(batch) if hasattr(mod, "train_step") else None
    mod.forward_backward(batch)
    mod.update()
    mod.forward(batch, is_train=False)
    assert mod.get_outputs()[0].dtype == np.float32
    args, auxs = mod.get_params()
    assert {v.dtype for v in list(args.values()) + list(auxs.values())} == {np.float32}
    _assert_no_f64(_compiled_texts())


def test_float32_gluon_training_compiles_without_f64():
    """A hybridized float32 Gluon net trained with Trainer compiles without f64 ops."""
    mx.compile.clear()
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Conv2D(4, 3, padding=1), mx.gluon.nn.BatchNorm(), mx.gluon.nn.Activation("relu"),
            mx.gluon.nn.Dense(3))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    x, y = mx.nd.array(np.random.rand(2, 1, 5, 5)), mx.nd.array([0, 1])
    with mx.autograd.record():
        loss = loss_fn(net(x), y)
    loss.backward()
    trainer.step(2)
    assert net(x).dtype == np.float32
    assert {p.data().dtype for p in net.collect_params().values()} == {np.float32}
    _assert_no_f64(_compiled_texts())


def test_eager_ops_keep_float32():
    """Eager ops, operators with Python / numpy scalars and creation ops stay float32."""
    a = mx.nd.array(np.random.rand(2, 3))
    assert a.dtype == np.float32
    outs = [a + 1.5, a * np.float64(2), 2.0 / (a + 1), a ** 2, -a, mx.nd.exp(a), mx.nd.softmax(a),
            mx.nd.sum(a), mx.nd.mean(a, axis=1), mx.nd.norm(a), a.clip(0.1, 0.5), mx.nd.sqrt(a),
            mx.nd.dot(a, a.T), mx.nd.zeros((2,)), mx.nd.ones((2,)), mx.nd.full((2,), 3.5),
            mx.nd.arange(3), mx.nd.random.uniform(shape=(2,)), mx.nd.random.normal(shape=(2,)),
            mx.nd.one_hot(mx.nd.array([0, 1]), 3), mx.nd.linspace(0, 1, 3), mx.nd.eye(2),
            mx.nd.topk(a, k=1, ret_typ="value"), mx.nd.sort(a), a.astype("float32"),
            mx.nd.smooth_l1(a, scalar=1.0), mx.nd.LeakyReLU(a, slope=0.1)]
    assert [o.dtype for o in outs] == [np.float32] * len(outs)


def test_integer_index_ops():
    """Index-producing ops keep MXNet's dtypes (float32 indices by default, int64 where MXNet
    says so) and index ops take float or integer indices."""
    a = mx.nd.array([[3, 1, 2], [0, 5, 4]])
    assert mx.nd.argmax(a, axis=1).dtype == np.float32
    assert mx.nd.argsort(a).dtype == np.float32
    assert mx.nd.topk(a, k=2, dtype="int64").dtype == np.int64
    assert mx.nd.shape_array(a).dtype == np.int64 and mx.nd.shape_array(a).asnumpy().dtype == np.int64
    for idx in (mx.nd.array([1, 0]), mx.nd.array([1, 0], dtype="int32"), mx.nd.array([1, 0], dtype="int64")):
        np.testing.assert_array_equal(mx.nd.take(a, idx).asnumpy(), [[0, 5, 4], [3, 1, 2]])
        np.testing.assert_array_equal(mx.nd.pick(a, idx, axis=1).asnumpy(), [1, 0])
        assert mx.nd.Embedding(idx, a, input_dim=2, output_dim=3).dtype == np.float32
    i = mx.nd.array([5, 7], dtype="int64")
    assert (i + 1).dtype == np.int64 and (i * 2.7).asnumpy().tolist() == [10, 14]
    big = mx.nd.array([2 ** 40], dtype="int64")
    assert int(big.asnumpy()[0]) == 2 ** 40


def _sweep_samples():
    from test_op_sweep import SAMPLES
    wide = ("float64", "float16", np.float64, np.float16)
    return [c for c in SAMPLES if not any(t in wide for t in (c.type_dict or {}).values())]


@pytest.mark.parametrize("case", _sweep_samples(), ids=lambda c: c.id)
def test_every_op_sample_lowers_float32_without_f64(case):
    """Every op sample bound with float32 inputs lowers (forward and backward) without f64:
    no float64 constant, dtype-less creation or float64 draw inside an op's lowering."""
    from helpers import CTX
    sym = case.build()
    args = sym.list_arguments()
    req = {n: ("null" if n in case.no_grad or not case.grad else "write") for n in args}
    exe = sym.simple_bind(CTX, grad_req=req, type_dict=case.type_dict, **case.shapes)
    modes = ["infer", "train"] if any(exe._diff) else ["infer", "train_fwd"]
    for mode in modes:
        lowered = exe._lower(mode)
        outs = jax.tree_util.tree_leaves(lowered.out_info)[:len(exe.outputs)]
        assert [np.dtype(o.dtype) for o in outs] == list(exe._out_dtypes), f"{case.id} ({mode}): output dtypes"
        text = lowered.as_text()
        bad = [line.strip() for line in text.splitlines() if _F64_ARRAY.search(line)]
        assert not bad, f"{case.id} ({mode}): f64 in a float32 program:\n" + "\n".join(bad[:6])


def test_64_bit_dtypes_are_honoured_as_mxnet():
    """dtype='float64' / 'int64' is kept by creation, astype, ops, samplers and binding; a numpy
    array without dtype= becomes float32, as MXNet's mx.nd.array does. Read from MXNet 1.9.1."""
    f64, i64 = mx.nd.ones((2, 3), dtype="float64"), mx.nd.array([1, 2, 3], dtype="int64")
    assert mx.nd.array(np.zeros(3)).dtype == mx.nd.array(np.arange(3)).dtype == np.float32
    assert mx.nd.array(f64).dtype == mx.nd.array([1, 2], dtype=np.float64).dtype == np.float64
    got = {"full": mx.nd.full((2,), 3, dtype="int64"), "arange": mx.nd.arange(3, dtype="int64"),
           "astype": mx.nd.ones((2,)).astype("float64"), "plus": f64 + 1, "npmul": f64 * np.float64(2),
           "sum": f64.sum(), "dot": mx.nd.dot(f64, f64.T), "softmax": mx.nd.softmax(f64),
           "argmax": mx.nd.argmax(f64, axis=1), "isum": i64.sum(), "iplus": i64 + 1,
           "take": mx.nd.take(f64, i64[:1]), "onehot": mx.nd.one_hot(i64, 4, dtype="float64"),
           "uniform": mx.nd.random.uniform(shape=(2,), dtype="float64"),
           "normal": mx.nd.random.normal(shape=(2,), dtype="float64"),
           "randint": mx.nd.random.randint(0, 5, shape=(2,), dtype="int64"),
           "sample": mx.nd.sample_uniform(f64, f64 + 1, dtype="float64"),
           "like": mx.nd.random.uniform_like(f64), "shape": mx.nd.shape_array(f64),
           "cast": mx.nd.cast(f64, dtype="int64"), "sort": mx.nd.sort(i64), "eye": mx.nd.eye(2, dtype="int64"),
           "linspace": mx.nd.linspace(0, 1, 3, dtype="float64")}
    want = {k: ("int64" if k in ("full", "arange", "isum", "iplus", "randint", "shape", "cast", "sort", "eye")
                else "float64") for k in got}
    assert {k: np.dtype(v.dtype).name for k, v in got.items()} == want
    assert {k: v.asnumpy().dtype.name for k, v in got.items()} == want
    assert isinstance(f64[0, 0].asscalar(), np.float64)
    assert mx.nd.sample_uniform(f64, f64 + 1).dtype == np.float32  # dtype defaults to float32, as MXNet's
    csr = mx.nd.array([[0, 1], [2, 0]]).tostype("csr")
    assert csr.indices.dtype == csr.indptr.dtype == np.int64


def test_float64_executor_trains_in_float64():
    """type_dict float64 binds float64 arguments, outputs, gradients and head gradients."""
    x = mx.sym.Variable("x")
    exe = mx.sym.FullyConnected(x, num_hidden=2, name="fc").simple_bind(mx.cpu(), x=(2, 3),
                                                                       type_dict={"x": "float64"})
    exe.arg_dict["fc_weight"][:] = 1 / 3
    exe.forward(is_train=True, x=np.ones((2, 3)))
    exe.backward(mx.nd.full((2, 2), 1 / 3, dtype="float64"))
    assert exe.outputs[0].dtype == exe.grad_dict["fc_weight"].dtype == np.float64
    np.testing.assert_allclose(exe.grad_dict["fc_weight"].asnumpy(), np.full((2, 3), 2 / 3), rtol=1e-15)


def test_integer_division_and_mean_stay_integer():
    """`/` on integer NDArrays truncates and mean of integers is an integer, as in MXNet 1.9.1."""
    i = mx.nd.array([-3, 2, 3], dtype="int64")
    assert (i / 2).asnumpy().tolist() == [-1, 1, 1] and (7 / i).asnumpy().tolist() == [-2, 3, 2]
    assert mx.nd.mean(i).dtype == np.int64 and mx.nd.mean(i).asnumpy().tolist() == [0]
    assert mx.nd.sum(mx.nd.array([1, 2], dtype="int32")).dtype == np.int32


def test_max_and_min_of_infinities_are_infinite():
    """max / min over an axis holding inf or -inf give it (not nan), as MXNet's and numpy's."""
    a = mx.nd.array([[1.0, np.inf], [-np.inf, 2.0]])
    assert mx.nd.max(a, axis=1).asnumpy().tolist() == [np.inf, 2.0]
    assert mx.nd.min(a, axis=1).asnumpy().tolist() == [1.0, -np.inf]
