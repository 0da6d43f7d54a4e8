"""KVStore cases, run by MXNet 1.9.1 (make_kvstore_golden.py) and by jbind (tests/test_kvstore.py).

Imports only numpy: every case takes the library module (`mxnet` or `jbind`) and a
numpy RandomState and returns name -> numpy array of everything it pulled, in order.
Values sit on cpu(0) and cpu(1), as a two-device job's gradients do.
"""
import numpy as np

SHAPE = (2, 3)
STEPS = 3


def _rand(rng, shape=SHAPE, scale=1.0):
    return (rng.uniform(-1, 1, shape) * scale).astype(np.float32)


def _nd(mx, a, dev=0):
    return mx.nd.array(a, ctx=mx.cpu(dev))


def _pull(mx, kv, key, out, name, shape=SHAPE):
    outs = [mx.nd.zeros(shape, ctx=mx.cpu(i)) for i in range(2)]
    kv.pull(key, out=outs)
    out[name] = outs[0].asnumpy()
    out[name + "_dev1"] = outs[1].asnumpy()


def push_list_sums(mx, rng, kv_type="local"):
    """init, pull into two devices, push one value per device (summed), pull again."""
    kv = mx.kv.create(kv_type)
    out = {}
    kv.init(3, _nd(mx, _rand(rng)))
    _pull(mx, kv, 3, out, "init")
    for s in range(STEPS):
        kv.push(3, [_nd(mx, _rand(rng), i) for i in range(2)])
        _pull(mx, kv, 3, out, "step%d" % s)
    kv.push(3, _nd(mx, _rand(rng), 1))  # one value, on another device than the stored one
    _pull(mx, kv, 3, out, "single")
    return out


def device_list_sums(mx, rng):
    return push_list_sums(mx, rng, "device")


def str_keys(mx, rng):
    """Lists of str keys, per-device values, a key listed twice in one push, pushpull."""
    kv = mx.kv.create("local")
    out = {}
    keys = ["fc_weight", "fc_bias", "emb"]
    shapes = [SHAPE, (3,), (4, 2)]
    kv.init(keys, [_nd(mx, _rand(rng, s)) for s in shapes])
    kv.push(keys, [[_nd(mx, _rand(rng, s), i) for i in range(2)] for s in shapes])
    outs = [[mx.nd.zeros(s, ctx=mx.cpu(i)) for i in range(2)] for s in shapes]
    kv.pull(keys, out=outs)
    for k, o in zip(keys, outs):
        out["push_" + k] = o[0].asnumpy()
        out["push_" + k + "_dev1"] = o[1].asnumpy()
    kv.push(["emb", "emb"], [_nd(mx, _rand(rng, (4, 2))), _nd(mx, _rand(rng, (4, 2)), 1)])
    o = mx.nd.zeros((4, 2))
    kv.pull("emb", out=o)
    out["twice_emb"] = o.asnumpy()
    o = mx.nd.zeros((3,))
    kv.pushpull("fc_bias", [_nd(mx, _rand(rng, (3,)), i) for i in range(2)], out=o)
    out["pushpull_fc_bias"] = o.asnumpy()
    v = _nd(mx, _rand(rng))
    kv.pushpull("fc_weight", v)
    out["pushpull_inplace"] = v.asnumpy()
    return out


def _optimizer_run(mx, rng, kv, keys, out, steps=STEPS, prefix=""):
    for s in range(steps):
        kv.push(keys, [[_nd(mx, _rand(rng, SHAPE, 2.0), i) for i in range(2)] for _ in keys])
        for k in keys:
            _pull(mx, kv, k, out, "%s%s_step%d" % (prefix, k, s))


def _optimizer_case(make_opt, keys):
    def case(mx, rng):
        kv = mx.kv.create("local")
        out = {}
        kv.init(keys, [_nd(mx, _rand(rng)) for _ in keys])
        kv.set_optimizer(make_opt(mx))
        _optimizer_run(mx, rng, kv, keys, out)
        return out
    return case


sgd_momentum = _optimizer_case(
    lambda mx: mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5), [0, 1])
adam_str_keys = _optimizer_case(
    lambda mx: mx.optimizer.Adam(learning_rate=0.05, wd=0.001, rescale_grad=0.25, clip_gradient=0.4),
    ["fc_weight", "fc_bias"])


def make_states_opt(mx):
    return mx.optimizer.Adam(learning_rate=0.05, rescale_grad=0.5)


STATES_KEYS = [0, 1]


def states_first_half(mx, rng, fname):
    """Two Adam pushes, then save_optimizer_states(fname); returns the pulled weights."""
    kv = mx.kv.create("local")
    out = {}
    kv.init(STATES_KEYS, [_nd(mx, _rand(rng)) for _ in STATES_KEYS])
    kv.set_optimizer(make_states_opt(mx))
    _optimizer_run(mx, rng, kv, STATES_KEYS, out, steps=2, prefix="a")
    kv.save_optimizer_states(fname)
    return out


def states_second_half(mx, rng, fname, weights):
    """A fresh store holding `weights` (key -> numpy), the states loaded from fname, two more pushes."""
    kv = mx.kv.create("local")
    out = {}
    kv.init(STATES_KEYS, [_nd(mx, weights[k]) for k in STATES_KEYS])
    kv.set_optimizer(make_states_opt(mx))
    kv.load_optimizer_states(fname)
    _optimizer_run(mx, rng, kv, STATES_KEYS, out, steps=2, prefix="b")
    return out


CASES = {
    "push_list_sums": push_list_sums,
    "device_list_sums": device_list_sums,
    "str_keys": str_keys,
    "sgd_momentum": sgd_momentum,
    "adam_str_keys": adam_str_keys,
}


# Calls MXNet rejects (its message, first line, is recorded in errors.json); jbind raises MXNetError.
def _store(mx):
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones(SHAPE))
    return kv


def _push_then_pull(kv, value, out):  # MXNet's push fails asynchronously: the pull shows it
    kv.push(3, value)
    kv.pull(3, out=out)
    out.asnumpy()


ERRORS = {
    "push_uninitialized": lambda mx: _store(mx).push(99, mx.nd.ones(SHAPE)),
    "pull_uninitialized": lambda mx: _store(mx).pull(99, out=mx.nd.zeros(SHAPE)),
    "push_bad_shape": lambda mx: _push_then_pull(_store(mx), mx.nd.ones((3, 3)), mx.nd.zeros(SHAPE)),
    "pull_bad_shape": lambda mx: _store(mx).pull(3, out=mx.nd.zeros((3, 2))),
    "init_twice": lambda mx: _store(mx).init(3, mx.nd.ones(SHAPE)),
    "mixed_key_types": lambda mx: _store(mx).init("a", mx.nd.ones(SHAPE)),
    "pull_without_out": lambda mx: _store(mx).pull(3),
    "keys_values_length": lambda mx: _store(mx).push([3, 3], [mx.nd.ones(SHAPE)]),
    "save_states_without_optimizer": lambda mx: _store(mx).save_optimizer_states("unused.states"),
    "gradient_compression_local": lambda mx: _store(mx).set_gradient_compression({"type": "2bit"}),
}
