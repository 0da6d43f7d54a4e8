"""mx.runtime: MXNet's feature names, reporting what this jbind process can do."""
import jax
import pytest

import jbind as mx


def test_features_name_mxnets_list_and_answer():
    f = mx.runtime.Features()
    assert list(f)[:2] == ["CUDA", "CUDNN"] and "INT64_TENSOR_SIZE" in f
    assert f.is_enabled("INT64_TENSOR_SIZE") == bool(jax.config.jax_enable_x64)
    assert f.is_enabled("cuda") == any(d.platform == "gpu" for d in jax.devices())
    assert f.is_enabled("PROFILER") and not f.is_enabled("MKLDNN")
    assert "✔ PROFILER" in repr(f)
    with pytest.raises(RuntimeError, match="unknown"):
        f.is_enabled("WARP_DRIVE")


def test_from_import():
    from jbind import runtime
    assert [x.name for x in runtime.feature_list()] == list(runtime.Features())
