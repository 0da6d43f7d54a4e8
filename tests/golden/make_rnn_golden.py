"""Generate golden data for mx.rnn, the RNN operator and mx.io from real MXNet 1.9.1.

Run from the repository root with the MXNet venv:

    /work/mxvenv/bin/python tests/golden/make_rnn_golden.py

Writes tests/golden/rnn/graphs.json (names, attributes and inferred shapes of unrolled
cells), tests/golden/rnn/rnn_op.npz (the RNN operator's outputs and gradients) and
tests/golden/rnn/io.json (encode_sentences, BucketSentenceIter, NDArrayIter, ResizeIter).
Deterministic: fixed seeds, and the npz is written with fixed zip times.
"""
import json
import os
import sys
import warnings

import numpy as np

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rnn_cases as rc  # noqa: E402
from make_golden import save_npz  # noqa: E402

OUT = os.path.join(HERE, "rnn")


def _flat(states):
    out = []
    for s in states:
        out.extend(_flat(s) if isinstance(s, list) else [s])
    return out


def _names(x):
    if isinstance(x, list):
        return [_names(s) for s in x]
    return x.list_outputs()


def _shapes(shapes):
    return None if shapes is None else [list(s) if s is not None else None for s in shapes]


def graph_record(name, build, shapes):
    with mx.name.NameManager(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outputs, states = build(mx)
    outs = outputs if isinstance(outputs, list) else [outputs]
    group = mx.sym.Group(outs + _flat(states))
    arg, out, aux = group.infer_shape_partial(**shapes)
    attrs = {n: {k: v for k, v in a.items() if k.startswith("__")}
             for n, a in group.attr_dict().items()}
    rec = {
        "outputs": _names(outputs),
        "states": _names(states),
        "arguments": group.list_arguments(),
        "internals": group.get_internals().list_outputs(),
        "attrs": {n: a for n, a in attrs.items() if a},
        "arg_shapes": _shapes(arg),
        "out_shapes": _shapes(out),
        "warnings": [str(w.message) for w in caught],
    }
    if name.startswith("fused"):  # the RNN op as MXNet's JSON writes it
        rec["json"] = group.tojson()
    return rec


def rnn_op_record(out):
    for mode, layers, bidir in rc.RNN_OPS:
        key = "%s_%d_%s" % (mode, layers, "bi" if bidir else "uni")
        sym = rc.rnn_op_symbol(mx, mode, layers, bidir)
        exe = sym.simple_bind(mx.cpu(), data=(rc.RNN_T, rc.RNN_N, rc.RNN_I))
        rng = np.random.RandomState(len(out) + 1)
        for name in sym.list_arguments():
            arr = exe.arg_dict[name]
            arr[:] = rng.uniform(-1, 1, size=arr.shape).astype(np.float32)
            out["%s/arg:%s" % (key, name)] = arr.asnumpy()
        outs = exe.forward(is_train=True)
        heads = [rng.uniform(-1, 1, size=o.shape).astype(np.float32) for o in outs]
        exe.backward([mx.nd.array(h) for h in heads])
        for i, (o, h) in enumerate(zip(outs, heads)):
            out["%s/out:%d" % (key, i)] = o.asnumpy()
            out["%s/head:%d" % (key, i)] = h
        for name in sym.list_arguments():
            out["%s/grad:%s" % (key, name)] = exe.grad_dict[name].asnumpy()
    return out


def io_record():
    rec = {"encode": {}, "bucket": {}, "nd": {}}
    rec["encode"]["default"] = mx.rnn.encode_sentences(rc.WORDS)
    rec["encode"]["invalid0"] = mx.rnn.encode_sentences(rc.WORDS, invalid_label=0, start_label=0)
    rec["encode"]["unknown"] = mx.rnn.encode_sentences(rc.WORDS[2:], vocab={"the": 5, "cat": 6},
                                                       unknown_token="<unk>")
    sents = rc.sentences()
    rec["sentences"] = sents
    for name, kw in sorted(rc.BUCKET_ITERS.items()):
        rc.seed_all(11)
        kw = dict(kw)
        it = mx.rnn.BucketSentenceIter(sents, **kw)
        rec["bucket"][name] = {
            "buckets": list(it.buckets), "default_bucket_key": it.default_bucket_key,
            "provide_data": rc.describe(it.provide_data), "provide_label": rc.describe(it.provide_label),
            "epochs": rc.record_batches(it, epochs=2)}
    for name, kw in sorted(rc.ND_ITERS.items()):
        rc.seed_all(5)
        it = rc.nd_iter(mx, **kw)
        rec["nd"][name] = {"provide_data": rc.describe(it.provide_data),
                           "provide_label": rc.describe(it.provide_label),
                           "epochs": rc.record_batches(it)}
    rc.seed_all(5)
    resized = mx.io.ResizeIter(rc.nd_iter(mx, 10, batch_size=3, last_batch_handle="discard"), 5)
    rec["nd"]["resize"] = {"provide_data": rc.describe(resized.provide_data),
                           "provide_label": rc.describe(resized.provide_label),
                           "epochs": rc.record_batches(resized, epochs=2)}
    return rec


def main():
    os.makedirs(OUT, exist_ok=True)
    graphs = {name: graph_record(name, build, shapes) for name, (build, shapes) in sorted(rc.GRAPHS.items())}
    with open(os.path.join(OUT, "graphs.json"), "w") as f:
        json.dump(graphs, f, indent=1, sort_keys=True)
    save_npz(os.path.join(OUT, "rnn_op.npz"), rnn_op_record({}))
    with open(os.path.join(OUT, "io.json"), "w") as f:
        json.dump(io_record(), f, sort_keys=True)
    for fn in sorted(os.listdir(OUT)):
        print("%-14s %7d bytes" % (fn, os.path.getsize(os.path.join(OUT, fn))))


if __name__ == "__main__":
    main()
