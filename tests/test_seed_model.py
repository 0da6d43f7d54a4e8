"""The seed model (benchmarks/models.py): hand-written 5-layer LSTM LM, buckets 1..10."""
import numpy as np
import pytest

import jbind as mx
from models import numpy_forward, sym_gen_factory

LAYERS, HIDDEN, EMBED, VOCAB, BATCH = 5, 8, 6, 11, 3


@pytest.fixture(scope="module")
def sym_gen():
    return sym_gen_factory(mx, num_layers=LAYERS, num_hidden=HIDDEN, num_embed=EMBED, vocab=VOCAB)


def _bind_all(sym_gen):
    rng = np.random.default_rng(0)
    base = sym_gen(10)
    params = [n for n in base.list_arguments() if n not in ("data", "softmax_label")]
    exe10 = base.simple_bind(mx.cpu(), data=(BATCH, 10), softmax_label=(BATCH, 10))
    for p in params:
        exe10.arg_dict[p][:] = rng.uniform(-0.5, 0.5, size=exe10.arg_dict[p].shape)
    return params, exe10, rng


def test_every_bucket_shares_parameters_and_matches_numpy(sym_gen):
    params, exe10, rng = _bind_all(sym_gen)
    values = {p: exe10.arg_dict[p].asnumpy().astype(np.float64) for p in params}
    with mx.compile.count_compiles() as n:
        for t in range(1, 11):
            sym = sym_gen(t)
            assert sorted(n_ for n_ in sym.list_arguments() if n_ not in ("data", "softmax_label")) == sorted(params)
            exe = sym.simple_bind(mx.cpu(), data=(BATCH, t), softmax_label=(BATCH, t), shared_exec=exe10, shared_arg_names=params)
            assert all(exe.arg_dict[p] is exe10.arg_dict[p] for p in params)
            data = rng.integers(0, VOCAB, size=(BATCH, t))
            exe.forward(is_train=False, data=data)
            want = numpy_forward(values, data, LAYERS, HIDDEN)
            np.testing.assert_allclose(exe.outputs[0].asnumpy(), want, rtol=1e-4, atol=1e-6)
    assert n() == 10  # one inference executable per bucket
    with mx.compile.count_compiles() as n:
        for t in [3, 7, 3]:
            sym_gen(t).simple_bind(mx.cpu(), data=(BATCH, t), softmax_label=(BATCH, t), shared_exec=exe10,
                                   shared_arg_names=params).forward(data=np.zeros((BATCH, t)))
    assert n() == 0, "a freshly generated symbol of a compiled bucket must hit the cache"


def _loss(values, data, label):
    p = numpy_forward(values, data, LAYERS, HIDDEN)
    return -np.log(p[np.arange(len(label)), label.astype(int)]).sum()


def test_backward_matches_numpy_finite_differences(sym_gen):
    params, exe10, rng = _bind_all(sym_gen)
    t = 3
    exe = sym_gen(t).simple_bind(mx.cpu(), data=(BATCH, t), softmax_label=(BATCH, t), shared_exec=exe10, shared_arg_names=params)
    data = rng.integers(0, VOCAB, size=(BATCH, t))
    label = rng.integers(0, VOCAB, size=(BATCH, t))
    exe.forward(is_train=True, data=data, softmax_label=label)
    exe.backward()
    values = {p: exe.arg_dict[p].asnumpy().astype(np.float64) for p in params}
    flat_label = label.reshape(-1)
    # SoftmaxOutput's gradient is that of the summed cross-entropy: check a few entries per weight
    for p in ["embed_weight", "lstm_l0_i2h_weight", "lstm_l2_h2h_weight", "lstm_l4_h2h_bias", "pred_weight"]:
        g = exe.grad_dict[p].asnumpy()
        for idx in [tuple(rng.integers(0, s) for s in g.shape) for _ in range(4)]:
            if p == "embed_weight":
                idx = (int(data.reshape(-1)[idx[0] % data.size]),) + idx[1:]
            v = values[p]
            old = v[idx]
            v[idx] = old + 1e-6
            hi = _loss(values, data, flat_label)
            v[idx] = old - 1e-6
            lo = _loss(values, data, flat_label)
            v[idx] = old
            np.testing.assert_allclose(g[idx], (hi - lo) / 2e-6, rtol=2e-3, atol=2e-5, err_msg=f"{p}{idx}")
