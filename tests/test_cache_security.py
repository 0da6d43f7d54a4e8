"""The persistent compile cache does not trust what its folder holds (issue 20, part 5):
forged entries never run their payload, an entry copied over another key's file or one
without jbind's header is a miss (with the right answer), a folder that is not the user's
own and private is refused with one warning, and the folder stays under
JBIND_CACHE_MAX_BYTES by evicting the least recently used entries."""
import hashlib
import os
import pickle
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

import jbind as mx
from jbind.base import MXNetError
from jbind.compile import PersistentCacheWarning, _folder, store


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "cache"
    yield path
    mx.compile.disable_persistent_cache()
    mx.compile.clear()


def _forward(hidden, batch=2):
    exe = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=hidden, name="fc").simple_bind(
        mx.cpu(), grad_req="null", data=(batch, 5))
    exe.arg_dict["fc_weight"][:] = 0.5
    exe.arg_dict["fc_bias"][:] = 0.25
    exe.arg_dict["data"][:] = 1.0
    out = exe.forward()[0].asnumpy()
    np.testing.assert_array_equal(out, np.full((batch, hidden), 2.75, np.float32))


def _exe_files(path):
    return sorted(p for p in path.iterdir() if p.name.startswith("jbind-exe-"))


def _fields(blob):
    """(key, trees, payload) of a stored executable (see jbind/compile/_entry.py)."""
    pos, out = 36, []
    for _ in range(2):
        (n,) = struct.unpack_from("<I", blob, pos)
        out.append(blob[pos + 4:pos + 4 + n])
        pos += 4 + n
    return out[0], out[1], blob[pos:]


def _entry(key, trees, payload):
    rest = struct.pack("<I", len(key)) + key + struct.pack("<I", len(trees)) + trees + payload
    return b"JBX2" + hashlib.sha256(rest).digest() + rest


class _Reduce:
    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def _payloads(marker):
    touch = f"touch {marker}"
    return {
        "os.system": pickle.dumps(_Reduce(os.system, touch)),
        "subprocess.Popen via copyreg": b"ccopyreg\n_reconstructor\n(csubprocess\nPopen\ncsubprocess\nPopen\n(lp0\n"
                                        + b"Vtouch\naV" + str(marker).encode() + b"\natR.",
        "eval inside a tuple like JAX's": pickle.dumps((_Reduce(eval, f"open({str(marker)!r}, 'w')"), [], True)),
        # an allowed JAX type, with BUILD aimed at the class itself
        "BUILD on an allowed class": b"cjax._src.core\nShapedArray\n(N(dVndim\nI5\nstb.",
        # numpy's _reconstruct asked for a terabyte
        "huge numpy array": b"cnumpy.core.multiarray\n_reconstruct\n(cnumpy\nndarray\n(I1000000000000\ntcnumpy\n"
                            + b"dtype\n(Vf8\nI0\nI1\ntRtR.",
    }


@pytest.mark.parametrize("fmt", ["current", "jbind 0.x (pickled body)"])
@pytest.mark.parametrize("name", list(_payloads("m")))
def test_forged_entry_never_runs(folder, tmp_path, name, fmt):
    """A forged entry with a valid header and checksum for its key: a miss, the payload never runs."""
    marker = tmp_path / "marker"
    mx.compile.enable_persistent_cache(folder)
    _forward(41)
    (path,) = _exe_files(folder)
    key, trees, _ = _fields(path.read_bytes())
    evil = _payloads(marker)[name]
    if fmt == "current":
        path.write_bytes(_entry(key, trees, evil))
        match = "unsafe|unloadable"
    else:  # the earlier format: magic, SHA-256 of the body, a pickle of (payload, in_tree, out_tree)
        path.write_bytes(b"JBX1" + hashlib.sha256(evil).digest() + evil)
        match = "corrupt or truncated"
    mx.compile.clear()
    before = dict(store.counts)
    with pytest.warns(PersistentCacheWarning, match=match):
        _forward(41)
    assert not marker.exists(), "the forged entry ran its payload"
    assert store.counts["rejected"] == before["rejected"] + 1 and store.counts["loaded"] == before["loaded"]
    assert store.counts["saved"] == before["saved"] + 1  # replaced by the fresh compile
    mx.compile.clear()
    _forward(41)  # the replacement loads cleanly (warnings are errors)
    assert store.counts["loaded"] == before["loaded"] + 1


def test_entry_copied_over_another_keys_file_is_a_miss(folder):
    mx.compile.enable_persistent_cache(folder)
    _forward(43)
    (a,) = _exe_files(folder)
    _forward(44)
    (b,) = [p for p in _exe_files(folder) if p != a]
    shutil.copyfile(a, b)  # 43's executable under 44's name: its checksum is valid, its key is not 44's
    mx.compile.clear()
    before = dict(store.counts)
    with pytest.warns(PersistentCacheWarning, match="another key's executable"):
        _forward(44)  # checks the values: 44 columns of 2.75, not 43's program
    assert store.counts["loaded"] == before["loaded"] and store.counts["rejected"] == before["rejected"] + 1
    assert _fields(b.read_bytes())[0] != _fields(a.read_bytes())[0], "rewritten with its own key"


def test_jax_entry_copied_over_another_keys_file_is_a_miss(folder):
    """JAX's own entries (`*-cache`): the checksum covers the entry's key too."""
    old = store.set_enabled(False)
    try:
        mx.compile.enable_persistent_cache(folder)
        _forward(45)
        first = {p.name for p in folder.iterdir() if p.name.endswith("-cache")}
        _forward(46)
        second = [p for p in folder.iterdir() if p.name.endswith("-cache") and p.name not in first]
        assert first and second
        for dst in second:
            shutil.copyfile(folder / sorted(first)[0], dst)
        mx.compile.clear()
        with pytest.warns(PersistentCacheWarning, match="filed under another key"):
            _forward(46)
    finally:
        store.set_enabled(old)


@pytest.mark.parametrize("layer", ["jbind", "jax"])
def test_entries_without_jbind_header_are_misses(folder, layer):
    old = store.set_enabled(layer == "jbind")
    try:
        mx.compile.enable_persistent_cache(folder)
        _forward(47)
        if layer == "jbind":
            files = _exe_files(folder)
            for p in files:
                p.write_bytes(_fields(p.read_bytes())[2])  # the bare executable payload
        else:
            files = [p for p in folder.iterdir() if p.name.endswith("-cache")]
            for p in files:
                p.write_bytes(p.read_bytes()[36:])  # what plain JAX writes
        assert files
        mx.compile.clear()
        with pytest.warns(PersistentCacheWarning, match="corrupt|without jbind's checksum"):
            _forward(47)
        mx.compile.clear()
        _forward(47)  # replaced: no warning
    finally:
        store.set_enabled(old)


def _foreign_folder(tmp_path):
    """A world-writable sticky folder owned by someone else: `nobody`'s when running as root,
    else /tmp's owner (root) by using /tmp itself."""
    if os.geteuid() != 0:
        return "/tmp"
    path = tmp_path / "shared"
    path.mkdir()
    import pwd
    os.chown(path, pwd.getpwnam("nobody").pw_uid, -1)
    path.chmod(0o1777)
    return str(path)


@pytest.mark.parametrize("case", ["owned by another user, mode 1777", "own, mode 0777", "own, mode 0770"])
def test_folder_not_private_is_refused_with_one_warning(tmp_path, case):
    if case.startswith("owned"):
        path = _foreign_folder(tmp_path)
        match = "owned by uid"
    else:
        path = tmp_path / "mine"
        path.mkdir()
        path.chmod(0o777 if "0777" in case else 0o770)
        match = "writable by its group or by others"
    before = set(os.listdir(path))
    try:
        with pytest.warns(PersistentCacheWarning, match=match) as record:
            mx.compile.enable_persistent_cache(path)
        assert len(record) == 1
        assert mx.compile.persistent_cache_dir() is None
        _forward(49)  # compiles, correct, and no further warning (warnings are errors)
        _forward(49, batch=3)
        new = set(os.listdir(path)) - before
        assert not any(_folder.is_entry(n) for n in new), "nothing written to a refused folder"
    finally:
        mx.compile.disable_persistent_cache()


def test_refused_folder_from_the_environment_warns_and_runs(tmp_path):
    path = tmp_path / "open"
    path.mkdir()
    path.chmod(0o777)
    code = ("import warnings, jbind as mx, numpy as np\n"
            "x = mx.nd.ones((2, 3)); print(mx.compile.persistent_cache_dir(), float(x.sum().asnumpy().item()))\n")
    env = dict(os.environ, JBIND_CACHE_DIR=str(path), JAX_PLATFORMS="cpu", PYTHONWARNINGS="default")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["None", "6.0"]
    assert proc.stderr.count("PersistentCacheWarning") == 1 and "writable by its group or by others" in proc.stderr
    assert os.listdir(path) == []


def test_new_folder_is_created_private(folder):
    mx.compile.enable_persistent_cache(folder / "sub")
    assert (folder / "sub").stat().st_mode & 0o777 == 0o700
    assert mx.compile.persistent_cache_dir() == str(folder / "sub")


def _write(path, name, size, mtime):
    p = path / name
    p.write_bytes(b"x" * size)
    os.utime(p, (mtime, mtime))
    return p


def test_eviction_removes_least_recently_used_first(tmp_path):
    for i, name in enumerate(["jbind-exe-a", "k1-cache", "jbind-exe-b", "k2-cache"]):
        _write(tmp_path, name, 100, 1000 + i)
    other = _write(tmp_path, "notes.txt", 1000, 1)  # not an entry: never counted or removed
    _folder.touch(tmp_path / "jbind-exe-a")  # a hit: now the most recently used
    assert _folder.evict(str(tmp_path), 250) == ["k1-cache", "jbind-exe-b"]
    assert sorted(os.listdir(tmp_path)) == ["jbind-exe-a", "k2-cache", "notes.txt"] and other.exists()
    assert _folder.evict(str(tmp_path), 250) == []


def test_folder_stays_under_the_bound_and_hits_refresh_entries(folder, monkeypatch):
    mx.compile.enable_persistent_cache(folder)
    _forward(51)
    (first,) = _exe_files(folder)
    entry_bytes = sum(p.stat().st_size for p in folder.iterdir() if _folder.is_entry(p.name))
    os.utime(first, (1, 1))
    mx.compile.clear()
    _forward(51)  # a hit refreshes the entry's time
    assert first.stat().st_mtime > 1
    limit = int(entry_bytes * 2.5)  # room for two programs' entries, not three
    monkeypatch.setenv("JBIND_CACHE_MAX_BYTES", str(limit))
    for hidden in (52, 53, 54):
        _forward(hidden)
        total = sum(p.stat().st_size for p in folder.iterdir() if _folder.is_entry(p.name))
        assert total <= limit
    names = [p.name for p in _exe_files(folder)]
    assert first.name not in names and len(names) >= 2, "the least recently used went first"
    mx.compile.clear()
    before = store.counts["loaded"]
    _forward(54)  # the most recent survives and loads
    assert store.counts["loaded"] == before + 1


def test_bad_max_bytes_is_an_error_naming_the_variable(folder, monkeypatch):
    monkeypatch.setenv("JBIND_CACHE_MAX_BYTES", "lots")
    with pytest.raises(MXNetError, match="JBIND_CACHE_MAX_BYTES.*'lots'"):
        mx.compile.enable_persistent_cache(folder)
    assert mx.compile.persistent_cache_dir() is None


@pytest.mark.parametrize("rest", [b"", struct.pack("<I", 1000) + b"k", struct.pack("<I", 1) + b"k",
                                  struct.pack("<I", 1) + b"k" + struct.pack("<I", 9) + b"[]",
                                  struct.pack("<I", 1) + b"k" + struct.pack("<I", 5) + b"[1,2]" + b"payload",
                                  struct.pack("<I", 1) + b"k" + struct.pack("<I", 2) + b"{}"])
def test_malformed_entries_with_valid_checksums_are_bad_entries(rest):
    """Lengths past the end, missing fields, trees that are not trees: BadEntry, nothing else."""
    import jax

    from jbind.compile import _entry
    blob = b"JBX2" + hashlib.sha256(rest).digest() + rest
    with pytest.raises(_entry.BadEntry):
        _entry.decode(blob, "k", jax.local_devices(backend="cpu")[:1])


def test_executables_naming_types_the_reader_refuses_are_not_stored(folder, monkeypatch):
    """What `decode` would refuse is never written (it would be rejected, warned about and
    rewritten at every start); JAX's own cache still keeps the program."""
    from jbind.compile import _entry
    assert ("jax._src.core", "ShapedArray") in _entry._JAX_TYPES
    monkeypatch.setattr(_entry, "_JAX_TYPES", _entry._JAX_TYPES - {("jax._src.core", "ShapedArray")})
    mx.compile.enable_persistent_cache(folder)
    saved = store.counts["saved"]
    _forward(55)
    assert store.counts["saved"] == saved and not _exe_files(folder)
    assert [p for p in folder.iterdir() if p.name.endswith("-cache")]
