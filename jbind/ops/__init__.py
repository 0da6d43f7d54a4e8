"""Operators, each defined once: parameters, shape and dtype rules, lowering."""
from . import _base
from ._base import ALIASES, REGISTRY, Op, get_op, register
from . import nn, loss  # noqa: F401  (registration)

for _m in ("elemwise", "broadcast", "reduce", "shape", "join", "indexing", "norm", "sequence", "rnn_op", "conv",
           "normalize", "spatial", "layout", "amp", "sorting", "gather", "linalg", "linalg_more", "ctc", "sampling",
           "custom", "optimizer_ops", "khatri_rao", "conv_more", "sampler", "roi", "resize", "attention", "detection", "legacy",
           "creation", "misc", "box_coder", "quantize", "image", "sampling_unique", "psroi",
           "proposal", "deformable", "control_flow"):
    try:
        __import__(f"{__name__}.{_m}")
    except ModuleNotFoundError as _e:
        if _e.name != f"{__name__}.{_m}":
            raise

__all__ = ["ALIASES", "REGISTRY", "Op", "get_op", "register"]
