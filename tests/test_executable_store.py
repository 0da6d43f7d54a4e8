"""Executables stored under jbind's structural key: a restarted process loads them
without tracing; bad entries are misses; keys are the same in every process."""
import glob
import json
import os
import subprocess
import sys
import textwrap

import numpy as np

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jbind as mx
    from jbind.compile import store
    data = mx.sym.Variable("data")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.tanh(data), num_hidden=3, name="fc"), name="sm")
    exe = net.simple_bind(mx.cpu(), data=(4, 5))
    exe.arg_dict["data"][:] = np.linspace(-1, 1, 20).reshape(4, 5)
    exe.arg_dict["fc_weight"][:] = np.linspace(-1, 1, 15).reshape(3, 5)
    exe.arg_dict["sm_label"][:] = np.array([0, 1, 2, 1])
    exe.forward(is_train=True)
    exe.backward()
    print(json.dumps({"fingerprint": net.fingerprint, "counts": store.counts,
                      "out": exe.outputs[0].asnumpy().tolist(), "grad": exe.grad_dict["fc_weight"].asnumpy().tolist()}))
""")


def _run(cache):
    env = dict(os.environ, JBIND_CACHE_DIR=str(cache), JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_restarted_process_loads_stored_executables(tmp_path):
    first = _run(tmp_path)
    assert first["counts"]["saved"] >= 1 and first["counts"]["loaded"] == 0
    second = _run(tmp_path)
    assert second["fingerprint"] == first["fingerprint"], "graph keys must not depend on the process"
    assert second["counts"]["loaded"] == first["counts"]["saved"] and second["counts"]["saved"] == 0
    np.testing.assert_array_equal(second["out"], first["out"])
    np.testing.assert_array_equal(second["grad"], first["grad"])


def test_corrupt_or_truncated_entries_are_recompiled(tmp_path):
    first = _run(tmp_path)
    files = sorted(glob.glob(str(tmp_path / "jbind-exe-*")))
    assert files
    with open(files[0], "r+b") as f:  # flip a byte in the body
        f.seek(60)
        b = f.read(1)
        f.seek(60)
        f.write(bytes([b[0] ^ 0xFF]))
    for path in files[1:]:
        with open(path, "r+b") as f:
            f.truncate(10)
    again = _run(tmp_path)  # rejected; JAX's entries for them dropped, compiled afresh and stored
    assert again["counts"]["rejected"] == len(files) and again["counts"]["loaded"] == 0
    assert again["counts"]["saved"] == len(files)
    np.testing.assert_array_equal(again["out"], first["out"])
    np.testing.assert_array_equal(again["grad"], first["grad"])
    third = _run(tmp_path)  # healed: loaded without tracing
    assert third["counts"]["loaded"] == len(files) and third["counts"]["rejected"] == 0
    np.testing.assert_array_equal(third["grad"], first["grad"])
    for path in glob.glob(str(tmp_path / "*")):  # an empty folder: a fresh compile stores again
        os.remove(path)
    assert _run(tmp_path)["counts"]["saved"] == len(files)
    assert _run(tmp_path)["counts"]["loaded"] == len(files)


def test_after_a_jbind_upgrade_executables_are_compiled_and_stored_again(tmp_path):
    first = _run(tmp_path)
    n = first["counts"]["saved"]
    # Another jbind (its sources hash differently): jbind's entries and JAX's both miss.
    upgraded = "from jbind.compile import store\nstore._environment = lambda: 'jbind, upgraded'\n"
    env = dict(os.environ, JBIND_CACHE_DIR=str(tmp_path), JAX_PLATFORMS="cpu")
    for expect in ("saved", "loaded"):
        proc = subprocess.run([sys.executable, "-c", upgraded + SCRIPT], env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr[-3000:]
        counts = json.loads(proc.stdout.strip().splitlines()[-1])["counts"]
        assert counts[expect] == n, (expect, counts)
    assert len(glob.glob(str(tmp_path / "jbind-exe-*"))) == 2 * n


def _forward(hidden, batch=2):
    import jbind as mx
    exe = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=hidden, name="fc").simple_bind(
        mx.cpu(), grad_req="null", data=(batch, 5))
    exe.arg_dict["fc_weight"][:] = 0.5
    exe.arg_dict["data"][:] = 1.0
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), np.full((batch, hidden), 2.5, np.float32))


def test_store_write_failures_and_bad_entries_warn_once_and_compile(tmp_path, monkeypatch):
    import errno

    import pytest

    import jbind as mx
    from jbind.compile import PersistentCacheWarning, store
    folder = tmp_path / "cache"
    mx.compile.enable_persistent_cache(folder)
    try:
        def full(path, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        monkeypatch.setattr(store, "atomic_write_bytes", full)
        with pytest.warns(PersistentCacheWarning, match="No space left") as record:
            _forward(31)
            _forward(31, batch=3)
        assert sum(issubclass(w.category, PersistentCacheWarning) for w in record) == 1
        assert not glob.glob(str(folder / "jbind-exe-*"))
        monkeypatch.undo()
        mx.compile.enable_persistent_cache(folder)  # a fresh start for the folder's warning
        _forward(32)
        (entry,) = glob.glob(str(folder / "jbind-exe-*"))
        with open(entry, "r+b") as f:
            f.truncate(20)
        mx.compile.clear()
        with pytest.warns(PersistentCacheWarning, match="corrupt or truncated executable"):
            _forward(32)
        assert not os.path.exists(entry) or os.path.getsize(entry) > 20
    finally:
        mx.compile.disable_persistent_cache()
