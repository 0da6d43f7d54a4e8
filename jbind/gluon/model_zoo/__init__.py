"""`mx.gluon.model_zoo`: the model definitions of MXNet 1.9.1's Gluon model zoo
(`vision`), and `model_store`, which finds pretrained parameter files on local disk."""
from . import model_store, vision  # noqa: F401

__all__ = ["model_store", "vision"]
