import os
import subprocess
import sys
import textwrap
import threading

import numpy as np

import jbind as mx
from jbind.compile import CacheKey, CompileCache, count_compiles


def sym_gen(n):
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=4 + n, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def test_fresh_symbols_hit_the_cache():
    with count_compiles() as n:
        for b in [1, 2, 3, 1, 2, 3]:
            exe = sym_gen(b).simple_bind(mx.cpu(), data=(5, 7))
            exe.forward(is_train=True)
            exe.backward()
    assert n() == 3


def test_key_parts_each_cause_a_miss_and_are_reported():
    sym = sym_gen(10)
    with count_compiles() as n:
        sym.simple_bind(mx.cpu(), data=(5, 7)).forward()
        sym.simple_bind(mx.cpu(), data=(6, 7)).forward()
        sym.simple_bind(mx.cpu(), data=(6, 7)).forward()
        sym.simple_bind(mx.cpu(1), data=(6, 7)).forward()
        sym.simple_bind(mx.cpu(), data=(6, 7), type_dict={"data": "float16"}).forward()
    assert n() == 4
    recent = [m.differs for m in mx.compile.misses()[-3:]]
    assert "data: (5, 7) -> (6, 7)" in recent[0]
    assert recent[1].startswith("devices")
    assert "float16" in recent[2]


def test_single_flight_under_threads():
    cache = CompileCache()
    calls = []
    gate = threading.Event()

    def build():
        calls.append(1)
        gate.wait(5)
        return object()

    key = CacheKey("g", (), (), (), "infer", ("cpu",))
    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get(key, build))) for _ in range(8)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join(10)
    assert len(calls) == 1 and len(results) == 8 and all(r is results[0] for r in results)
    assert cache.stats()["misses"] == 1 and cache.stats()["hits"] == 0


def test_lru_bound():
    cache = CompileCache(max_entries=2)
    keys = [CacheKey(str(i), (), (), (), "infer", ()) for i in range(3)]
    cache.get(keys[0], object)
    cache.get(keys[1], object)
    cache.get(keys[0], object)     # touch 0: 1 becomes the oldest
    cache.get(keys[2], object)
    assert keys[0] in cache and keys[2] in cache and keys[1] not in cache
    assert cache.stats()["evictions"] == 1


def test_failed_build_is_not_cached():
    cache = CompileCache()
    key = CacheKey("bad", (), (), (), "infer", ())

    def boom():
        raise ValueError("no")
    for _ in range(2):
        try:
            cache.get(key, boom)
        except ValueError:
            pass
    assert key not in cache and cache.misses == 2


def test_persistent_cache_across_processes(tmp_path):
    script = textwrap.dedent("""
        import sys, jbind as mx
        mx.compile.enable_persistent_cache(sys.argv[1])
        data = mx.sym.Variable("data")
        net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=3, name="fc"), name="softmax")
        exe = net.simple_bind(mx.cpu(), data=(2, 5))
        exe.forward(is_train=True); exe.backward()
        print(float(exe.outputs[0].asnumpy().sum()))
    """)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    runs = [subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                           env=env, timeout=120) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert abs(float(runs[0].stdout) - 2.0) < 1e-5 and runs[0].stdout == runs[1].stdout
    assert any(f for _, _, f in os.walk(tmp_path)), "the cache directory holds compiled entries"


def test_stats_shape():
    s = mx.compile.stats()
    assert {"hits", "misses", "entries", "evictions", "compile_seconds"} <= set(s)
    assert np.isfinite(s["compile_seconds"])


def test_parameters_minus_one_and_minus_two_are_different_graphs():
    """Regression (found by tests/test_fuzz_graphs.py): Python's hash(-1) == hash(-2), and
    op keys hashed the values, so softmax(axis=-2) reused softmax(axis=-1)'s executable."""
    x = mx.sym.Variable("x")
    v = np.arange(12, dtype=np.float32).reshape(3, 4)
    for make in (lambda a: mx.sym.softmax(x, axis=a), lambda a: mx.sym.Reshape(x, shape=(a,)),
                 lambda a: mx.sym.slice_axis(x, axis=1, begin=0, end=a)):
        outs = []
        for a in (-1, -2):
            s = make(a)
            exe = s.simple_bind(mx.cpu(), grad_req="null", x=(3, 4))
            exe.arg_dict["x"][:] = v
            outs.append(exe.forward()[0].asnumpy())
        assert make(-1).fingerprint != make(-2).fingerprint
        assert outs[0].shape != outs[1].shape or not np.allclose(outs[0], outs[1])
