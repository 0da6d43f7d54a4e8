"""CTCLoss against a brute-force numpy CTC (every alignment of a tiny sequence), forward and
gradient; its errors, imperative use, JSON aliases and a small training run.
MXNet 1.9.1's own numbers are checked in tests/golden/ops_ctc/."""
import functools
import itertools
import json

import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op, numeric_grad

V = mx.sym.Variable


@functools.lru_cache(maxsize=None)
def _alignments(steps, classes, blank, label):
    """Every path of `steps` classes that collapses (merge repeats, drop blanks) to `label`."""
    paths = [p for p in itertools.product(range(classes), repeat=steps)
             if tuple(k for i, k in enumerate(p) if k != blank and (i == 0 or k != p[i - 1])) == label]
    return np.array(paths, dtype=int).reshape(len(paths), steps)


def _ctc_ref(data, label, blank, data_lengths=None, label_lengths=None):
    """-log p(label | data) summed over every alignment; 0 where no alignment fits (as MXNet)."""
    steps, batch, classes = data.shape
    out = np.zeros(batch)
    for b in range(batch):
        t = steps if data_lengths is None else int(data_lengths[b])
        lab = [int(v) for v in label[b]]
        pad = 0 if blank == 0 else -1
        if label_lengths is not None:
            lab = lab[:int(label_lengths[b])]
        elif pad in lab:
            lab = lab[:lab.index(pad)]
        e = np.exp(data[:t, b] - data[:t, b].max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        paths = _alignments(t, classes, blank, tuple(lab))
        out[b] = -np.log(np.prod(p[np.arange(t), paths], axis=1).sum()) if len(paths) else 0.0
    return out


LENGTHS = ("label", "dlen", "llen")

CASES = [
    Case("ctc_first", lambda: mx.sym.CTCLoss(V("data"), V("label"), name="ctc"),
         lambda data, label: [_ctc_ref(data, label, 0)], {"data": (4, 3, 3), "label": (3, 2)},
         inputs={"label": np.array([[1, 2], [2, 0], [1, 1]], float)}, no_grad=LENGTHS),
    Case("ctc_last_lengths",  # the third label cannot fit 2 steps: loss 0, zero gradient
         lambda: mx.sym.CTCLoss(V("data"), V("label"), V("dlen"), V("llen"), use_data_lengths=True,
                                use_label_lengths=True, blank_label="last", name="ctc"),
         lambda data, label, dlen, llen: [_ctc_ref(data, label, 2, dlen, llen)],
         {"data": (4, 3, 3), "label": (3, 2), "dlen": (3,), "llen": (3,)},
         inputs={"label": np.array([[0, 1], [1, 1], [0, 0]], float), "dlen": np.array([4.0, 3, 2]),
                 "llen": np.array([2.0, 2, 2])}, no_grad=LENGTHS),
    Case("ctc_loss_alias_data_lengths",
         lambda: mx.sym.ctc_loss(V("data"), V("label"), data_lengths=V("dlen"), use_data_lengths=True, name="ctc"),
         lambda data, label, dlen: [_ctc_ref(data, label, 0, dlen)],
         {"data": (4, 2, 3), "label": (2, 2), "dlen": (2,)},
         inputs={"label": np.array([[2, 0], [1, 2]], float), "dlen": np.array([2.0, 3])}, no_grad=LENGTHS),
    Case("ctc_makeloss",  # the usual head: MakeLoss's gradient (ones) times the CTC gradient
         lambda: mx.sym.MakeLoss(mx.sym.CTCLoss(V("data"), V("label"), blank_label="last", name="ctc"),
                                 name="loss"),
         lambda data, label: [_ctc_ref(data, label, 2)], {"data": (3, 2, 3), "label": (2, 2)},
         inputs={"label": np.array([[0, -1], [1, 0]], float)}, no_grad=LENGTHS,
         ref_grad=lambda data, label: {"data": numeric_grad(lambda i: _ctc_ref(i["data"], label, 2).sum(),
                                                            {"data": data}, "data")}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_ctc(case):
    check_op(case)


def test_ctc_structure_matches_mxnet():
    s = mx.sym.CTCLoss(V("data"), V("label"), name="ctc")
    assert s.list_outputs() == ["ctc_output0"]  # MXNet's name: its two outputs are unnamed
    assert s.infer_shape(data=(5, 2, 4), label=(2, 3)) == ([(5, 2, 4), (2, 3)], [(2,)], [])
    both = mx.sym.CTCLoss(V("d"), V("l"), V("dl"), V("ll"), use_data_lengths=True, use_label_lengths=True)
    assert both.list_arguments() == ["d", "l", "dl", "ll"]
    assert both.infer_shape(d=(5, 2, 4), l=(2, 3))[0] == [(5, 2, 4), (2, 3), (2,), (2,)]
    only_labels = mx.sym.CTCLoss(V("d"), label_lengths=V("ll"), use_label_lengths=True, name="c")
    assert only_labels.list_arguments() == ["d", "c_label", "ll"]
    assert json.loads(s.tojson())["node_row_ptr"] == [0, 1, 2, 4]  # the hidden gradient output counts


@pytest.mark.parametrize("op", ["CTCLoss", "ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"])
def test_ctc_json_aliases_load(op):
    graph = {"nodes": [{"op": "null", "name": "d", "inputs": []}, {"op": "null", "name": "l", "inputs": []},
                       {"op": op, "name": "c", "attrs": {"blank_label": "last"}, "inputs": [[0, 0, 0], [1, 0, 0]]}],
             "arg_nodes": [0, 1], "node_row_ptr": [0, 1, 2, 4], "heads": [[2, 0, 0]],
             "attrs": {"mxnet_version": ["int", 10901]}}
    s = mx.sym.load_json(json.dumps(graph))
    assert s.list_outputs() == ["c_output0"]
    data, label = np.random.default_rng(0).uniform(-1, 1, (3, 2, 4)), np.array([[1, -1], [0, 2]], float)
    out = s.bind(mx.cpu(), {"d": mx.nd.array(data), "l": mx.nd.array(label)}).forward()[0]
    np.testing.assert_allclose(out.asnumpy(), _ctc_ref(data, label, 3), rtol=1e-4)


def test_ctc_imperative():
    rng = np.random.default_rng(2)
    data, label = rng.uniform(-1, 1, (4, 2, 3)), np.array([[1, 2], [2, 0]], float)
    out = mx.nd.CTCLoss(mx.nd.array(data), mx.nd.array(label))
    assert out.shape == (2,)
    np.testing.assert_allclose(out.asnumpy(), _ctc_ref(data, label, 0), rtol=1e-4)
    label, dlen, llen = np.array([[1, 2], [2, 1]], float), np.array([3.0, 4]), np.array([1.0, 2])
    out = mx.nd.ctc_loss(mx.nd.array(data), mx.nd.array(label), data_lengths=mx.nd.array(dlen),
                         label_lengths=mx.nd.array(llen), use_data_lengths=True, use_label_lengths=True)
    np.testing.assert_allclose(out.asnumpy(), _ctc_ref(data, label, 0, dlen, llen), rtol=1e-4)


@pytest.mark.parametrize("shapes, match", [
    (dict(data=(4, 2, 3), label=(3, 2)), r"batch size of label \(3, 2\) must equal the data's \(4, 2, 3\)"),
    (dict(data=(2, 1, 3), label=(1, 3)), r"label \(1, 3\) is longer \(3\) than the sequence of data \(2, 1, 3\)"),
    (dict(data=(4, 6), label=(4, 2)), r"data must be 3-D \(sequence_length, batch, alphabet\), got shape \(4, 6\)"),
    (dict(data=(4, 2, 3), label=(2, 2, 1)), r"label must be 2-D"),
    (dict(data=(4, 2, 3), label=(2, 2), dl=(3,)), r"batch size of data_lengths \(3,\) must equal the data's, 2"),
    (dict(data=(4, 2, 3), label=(2, 2), dl=(2, 1)), r"data_lengths must be a vector"),
])
def test_ctc_bad_shapes(shapes, match):
    s = mx.sym.CTCLoss(V("data"), V("label"), V("dl"), use_data_lengths=True, name="ctc")
    with pytest.raises(mx.base.MXNetError, match=match) as e:
        s.infer_shape(**shapes)
    assert "CTCLoss 'ctc'" in str(e.value)


def test_ctc_bad_parameter_and_missing_head_gradient():
    with pytest.raises(mx.base.MXNetError, match="blank_label.*'first', 'last'"):
        mx.sym.CTCLoss(V("data"), V("label"), blank_label="middle")
    exe = mx.sym.CTCLoss(V("data"), V("label"), name="ctc").simple_bind(mx.cpu(), data=(3, 1, 3), label=(1, 1))
    exe.forward(is_train=True)
    with pytest.raises(mx.base.MXNetError, match="ctc_output0.*not a loss"):  # as MXNet: CTCLoss is no loss head
        exe.backward()


def test_ctc_module_training_lowers_the_loss():
    """FC over time steps + CTCLoss under MakeLoss, SGD with mx.mod.Module: the loss goes down."""
    mx.random.seed(0)
    rng = np.random.default_rng(0)
    n, steps, feats, classes = 8, 6, 5, 4
    label = rng.integers(1, classes, size=(n, 2)).astype(np.float32)
    x = rng.normal(size=(n, steps, feats)).astype(np.float32)
    x[:, :3, :] += label[:, :1, None]  # the data carries its labels
    x[:, 3:, :] -= label[:, 1:, None]
    fc = mx.sym.FullyConnected(V("data"), num_hidden=classes, flatten=False, name="fc")
    ctc = mx.sym.CTCLoss(mx.sym.transpose(fc, axes=(1, 0, 2)), V("label"), name="ctc")
    mod = mx.mod.Module(mx.sym.MakeLoss(ctc, name="loss"), data_names=("data",), label_names=("label",),
                        context=mx.cpu())
    mod.bind(data_shapes=[("data", x.shape)], label_shapes=[("label", label.shape)])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(label)])
    losses = []
    for _ in range(20):
        mod.forward_backward(batch)
        losses.append(float(mod.get_outputs()[0].asnumpy().mean()))
        mod.update()
    assert all(b < a for a, b in zip(losses, losses[1:])) and losses[-1] < 0.5 * losses[0], losses


def test_ctc_steps_past_data_length_are_ignored_even_nan():
    # MXNet never reads steps past a data length: NaN there changes neither loss nor gradient.
    rng = np.random.RandomState(1)
    data = rng.normal(size=(5, 2, 4)).astype(np.float32)
    label = mx.nd.array([[1, 2], [3, 0]])
    lengths = mx.nd.array([3, 3])
    padded = data.copy()
    padded[3:] = np.nan

    def run(d):
        x = mx.nd.array(d)
        x.attach_grad()
        with mx.autograd.record():
            loss = mx.nd.CTCLoss(x, label, lengths, use_data_lengths=True)
        loss.backward()
        return loss.asnumpy(), x.grad.asnumpy()
    loss, grad = run(padded)
    ref_loss, ref_grad = run(data[:3])
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-6)
    np.testing.assert_allclose(grad[:3], ref_grad, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(grad[3:], 0)
