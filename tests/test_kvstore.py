"""`mx.kv` against MXNet 1.9.1's local KVStore.

Golden files: tests/golden/kvstore/ from tests/golden/make_kvstore_golden.py (cases in
tests/golden/kvstore_cases.py, run here with jbind and the same random draws). Across
workers (`dist_sync`) the store is checked in tests/test_launch.py.
"""
import json
import os
import pathlib
import sys
import zlib

import numpy as np
import pytest

import jbind as mx
from jbind.base import MXNetError

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
sys.path.insert(0, str(GOLDEN))
import kvstore_cases as kc  # noqa: E402

KV = GOLDEN / "kvstore"


def seed_for(name):
    return zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF


def _check(got, want):
    assert sorted(got) == sorted(want.files)
    for k in want.files:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("name", sorted(kc.CASES))
def test_matches_mxnet(name):
    _check(kc.CASES[name](mx, np.random.RandomState(seed_for(name))), np.load(KV / (name + ".npz")))


def test_optimizer_states_from_mxnet_and_back(tmp_path):
    """Halfway states saved by MXNet continue the run here; so do jbind's own, saved atomically."""
    want = np.load(KV / "states.npz")
    rng = np.random.RandomState(seed_for("states"))
    ours = tmp_path / "ours.states"
    first = kc.states_first_half(mx, rng, str(ours))
    weights = {k: first["a%s_step1" % k] for k in kc.STATES_KEYS}
    saved = rng.get_state()
    from_mxnet = kc.states_second_half(mx, rng, str(KV / "adam.states"), weights)
    rng.set_state(saved)
    from_ours = kc.states_second_half(mx, rng, str(ours), weights)
    _check({**first, **from_mxnet}, want)
    _check({**first, **from_ours}, want)
    assert sorted(os.listdir(tmp_path)) == ["ours.states"]  # no temp file left behind


def test_states_with_the_optimizer(tmp_path):
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.ones((2,)))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, momentum=0.9))
    for _ in range(3):
        kv.push(0, mx.nd.ones((2,)))
    kv.save_optimizer_states(str(tmp_path / "s"), dump_optimizer=True)
    kv2 = mx.kv.create("local")
    kv2.init(0, mx.nd.ones((2,)))
    kv2.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    kv2.load_optimizer_states(str(tmp_path / "s"))
    opt = kv2._updater.optimizer
    assert (opt.lr, opt.momentum, opt.num_update) == (0.5, 0.9, 3)
    np.testing.assert_allclose(kv2._updater.states[0].asnumpy(), kv._updater.states[0].asnumpy())


@pytest.mark.parametrize("name", sorted(kc.ERRORS))
def test_errors(name, tmp_path, monkeypatch):
    """Every call MXNet rejects raises MXNetError here, at the call (MXNet's pushes fail later)."""
    assert json.loads((KV / "errors.json").read_text())[name] is not None  # MXNet rejects it too
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MXNetError):
        kc.ERRORS[name](mx)
    assert os.listdir(tmp_path) == []


def test_bad_push_changes_nothing():
    kv = mx.kv.create("local")
    kv.init([0, 1], [mx.nd.ones((2,)), mx.nd.ones((3,))])
    with pytest.raises(MXNetError, match=r"key 1 holds shape \(3,\); a pushed value has shape \(2,\)"):
        kv.push([0, 1], [mx.nd.zeros((2,)), mx.nd.zeros((2,))])
    out = mx.nd.zeros((2,))
    kv.pull(0, out=out)
    assert out.asnumpy().tolist() == [1, 1]


@pytest.mark.parametrize("name,kv_type", [("local", "local"), ("Device", "device"), ("nccl", "nccl"),
                                          ("dist_sync", "dist_sync"), ("dist_device_sync", "dist_device_sync"),
                                          ("local_allreduce_cpu", "local_allreduce_cpu"),
                                          ("local_update_cpu", "local_update_cpu"),
                                          ("local_allreduce_device", "local_allreduce_device")])
def test_create(name, kv_type):
    kv = mx.kv.create(name)
    assert (kv.type, kv.rank, kv.num_workers) == (kv_type, 0, 1)
    assert mx.kvstore.create is mx.kv.create


def test_dist_sync_in_one_process_is_a_one_worker_store():
    kv = mx.kv.create("dist_sync")
    kv.init("w", mx.nd.ones((2,)))
    kv.push("w", [mx.nd.ones((2,)), mx.nd.ones((2,), ctx=mx.cpu(1))])
    out = mx.nd.zeros((2,))
    kv.pull("w", out=out)
    kv.barrier()
    assert out.asnumpy().tolist() == [2, 2]


def test_create_errors():
    with pytest.raises(MXNetError, match="dist_sync"):
        mx.kv.create("dist_async")
    with pytest.raises(MXNetError, match="unknown kvstore type 'foo'"):
        mx.kv.create("foo")
    with pytest.raises(TypeError):
        mx.kv.create(3)
    with pytest.raises(MXNetError, match="not supported"):
        mx.kv.create("dist_sync").set_gradient_compression({"type": "2bit"})


def test_store_keeps_its_own_buffers():
    """The store never holds the caller's buffer, which a compiled step may donate later."""
    kv = mx.kv.create("local")
    v = mx.nd.ones((2,))
    kv.init(0, v)
    assert kv._store[0].data is not v.data
    g = mx.nd.full((2,), 3.0)
    kv.push(0, g)
    assert kv._store[0].data is not g.data
    out = mx.nd.zeros((2,), ctx=mx.cpu(1))
    kv.pull(0, out=out)
    assert out.context == mx.cpu(1) and out.asnumpy().tolist() == [3, 3]


def test_dist_push_is_one_collective(monkeypatch):
    """A dist push sums all its keys over the workers in one call; init takes rank 0's values."""
    from jbind import distributed
    calls = []

    def allreduce_sum(arrays):
        calls.append([a.shape for a in arrays])
        return [a * 2 for a in arrays]  # two workers that pushed the same values

    monkeypatch.setattr(distributed, "is_distributed", lambda: True)
    monkeypatch.setattr(distributed, "allreduce_sum", allreduce_sum)
    monkeypatch.setattr(distributed, "broadcast_from_rank0", lambda arrays: [a * 0 + 7 for a in arrays])
    kv = mx.kv.create("dist_device_sync")
    kv.init(["a", "b"], [mx.nd.ones((2,)), mx.nd.ones((3,), ctx=mx.cpu(1))])
    kv.push(["a", "b", "a"], [[mx.nd.ones((2,)), mx.nd.ones((2,), ctx=mx.cpu(1))], mx.nd.ones((3,)),
                              mx.nd.ones((2,))])
    assert calls == [[(2,), (3,)]]
    outs = [mx.nd.zeros((2,)), mx.nd.zeros((3,))]
    kv.pull(["a", "b"], out=outs)
    assert [o.asnumpy().tolist() for o in outs] == [[6, 6], [2, 2, 2]]
    assert kv._store["b"].context == mx.cpu(1)
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5))
    kv.pushpull("b", mx.nd.ones((3,)), out=outs[1])
    assert len(calls) == 2 and outs[1].asnumpy().tolist() == [1, 1, 1]  # 2 - 0.5 * (1 + 1)
    kv2 = mx.kv.create("dist_sync")
    kv2.init(0, mx.nd.ones((2,)))
    kv2.pull(0, out=outs[0])
    assert outs[0].asnumpy().tolist() == [7, 7]


def test_push_pull_over_cpu_contexts_sharing_devices():
    # cpu(2), cpu(3) past the run's CPU devices: values from each are summed once, as in MXNet
    devs = [mx.cpu(2), mx.cpu(3)]
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.zeros((2, 3)))
    kv.push(3, [mx.nd.ones((2, 3), ctx=d) * (i + 1) for i, d in enumerate(devs)])
    outs = [mx.nd.zeros((2, 3), ctx=d) for d in devs]
    kv.pull(3, out=outs)
    assert [o.context for o in outs] == devs
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), np.full((2, 3), 3.0))
    kv._set_updater(lambda key, grad, weight: weight.__isub__(grad * 0.5))
    kv.push(3, [mx.nd.ones((2, 3), ctx=d) for d in devs])
    kv.pull(3, out=outs)
    assert outs[1].asnumpy().tolist() == [[2.0] * 3] * 2 and outs[1].context == mx.cpu(3)
