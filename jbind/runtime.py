"""`mx.runtime`: which of MXNet's compile-time features this jbind offers.

`Features()` is MXNet's ordered mapping from each of MXNet 1.9.1's 32 feature names (in
MXNet's order) to a `Feature` with `name` and `enabled`; `is_enabled(name)` answers for
one. The answers describe jbind on this machine: CUDA and CUDNN where JAX sees a GPU,
the CPU_* / F16C instruction sets from the processor's flags (Linux), LAPACK (jax.numpy's
linear algebra), PROFILER (`mx.profiler`) and DIST_KVSTORE (`dist_sync` kvstores);
everything MXNet built from other libraries (MKLDNN, OpenMP, BLAS flavours, OpenCV,
TensorRT, TVM operators, int64 tensor sizes) is off.
"""
from __future__ import annotations

import collections

_NAMES = ("CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3", "CPU_SSE4_1",
          "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C", "JEMALLOC", "BLAS_OPEN",
          "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN", "OPENCV", "CAFFE", "PROFILER",
          "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE", "SIGNAL_HANDLER", "DEBUG", "TVM_OP")
# feature -> the /proc/cpuinfo flag that says the processor has it
_CPU_FLAGS = {"CPU_SSE": "sse", "CPU_SSE2": "sse2", "CPU_SSE3": "pni", "CPU_SSE4_1": "sse4_1",
              "CPU_SSE4_2": "sse4_2", "CPU_SSE4A": "sse4a", "CPU_AVX": "avx", "CPU_AVX2": "avx2", "F16C": "f16c"}


class Feature:
    """One compile-time feature: `name` and whether it is `enabled`."""
    __slots__ = ("name", "enabled")

    def __init__(self, name: str, enabled: bool):
        self.name = name
        self.enabled = bool(enabled)

    def __repr__(self):
        return f"{'✔' if self.enabled else '✖'} {self.name}"


def _cpu_flags() -> set:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def feature_list() -> list:
    """Every feature, in MXNet's order, as `Feature` objects."""
    from .context import num_gpus
    gpu = num_gpus() > 0
    flags = _cpu_flags()
    import jax
    on = {"CUDA": gpu, "CUDNN": gpu, "LAPACK": True, "PROFILER": True, "DIST_KVSTORE": True,
          "INT64_TENSOR_SIZE": bool(jax.config.jax_enable_x64),  # int64 shapes and indices
          **{name: flag in flags for name, flag in _CPU_FLAGS.items()}}
    return [Feature(name, on.get(name, False)) for name in _NAMES]


class Features(collections.OrderedDict):
    """The features by name (one shared instance, as MXNet's)."""
    instance = None

    def __new__(cls):
        if cls.instance is None:
            cls.instance = super().__new__(cls)
            collections.OrderedDict.__init__(cls.instance, [(f.name, f) for f in feature_list()])
        return cls.instance

    def __init__(self):  # filled once, in __new__
        pass

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name: str) -> bool:
        """Whether `feature_name` (for example 'CUDA') is enabled.

        Raises:
            RuntimeError: the name is not one of MXNet's features (MXNet's error).
        """
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError(f"Feature '{name}' is unknown, known features are: {list(self.keys())}")
        return self[name].enabled
