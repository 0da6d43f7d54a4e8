"""NDArray files (`mx.nd.save` / `mx.nd.load`, `.params`) and checkpoints, against MXNet 1.9.1.

Golden files come from tests/golden/make_params_golden.py; the reverse direction (files
jbind writes, read by MXNet) is checked by hand with tests/golden/check_jbind_params.py.
"""
import json
import logging
import os
import struct
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, strategies as st

import jbind as mx
from jbind import io_util
from jbind.base import MXNetError
from jbind.ndarray.serialize import V1_MAGIC, V2_MAGIC, decode, encode, load_numpy
from helpers import fuzz_settings

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN_DIR = os.path.join(HERE, "golden")
GOLDEN = os.path.join(GOLDEN_DIR, "params")
sys.path.insert(0, GOLDEN_DIR)
import params_manifest as pm  # noqa: E402
from write_jbind_params import write_jbind_files  # noqa: E402

MANIFEST = pm.read(GOLDEN)
FILES = MANIFEST["files"]
WIDE = ("float64", "int64")
NARROW_FILES = sorted(f for f, e in FILES.items() if not any(x["dtype"] in WIDE for x in e["entries"]))
WIDE_FILES = sorted(set(FILES) - set(NARROW_FILES))
MXNET_V2_FILES = sorted(f for f in FILES if not f.startswith(("legacy", "v3")))
FUZZ = fuzz_settings(150)  # HYPOTHESIS_PROFILE=long or JBIND_FUZZ_EXAMPLES=N for thousands


def path(fname):
    return os.path.join(GOLDEN, fname)


def raw(fname):
    with open(path(fname), "rb") as f:
        return f.read()


def as_numpy(loaded):
    if isinstance(loaded, dict):
        return {k: v.asnumpy() for k, v in loaded.items()}
    return [v.asnumpy() for v in loaded]


def values(loaded):
    return list(loaded.values()) if isinstance(loaded, dict) else loaded


# --- golden files from MXNet 1.9.1 ----------------------------------------------------------
@pytest.mark.parametrize("fname", sorted(FILES))
def test_golden_file_bytes_exact(fname):
    assert pm.check_loaded(FILES[fname], load_numpy(path(fname)), fname) == []
    assert decode(raw(fname)).contexts == [tuple(e["ctx"]) for e in FILES[fname]["entries"]]


@pytest.mark.parametrize("fname", NARROW_FILES)
def test_golden_file_as_ndarrays(fname):
    with mx.np_shape(fname.startswith("v3")):  # MXNet loads V3 files only in np shape mode
        loaded = mx.nd.load(path(fname))
        assert pm.check_loaded(FILES[fname], as_numpy(loaded), fname) == []
        assert all(v.context == mx.cpu(0) for v in values(loaded))
        assert pm.check_loaded(FILES[fname], as_numpy(mx.nd.load_frombuffer(raw(fname))), fname) == []


@pytest.mark.parametrize("fname", MXNET_V2_FILES)
def test_encoder_writes_mxnet_bytes(fname):
    dec = decode(raw(fname))
    assert encode(dec.arrays, dec.names, dec.contexts) == raw(fname)


@pytest.mark.parametrize("fname", [f for f in MXNET_V2_FILES if f in NARROW_FILES and f != "dict_mixed.params"])
def test_nd_save_writes_mxnet_bytes(fname, tmp_path):
    mx.nd.save(tmp_path / fname, mx.nd.load(path(fname)))
    assert (tmp_path / fname).read_bytes() == raw(fname)


def test_wide_dtypes_load_as_such():
    """float64/int64 arrays load as float64/int64 NDArrays, values bit-exact, as MXNet's."""
    for dt in ("float64", "int64"):
        entry = FILES[f"dtype_{dt}.params"]["entries"][1]
        got = mx.nd.load(path(f"dtype_{dt}.params"))["rand"]
        assert got.dtype == np.dtype(dt)
        np.testing.assert_array_equal(got.asnumpy(), pm.to_array(entry))


_X64_SCRIPT = """
import json, os, sys
import jax
assert jax.config.jax_enable_x64
sys.path.insert(0, {golden_dir!r})
import jbind as mx, params_manifest as pm
from jbind.ndarray.serialize import load_numpy
from write_jbind_params import expected_entry, write_jbind_files
out, files, errors = sys.argv[1], pm.read({golden!r})["files"], []
for f in json.loads(sys.argv[2]):
    loaded = mx.nd.load(os.path.join({golden!r}, f))
    errors += pm.check_loaded(files[f], {{k: v.asnumpy() for k, v in loaded.items()}}, f)
    mx.nd.save(os.path.join(out, f), loaded)
    errors += pm.check_loaded(expected_entry(files[f]), load_numpy(os.path.join(out, f)), "resaved " + f)
    if f.startswith("dtype_"):
        with open(os.path.join(out, f), "rb") as a, open(os.path.join({golden!r}, f), "rb") as b:
            errors += [] if a.read() == b.read() else ["resaved " + f + ": bytes differ from MXNet's"]
os.mkdir(os.path.join(out, "jb"))
errors += write_jbind_files(os.path.join(out, "jb"))
print(json.dumps(errors))
"""


def test_wide_dtypes_bit_exact_with_x64(tmp_path):
    """float64/int64 golden files load, re-save and write bit-exactly under JAX_ENABLE_X64=1."""
    script = _X64_SCRIPT.format(golden_dir=GOLDEN_DIR, golden=GOLDEN)
    env = {**os.environ, "JAX_ENABLE_X64": "1", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-W", "error", "-c", script, str(tmp_path), json.dumps(WIDE_FILES)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
    assert {"jb_dtype_float64.params", "jb_dtype_int64.params"} <= set(os.listdir(tmp_path / "jb"))


def test_jbind_written_files_read_back(tmp_path):
    """What check_jbind_params.py gives MXNet: jbind reads its own files back bit-exactly."""
    assert write_jbind_files(str(tmp_path)) == []
    doc = pm.read(tmp_path)
    assert "jb_dtype_bfloat16.params" in doc["files"] and "jb_mlp-0003.params" in doc["files"]


# --- round trips ----------------------------------------------------------------------------
_DTYPES = ["float32", "float16", "uint8", "int32", "int8", "bool", "bfloat16"]


def _random_array(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    dt = np.dtype(jnp.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    return np.frombuffer(rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).tobytes(), dt).reshape(shape)


@FUZZ
@given(arrays=st.lists(st.tuples(st.sampled_from(_DTYPES), st.lists(st.integers(0, 3), max_size=4),
                                 st.integers(0, 2 ** 32 - 1)), max_size=4),
       as_dict=st.booleans())
def test_round_trip_is_bit_exact(arrays, as_dict, tmp_path_factory):
    src = [_random_array(dt, tuple(shape), seed) for dt, shape, seed in arrays]
    nds = [mx.nd.array(a, dtype=a.dtype) for a in src]
    fname = tmp_path_factory.mktemp("rt") / "x.params"
    mx.nd.save(fname, {f"p{i}": v for i, v in enumerate(nds)} if as_dict else nds)
    back = mx.nd.load(fname)
    assert isinstance(back, dict if as_dict and nds else list)
    for a, b in zip(src, values(back)):
        assert b.shape == (a.shape or (1,)) and b.dtype == a.dtype
        assert pm.raw_bytes(b.asnumpy()) == pm.raw_bytes(a)


def test_zero_d_array_is_saved_with_shape_1(tmp_path):
    """A 0-d NDArray is saved with shape (1,): in MXNet's V2 layout ndim 0 means an empty NDArray."""
    mx.nd.save(tmp_path / "s.params", [mx.nd.array(np.float32(2.5))])
    assert mx.nd.load(tmp_path / "s.params")[0].shape == (1,)


def test_v3_np_shape_files_load_in_np_shape_mode_only():
    """MXNet's files saved under np shape semantics (V3 magic) load under np_shape(True);
    outside it `mx.nd.load` refuses them, as MXNet's does."""
    with mx.np_shape(True):
        got = mx.nd.load(path("v3_npshape.params"))
    assert got["scalar"].shape == () and got["empty_rows"].shape == (0, 3)
    with pytest.raises(MXNetError, match="np shape semantics"):
        mx.nd.load(path("v3_npshape.params"))


def test_model_loaders_read_v3_files_in_any_mode(tmp_path):
    """The model loaders (here mx.model.load_params) read V3 files outside np_shape mode too."""
    with mx.np_shape(True):
        mx.nd.save(tmp_path / "m-0001.params", {"arg:sc": mx.nd.array(np.float32(2)), "aux:e": mx.nd.zeros((0, 3))})
    args, aux = mx.model.load_params(str(tmp_path / "m"), 1)
    assert args["sc"].shape == () and aux["e"].shape == (0, 3)


def test_save_under_np_shape_keeps_0_d_and_zero_size_arrays(tmp_path):
    """Under np_shape(True) mx.nd.save writes MXNet's V3 layout: 0-d and zero-size arrays come
    back as they were, and only under np_shape(True); files saved outside it refuse to load
    inside it."""
    f = tmp_path / "a.params"
    with mx.np_shape(True):
        src = [np.float32(7), np.zeros((0, 4), np.float32), np.arange(6, dtype=np.int32).reshape(2, 3, 1)]
        mx.nd.save(f, [mx.nd.array(a, dtype=a.dtype) for a in src])
        assert struct.unpack_from("<I", f.read_bytes(), 24)[0] == 0xF993FACA
        back = mx.nd.load(f)
        assert [b.shape for b in back] == [(), (0, 4), (2, 3, 1)]
        np.testing.assert_array_equal(back[0].asnumpy(), 7)
        np.testing.assert_array_equal(back[2].asnumpy(), src[2])
        with pytest.raises(MXNetError, match="row_sparse"):
            mx.nd.save(f, [mx.nd.zeros((2, 2)).tostype("row_sparse")])
    with pytest.raises(MXNetError, match="np shape semantics"):
        mx.nd.load(f)
    mx.nd.save(f, [mx.nd.array(np.zeros((0, 2)))])
    assert mx.nd.load(f)[0].shape == (0, 2)
    with mx.np_shape(True), pytest.raises(MXNetError, match="not saved in np shape"):
        mx.nd.load(f)


def test_save_forms_and_argument_errors(tmp_path):
    f = tmp_path / "a.params"
    mx.nd.save(f, mx.nd.ones((2,)))
    assert isinstance(mx.nd.load(f), list) and len(mx.nd.load(f)) == 1
    mx.nd.save(f, {})
    assert mx.nd.load(f) == [] and f.read_bytes() == raw("empty.params")
    with pytest.raises(ValueError, match="data needs to either"):
        mx.nd.save(f, (mx.nd.ones((1,)),))
    with pytest.raises(TypeError, match="dict str->NDArray"):
        mx.nd.save(f, {1: mx.nd.ones((1,))})
    with pytest.raises(TypeError, match="dict str->NDArray"):
        mx.nd.save(f, [np.ones(1)])
    with pytest.raises(TypeError, match="fname required"):
        mx.nd.load(b"a.params")
    with pytest.raises(TypeError, match="buf required"):
        mx.nd.load_frombuffer("not bytes")


def test_gpu_saved_arrays_load_on_cpu_without_a_gpu():
    got = mx.nd.load_frombuffer(encode([np.ones(2, np.float32)], [], [(2, 3)]))
    assert got[0].context == (mx.gpu(3) if mx.num_gpus() > 3 else mx.cpu(0))


# --- errors ---------------------------------------------------------------------------------
def _file(*records, names=(), count=None):
    body = struct.pack("<QQQ", 0x112, 0, len(records) if count is None else count) + b"".join(records)
    tail = struct.pack("<Q", len(names)) + b"".join(struct.pack("<Q", len(n)) + n for n in names)
    return body + tail


def _v2(shape, flag=0, data=None, stype=0, dev=1, magic=V2_MAGIC, ndim=None):
    nd_ = len(shape) if ndim is None else ndim
    head = struct.pack(f"<Iii{len(shape)}q", magic, stype, nd_, *shape)
    data = b"\0" * (4 * int(np.prod(shape))) if data is None else data
    return head + struct.pack("<iii", dev, 0, flag) + data


_GOOD = _v2((2,))
_CORRUPT = {
    "empty file": (b"", "truncated: the header"),
    "bad list magic": (struct.pack("<QQQ", 0x113, 0, 0), "bad list magic 0x113"),
    "huge array count": (_file(count=2 ** 60), "declares 1152921504606846976 arrays"),
    "empty (none) array": (_file(struct.pack("<Iii", V2_MAGIC, 0, 0)), "empty (none) NDArray"),
    "unknown dtype": (_file(_v2((1,), flag=99)), "unknown dtype flag 99"),
    "unknown storage type": (_file(_v2((1,), stype=7)), "unknown storage type 7"),
    "names mismatch": (_file(_GOOD, _GOOD, names=[b"a"]), "1 names for 2 arrays"),
    "bad array magic": (_file(struct.pack("<I", 0xDEADBEEF) + b"\0" * 64), "bad magic 0xDEADBEEF"),
    "negative ndim": (_file(_v2((), ndim=-2)), "ndim -2"),
    "ndim too large": (_file(_v2((1,) * 40)), "ndim 40"),
    "negative dim": (_file(_v2((-3,), data=b"")), "negative dimension"),
    "unknown device": (_file(_v2((1,), dev=9)), "unknown device type 9"),
    "bad utf-8 name": (_file(_GOOD, names=[b"\xff\xfe"]), "not valid UTF-8"),
    "huge dims": (_file(_v2((2 ** 40, 2 ** 20), data=b"")), "truncated: array 0 data"),
    "huge zero-size": (_file(_v2((0, 2 ** 62), data=b"")), "implausible zero-size shape"),
    "huge name": (_file(_GOOD, names=[b"a"])[:-9] + struct.pack("<Q", 2 ** 62) + b"a", "truncated: name 0"),
    "V1 truncated data": (_file(struct.pack("<Iiq", V1_MAGIC, 1, 1000) + struct.pack("<iii", 1, 0, 0)),
                          "array 0 data, float32[1000]"),
}


@pytest.mark.parametrize("case", sorted(_CORRUPT))
def test_corrupt_file_raises_mxnet_error(case, tmp_path):
    blob, fragment = _CORRUPT[case]
    f = tmp_path / "bad.params"
    f.write_bytes(blob)
    with pytest.raises(MXNetError) as e:
        mx.nd.load(str(f))
    assert fragment in str(e.value) and repr(str(f)) in str(e.value)


def test_missing_file_names_it(tmp_path):
    with pytest.raises(MXNetError, match="nope.params"):
        mx.nd.load(str(tmp_path / "nope.params"))


@pytest.mark.parametrize("fname", ["dict_mixed.params", "legacy_v1.params", "legacy_nomagic.params",
                                   "v3_npshape.params", "mlp-0007.params"])
def test_every_truncation_raises(fname):
    blob = raw(fname)
    for n in range(len(blob)):
        with pytest.raises(MXNetError, match="truncated|declares"):
            decode(blob[:n], fname)


@FUZZ
@given(fname=st.sampled_from(sorted(FILES) + ["sparse.params"]),
       patches=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.binary(min_size=1, max_size=8)),
                        min_size=1, max_size=4))
def test_corruptions_load_or_raise_mxnet_error(fname, patches):
    blob = bytearray(raw(fname))
    for where, b in patches:
        i = int(where * len(blob))
        blob[i:i + len(b)] = b
    try:
        mx.nd.load_frombuffer(bytes(blob))
    except MXNetError:
        pass


# --- atomic writes --------------------------------------------------------------------------
def test_failed_save_keeps_the_previous_file(tmp_path):
    f = tmp_path / "w.params"
    mx.nd.save(f, [mx.nd.ones((3,))])
    before = f.read_bytes()
    with pytest.raises(MXNetError, match="uint32"):
        mx.nd.save(f, [mx.nd.ones((3,)), mx.nd.array(np.arange(2), dtype=np.uint32)])
    assert f.read_bytes() == before and os.listdir(tmp_path) == ["w.params"]


def test_saved_files_get_the_umask_mode_not_mkstemps_0600(tmp_path):
    mask = os.umask(0o027)
    os.umask(mask)
    mx.nd.save(tmp_path / "m.params", [mx.nd.ones((1,))])
    assert (tmp_path / "m.params").stat().st_mode & 0o777 == io_util.FILE_MODE == 0o666 & ~mask


def test_interrupted_write_keeps_the_previous_file(tmp_path, monkeypatch):
    f = tmp_path / "w.params"
    mx.nd.save(f, {"a": mx.nd.ones((3,))})
    before = f.read_bytes()

    def fail(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(io_util.os, "replace", fail)
    with pytest.raises(MXNetError, match="No space left"):
        mx.nd.save(f, {"a": mx.nd.zeros((1000,))})
    monkeypatch.undo()
    assert f.read_bytes() == before and os.listdir(tmp_path) == ["w.params"]


# --- checkpoints ----------------------------------------------------------------------------
def test_golden_checkpoint_loads_and_runs():
    sym, arg, aux = mx.model.load_checkpoint(path("mlp"), 7)
    ckpt = MANIFEST["checkpoints"][0]
    assert sym.list_arguments() == ckpt["arguments"] and sym.list_auxiliary_states() == ckpt["auxiliary_states"]
    params = {f"arg:{k}": v.asnumpy() for k, v in arg.items()}
    params.update({f"aux:{k}": v.asnumpy() for k, v in aux.items()})
    assert pm.check_loaded(FILES["mlp-0007.params"], params, "mlp-0007.params") == []
    x = pm.to_array(MANIFEST["extra"]["mlp_input"])
    exe = sym.bind(mx.cpu(), {"data": mx.nd.array(x), "softmax_label": mx.nd.zeros((4,)), **arg},
                   aux_states=aux, grad_req="null")
    np.testing.assert_allclose(exe.forward(is_train=False)[0].asnumpy(),
                               pm.to_array(MANIFEST["extra"]["mlp_output"]), rtol=1e-5, atol=1e-6)


def test_checkpoint_round_trip(tmp_path):
    sym, arg, aux = mx.model.load_checkpoint(path("mlp"), 7)
    prefix = str(tmp_path / "net")
    mx.model.save_checkpoint(prefix, 12, sym, arg, aux, remove_amp_cast=False)
    assert sorted(os.listdir(tmp_path)) == ["net-0012.params", "net-symbol.json"]
    assert list(load_numpy(prefix + "-0012.params")) == [f"arg:{k}" for k in arg] + [f"aux:{k}" for k in aux]
    sym2, arg2, aux2 = mx.model.load_checkpoint(prefix, 12)
    assert sym2.tojson() == sym.tojson()
    for a, b in ((arg, arg2), (aux, aux2)):
        assert list(a) == list(b) and all(np.array_equal(a[k].asnumpy(), b[k].asnumpy()) for k in a)
    mx.model.save_checkpoint(str(tmp_path / "p"), 0, None, arg, {})
    assert os.path.exists(tmp_path / "p-0000.params") and not os.path.exists(tmp_path / "p-symbol.json")


def test_load_params_rejections(tmp_path, caplog):
    mx.nd.save(tmp_path / "e-0001.params", {})
    with caplog.at_level(logging.WARNING):
        assert mx.model.load_params(str(tmp_path / "e"), 1) == ({}, {})
    assert "is empty" in caplog.text
    mx.nd.save(tmp_path / "l-0001.params", [mx.nd.ones((1,))])
    with pytest.raises(MXNetError, match="without names"):
        mx.model.load_params(str(tmp_path / "l"), 1)
    mx.nd.save(tmp_path / "n-0001.params", {"weight": mx.nd.ones((1,))})
    with pytest.raises(MXNetError, match="'weight' has no 'arg:'"):
        mx.model.load_params(str(tmp_path / "n"), 1)
    mx.nd.save(tmp_path / "o-0001.params", {"opt:m": mx.nd.ones((1,)), "arg:w": mx.nd.ones((1,))})
    assert list(mx.model.load_params(str(tmp_path / "o"), 1)[0]) == ["w"]
