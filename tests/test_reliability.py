"""Concurrency, bounded caches, fuzzed inputs, nothing lost, numerics."""
import fcntl
import gc
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import jax
import numpy as np
from hypothesis import given, strategies as st

import jbind as mx
from helpers import fuzz_settings
from jbind import io_util
from jbind.compile import CacheKey, CompileCache
from jbind.compile import cache as cache_mod
from jbind.ndarray import ndarray as nd_impl


def _net(hidden):
    data = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=hidden, name="fc1"), act_type="tanh", name="a")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name="fc2"), name="softmax")


def _run(bucket, params, hidden):
    exe = _net(hidden).simple_bind(mx.cpu(), data=(bucket, 4))
    exe.copy_params_from(params)
    exe.arg_dict["data"][:] = np.arange(bucket * 4, dtype=np.float32).reshape(bucket, 4) / 10
    exe.arg_dict["softmax_label"][:] = np.arange(bucket) % 3
    exe.forward(is_train=True)
    exe.backward()
    return exe.outputs[0].asnumpy(), exe.grad_dict["fc1_weight"].asnumpy()


def test_eight_threads_compile_each_key_once_and_match_serial():
    hidden = 13  # a size no other test uses: these keys are new
    rng = np.random.default_rng(0)
    params = {"fc1_weight": mx.nd.array(rng.normal(size=(hidden, 4))), "fc1_bias": mx.nd.zeros(hidden),
              "fc2_weight": mx.nd.array(rng.normal(size=(3, hidden))), "fc2_bias": mx.nd.zeros(3)}
    buckets = [1, 2, 3, 4] * 4
    results, errors = {}, []

    def work(i):
        try:
            for b in buckets[i % 4:] + buckets[:i % 4]:
                results.setdefault((i, b), _run(b, params, hidden))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    with mx.compile.count_compiles() as n:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads), "deadlock"
    assert not errors, errors
    assert n() == 4, "one training executable per bucket, compiled once"
    for (i, b), (out, grad) in results.items():
        want_out, want_grad = _run(b, params, hidden)
        np.testing.assert_array_equal(out, want_out)
        np.testing.assert_array_equal(grad, want_grad)


def test_pinned_entries_survive_eviction_in_lru_order():
    cache = CompileCache(max_entries=2)
    keys = [CacheKey(str(i), (), (), (), "infer", ()) for i in range(4)]
    with cache.pinning():
        cache.get(keys[0], object)
    cache.get(keys[1], object)
    cache.get(keys[2], object)
    cache.get(keys[3], object)
    assert keys[0] in cache and keys[3] in cache
    assert keys[1] not in cache and keys[2] not in cache
    assert cache.stats()["evictions"] == 2 and cache.stats()["pinned"] == 1


def test_cache_is_bounded_by_estimated_bytes_in_lru_order_with_pins_kept():
    class Exe:  # what a Compiled reports of itself
        def __init__(self, code):
            self.code = code

        def memory_analysis(self):
            return type("M", (), {"generated_code_size_in_bytes": self.code, "constant_size_in_bytes": 0})()
    cache = CompileCache(max_entries=100, max_bytes=1000)
    keys = [CacheKey(str(i), (), (), (), "infer", ()) for i in range(5)]
    with cache.pinning():
        cache.get(keys[0], lambda: Exe(500))
    cache.get(keys[1], lambda: Exe(300))
    cache.get(keys[2], lambda: Exe(100))
    cache.get(keys[1], lambda: Exe(300))  # used again: now the most recent
    cache.get(keys[3], lambda: Exe(300))  # 1200 > 1000: least recently used unpinned first: 2, then 1
    assert [k in cache for k in keys[:4]] == [True, False, False, True]
    assert cache.nbytes() == 800
    exe = cache.get(keys[4], lambda: Exe(0))  # no size reported: the default estimate, over any bound
    assert isinstance(exe, Exe) and keys[4] not in cache and keys[3] not in cache
    assert keys[0] in cache and cache.nbytes() == 500, "pinned entries stay whatever the bound"
    assert cache.stats()["max_bytes"] == 1000 and cache.stats()["bytes"] == 500
    assert cache_mod.estimate_bytes(object()) == cache_mod.DEFAULT_EXECUTABLE_BYTES


def test_a_turned_over_compile_cache_releases_jax_traces(monkeypatch):
    """JAX memoizes a jaxpr per traced library call and shape, without bound; jbind drops
    that memo each time its own bounded cache has turned over (64 evictions at least)."""
    calls = []
    monkeypatch.setattr(cache_mod, "release_jax_traces", lambda: calls.append(len(cache)))
    cache = CompileCache(max_entries=2)
    for i in range(2 + 2 * 64 + 10):
        cache.get(CacheKey(str(i), (), (), (), "infer", ()), object)
    assert len(cache) == 2 and cache.stats()["evictions"] == 138 and calls == [2, 2]
    monkeypatch.undo()
    from jax._src.interpreters import partial_eval
    cache_mod.release_jax_traces()
    assert partial_eval.trace_to_jaxpr.cache_info().currsize == 0, "JAX moved its trace memo"


def test_zero_buffers_are_bounded_by_count_and_bytes_oldest_first(monkeypatch):
    monkeypatch.setattr(nd_impl, "ZEROS_LIMIT", (3, 1000))
    monkeypatch.setattr(nd_impl, "_ZEROS", type(nd_impl._ZEROS)())
    monkeypatch.setattr(nd_impl, "_zeros_bytes", [0])
    dev = jax.devices("cpu")[0]

    def cached():
        return [k[0] for k in nd_impl._ZEROS]
    for n in (1, 2, 3, 4):
        nd_impl.cached_zeros((n,), np.float32, dev)
    assert cached() == [(2,), (3,), (4,)]
    nd_impl.cached_zeros((200,), np.float32, dev)   # 800 bytes: within 1000 with (3,) and (4,)
    assert cached() == [(3,), (4,), (200,)]
    z = nd_impl.cached_zeros((100,), np.float32, dev)   # 400 more: (3,), (4,), (200,) go
    assert cached() == [(100,)] and nd_impl._zeros_bytes[0] == 400
    assert nd_impl.cached_zeros((100,), np.float32, dev) is z


def test_dropped_executors_release_their_buffers():
    sym = _net(5)
    base = sym.simple_bind(mx.cpu(), data=(4, 4))
    names = [n for n in sym.list_arguments() if n not in ("data", "softmax_label")]
    base.forward()
    gc.collect()
    before = len(jax.live_arrays())
    for i in range(10_000):
        exe = sym.simple_bind(mx.cpu(), data=(4, 4), shared_exec=base, shared_arg_names=names)
        if i % 1000 == 0:
            exe.forward()
        del exe
    gc.collect()
    assert len(jax.live_arrays()) <= before + 2


SAMPLE_JSON = _net(4).tojson()


@fuzz_settings(150)
@given(st.data())
def test_malformed_symbol_json_raises_mxnet_error(data):
    text = SAMPLE_JSON
    cut = data.draw(st.integers(0, len(text)))
    junk = data.draw(st.text(max_size=8))
    mutated = text[:cut] + junk + text[cut + data.draw(st.integers(0, 20)):]
    try:
        mx.sym.load_json(mutated)
    except mx.base.MXNetError as e:
        assert str(e)


@fuzz_settings(60)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(
                        ["nodes", "heads", "op", "name", "inputs", "attrs", "param", "arg_nodes"]), c, max_size=4),
                    max_leaves=12))
def test_structurally_wrong_json_raises_mxnet_error(doc):
    try:
        mx.sym.load_json(json.dumps(doc))
    except mx.base.MXNetError:
        pass


def test_killed_save_leaves_the_previous_file_intact(tmp_path):
    path = tmp_path / "big.params"
    mx.nd.save(str(path), {"w": mx.nd.ones((10,))})
    script = textwrap.dedent(f"""
        import numpy as np, jbind as mx
        big = {{"w": mx.nd.array(np.random.rand(4_000_000))}}
        print("ready", flush=True)
        while True:
            mx.nd.save({str(path)!r}, big)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, JAX_PLATFORMS="cpu"))
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(1.0)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        proc.stdout.close()
    loaded = mx.nd.load(str(path))["w"]
    assert loaded.shape in ((10,), (4_000_000,)), "the file is either the old or a complete new one"
    for name in os.listdir(tmp_path):  # what the killed writer left, aged past a live writer's window
        if name != "big.params":
            os.utime(tmp_path / name, (time.time() - 60, time.time() - 60))
    mx.nd.save(str(path), {"w": mx.nd.ones((3,))})
    assert os.listdir(tmp_path) == ["big.params"], "the next save removes the killed save's temp file"


def test_only_stale_unlocked_temp_files_are_removed(tmp_path):
    """A temp file is stale once no writer holds its lock and it is older than a writer's
    create-then-lock window; a live writer's (locked) or a young one is kept."""
    target = tmp_path / "w.params"
    old = time.time() - 60
    stale, young, live, other = (tmp_path / n for n in (".tmp-w.params.abcd1234", ".tmp-w.params.young123",
                                                        ".tmp-w.params.live_123", ".tmp-x.params.abcd1234"))
    for f in (stale, young, live, other):
        f.write_bytes(b"partial")
    for f in (stale, live, other):
        os.utime(f, (old, old))
    with open(live, "rb") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        mx.nd.save(str(target), [mx.nd.ones((2,))])
    assert sorted(os.listdir(tmp_path)) == sorted(["w.params", young.name, live.name, other.name])
    assert io_util.remove_stale_temps(target) == [str(live)]


def test_corrupt_persistent_cache_degrades_to_compiling(tmp_path):
    script = textwrap.dedent("""
        import sys, warnings, jbind as mx
        mx.compile.enable_persistent_cache(sys.argv[1])
        data = mx.sym.Variable("data")
        net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=3, name="fc"), name="softmax")
        exe = net.simple_bind(mx.cpu(), data=(2, 5))
        exe.arg_dict["fc_weight"][:] = 0.5
        exe.arg_dict["data"][:] = 1.0
        print(float(exe.forward()[0].asnumpy()[0, 0]))
    """)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    first = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                           env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    files = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs]
    assert files
    for f in files:
        with open(f, "r+b") as fh:
            fh.truncate(7)
    again = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                           env=env, timeout=120)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout


def test_nan_and_inf_propagate_unclipped():
    x = mx.sym.Variable("x")
    net = mx.sym.softmax(mx.sym.FullyConnected(x, num_hidden=2, no_bias=True, name="fc"), name="s")
    exe = net.simple_bind(mx.cpu(), grad_req="null", x=(2, 2))
    exe.arg_dict["fc_weight"][:] = 1.0
    exe.arg_dict["x"][:] = np.array([[np.nan, 0.0], [np.inf, 0.0]])
    out = exe.forward()[0].asnumpy()
    assert np.isnan(out).all()
