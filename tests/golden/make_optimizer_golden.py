"""Golden values for optimizers, lr schedulers, metrics and initializers, from MXNet 1.9.1.

Run from the repository root with the MXNet venv:

    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/make_optimizer_golden.py

Writes tests/golden/optimizer/<case>.npz (one per optimizer case: initial weights, the
gradient of every step, the weights after every step and the final optimizer states),
lr_scheduler.json, metric.json, initializer.npz and initializer.json. Deterministic:
every case is seeded from its name. The cases live in train_cases.py.
"""
import json
import os
import sys
import warnings
import zlib

import numpy as np

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_cases as tc  # noqa: E402

OUT = os.path.join(HERE, "optimizer")


def seed_for(name):
    return zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF


def _leaves(state):
    if state is None:
        return []
    if isinstance(state, (tuple, list)):
        return [x for s in state for x in _leaves(s)]
    return [state.asnumpy()]


def run_optimizer_case(name):
    rng = np.random.RandomState(seed_for(name))
    n = tc.num_params(name)
    params = tc.PARAMS[:n]
    opt = tc.make_optimizer(mx, name)
    updater = mx.optimizer.get_updater(opt)
    out = {}
    weights = []
    for i, (_, shape) in enumerate(params):
        w = rng.uniform(-1, 1, shape).astype(np.float32)
        out["w%d" % i] = w
        weights.append(mx.nd.array(w))
    for s in range(tc.STEPS):
        grads = []
        for i, (_, shape) in enumerate(params):
            g = rng.uniform(-2, 2, shape).astype(np.float32)
            out["g%d_%d" % (s, i)] = g
            grads.append(mx.nd.array(g))
        updater(list(range(n)), grads, weights)
        for i in range(n):
            out["out%d_%d" % (s, i)] = weights[i].asnumpy()
    for i in range(n):
        for j, leaf in enumerate(_leaves(updater.states[i])):
            out["state%d_%d" % (i, j)] = leaf
    out["num_update"] = np.array(opt.num_update)
    np.savez_compressed(os.path.join(OUT, name + ".npz"), **out)


def run_schedulers():
    res = {}
    for name, (cls, kwargs, calls) in tc.SCHED_CASES.items():
        sched = getattr(mx.lr_scheduler, cls)(**kwargs)
        res[name] = [float(sched(u)) for u in calls]
    return res


def run_metrics():
    res = {}
    for name, (_, _, kind) in tc.METRIC_CASES.items():
        rng = np.random.RandomState(seed_for(name))
        metric = tc.make_metric(mx, name)
        batches, values, globals_ = [], [], []
        for _ in range(3):
            labels, preds = tc.draw_batch(rng, kind)
            batches.append([[x.tolist() for x in labels], [x.tolist() for x in preds]])
            metric.update([mx.nd.array(x) for x in labels], [mx.nd.array(x) for x in preds])
            values.append(metric.get_name_value())
            globals_.append(metric.get_global_name_value())
        res[name] = dict(batches=batches, values=values, global_values=globals_,
                         num_inst=float(getattr(metric, "num_inst", 0)))
    return res


def _call(init, desc, shape):
    arr = mx.nd.zeros(shape)
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            init(desc, arr)
        return arr.asnumpy(), [x.category.__name__ for x in w]
    except Exception as e:  # noqa: BLE001  (recorded, compared by the test)
        return None, type(e).__name__


def build_init_dumps(spec):
    return tc.build_init(mx, spec).dumps()


def run_initializers():
    arrays, meta = {}, {"errors": {}, "warnings": {}, "dumps": {}}
    cases = tc.init_cases(mx)
    for k, (init, desc, shape) in cases.items():
        arr, info = _call(init, desc, shape)
        if arr is None:
            meta["errors"][k] = info
        else:
            arrays[k] = arr
            meta["warnings"][k] = info
    meta["dumps"] = [build_init_dumps(spec) for spec in tc.DUMPS_CASES]
    return arrays, meta


def main():
    os.makedirs(OUT, exist_ok=True)
    for name in tc.OPT_CASES:
        run_optimizer_case(name)
    with open(os.path.join(OUT, "lr_scheduler.json"), "w") as f:
        json.dump(run_schedulers(), f, indent=1, sort_keys=True)
    with open(os.path.join(OUT, "metric.json"), "w") as f:
        json.dump(run_metrics(), f, sort_keys=True)
    arrays, meta = run_initializers()
    np.savez_compressed(os.path.join(OUT, "initializer.npz"), **arrays)
    with open(os.path.join(OUT, "initializer.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    print("wrote", len(os.listdir(OUT)), "files to", OUT)


if __name__ == "__main__":
    main()
