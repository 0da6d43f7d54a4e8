"""`mx.gluon.data.vision`: image datasets read from local files, and transforms."""
from . import transforms  # noqa: F401
from .datasets import (CIFAR10, CIFAR100, MNIST, FashionMNIST, ImageFolderDataset,  # noqa: F401
                       ImageRecordDataset)

__all__ = ["CIFAR10", "CIFAR100", "FashionMNIST", "ImageFolderDataset", "ImageRecordDataset",
           "MNIST", "transforms"]
