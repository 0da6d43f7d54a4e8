"""`mx.runtime`: which of MXNet's compile-time features this jbind process has.

MXNet reports how its native library was built; jbind reports the same feature names
for what it can do here: CUDA / CUDNN / NCCL when JAX has a GPU, INT64_TENSOR_SIZE when
JAX's x64 mode is on, PROFILER and DIST_KVSTORE (jbind has both), LAPACK (XLA's linear
algebra). The rest (CPU instruction sets, BLAS flavours, MKLDNN, OpenCV, TensorRT, TVM)
describe MXNet's own build and are reported off.
"""
from __future__ import annotations

import collections

__all__ = ["Feature", "Features", "feature_list"]

_NAMES = ("CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3", "CPU_SSE4_1",
          "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C", "JEMALLOC", "BLAS_OPEN",
          "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN", "OPENCV", "CAFFE", "PROFILER",
          "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE", "SIGNAL_HANDLER", "DEBUG", "TVM_OP")


class Feature:
    """One feature: `name` and `enabled`."""

    def __init__(self, name: str, enabled: bool):
        self.name, self.enabled = name, bool(enabled)

    def __repr__(self):
        return f"{'✔' if self.enabled else '✖'} {self.name}"


def _enabled() -> set:
    import jax
    on = {"LAPACK", "PROFILER", "DIST_KVSTORE", "CXX14", "SIGNAL_HANDLER"}
    try:
        if jax.devices("gpu"):
            on |= {"CUDA", "CUDNN", "NCCL"}
    except RuntimeError:
        pass
    if jax.config.jax_enable_x64:
        on.add("INT64_TENSOR_SIZE")
    return on


def feature_list() -> list:
    """Every feature MXNet 1.9.1 names, each as a `Feature`."""
    on = _enabled()
    return [Feature(n, n in on) for n in _NAMES]


class Features(collections.OrderedDict):
    """Feature name -> `Feature`, in MXNet's order."""

    def __init__(self):
        super().__init__((f.name, f) for f in feature_list())

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name: str) -> bool:
        """Whether `feature_name` (e.g. 'CUDA') is on; RuntimeError for a name MXNet does not know."""
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError(f"Feature '{name}' is unknown, known features are: {list(self)}")
        return self[name].enabled
