"""`mx.gluon.data`: datasets, samplers, DataLoader, and `vision` (image datasets read from
local files, and transforms)."""
from .dataloader import DataLoader, default_batchify_fn  # noqa: F401
from .dataset import ArrayDataset, Dataset, RecordFileDataset, SimpleDataset  # noqa: F401
from .sampler import BatchSampler, FilterSampler, RandomSampler, Sampler, SequentialSampler  # noqa: F401
from . import vision  # noqa: F401,E402

__all__ = ["ArrayDataset", "BatchSampler", "DataLoader", "Dataset", "FilterSampler", "RandomSampler",
           "RecordFileDataset", "Sampler", "SequentialSampler", "SimpleDataset", "default_batchify_fn", "vision"]
