"""`mx.gluon.contrib.data`: IntervalSampler."""
from .sampler import IntervalSampler  # noqa: F401

__all__ = ["IntervalSampler"]
