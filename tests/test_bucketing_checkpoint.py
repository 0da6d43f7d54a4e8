"""BucketingModule.save_checkpoint / load in MXNet 1.9.1's file layout (goldens from MXNet)."""
import os
import shutil

import numpy as np
import pytest

import jbind as mx

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "bucketing")


def sym_gen(key):
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    return mx.sym.sum(fc, axis=1, name="s") * key, ("data",), None


def _outputs(mod, x, keys):
    got = {}
    for key in keys:
        mod.forward(mx.io.DataBatch([mx.nd.array(x)], bucket_key=key,
                                    provide_data=[mx.io.DataDesc("data", x.shape)]), is_train=False)
        got[key] = mod.get_outputs()[0].asnumpy()
    return got


def test_load_reads_a_checkpoint_mxnet_wrote():
    gold = np.load(os.path.join(GOLDEN, "outputs.npz"))
    mod = mx.mod.BucketingModule.load(os.path.join(GOLDEN, "bk"), 3, sym_gen=sym_gen, default_bucket_key=4)
    assert mod.params_initialized and not mod.binded
    mod.bind([("data", (2, 5))], for_training=False)
    for key, out in _outputs(mod, gold["x"], (4, 2)).items():
        np.testing.assert_allclose(out, gold["out_%d" % key], rtol=1e-5)


def test_save_writes_mxnets_files_and_loads_back(tmp_path):
    gold = np.load(os.path.join(GOLDEN, "outputs.npz"))
    mod = mx.mod.BucketingModule.load(os.path.join(GOLDEN, "bk"), 3, sym_gen=sym_gen, default_bucket_key=4)
    mod.bind([("data", (2, 5))], for_training=False)
    _outputs(mod, gold["x"], (4, 2))  # binds bucket 2 too
    prefix = str(tmp_path / "bk")
    mod.save_checkpoint(prefix, 3)
    names = sorted(os.listdir(tmp_path))
    assert names == ["bk-0003.params", "bk-2-symbol.json", "bk-4-symbol.json", "bk-symbol.json", "bk.buckets"]
    keys = mx.nd.load(prefix + ".buckets")
    assert keys[0].dtype == np.int32 and sorted(keys[0].asnumpy().tolist()) == [2, 4]
    again = mx.mod.BucketingModule.load(prefix, 3, sym_gen=sym_gen, default_bucket_key=4)
    again.bind([("data", (2, 5))], for_training=False)
    for key, out in _outputs(again, gold["x"], (2, 4)).items():
        np.testing.assert_allclose(out, gold["out_%d" % key], rtol=1e-5)


def test_load_errors(tmp_path):
    prefix = os.path.join(GOLDEN, "bk")
    with pytest.raises(mx.base.MXNetError, match="sym_gen is required"):
        mx.mod.BucketingModule.load(prefix, 3, default_bucket_key=4)
    with pytest.raises(mx.base.MXNetError, match="default_bucket_key is required"):
        mx.mod.BucketingModule.load(prefix, 3, sym_gen=sym_gen)
    for name in os.listdir(GOLDEN):
        shutil.copy(os.path.join(GOLDEN, name), tmp_path / name)

    def other_gen(key):
        data = mx.sym.Variable("data")
        return mx.sym.FullyConnected(data, num_hidden=3, no_bias=True, name="fc"), ("data",), None
    with pytest.raises(mx.base.MXNetError, match=r"bk-\d-symbol.json: its arguments"):
        mx.mod.BucketingModule.load(str(tmp_path / "bk"), 3, sym_gen=other_gen, default_bucket_key=4)
    mod = mx.mod.BucketingModule(lambda k: sym_gen(len(k)), default_bucket_key="a")
    mod._buckets["a"] = object()
    with pytest.raises(mx.base.MXNetError, match="bucket keys .* must be ints"):
        mod.save_checkpoint(str(tmp_path / "s"), 0)
