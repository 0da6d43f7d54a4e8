"""`mx.module`: executor groups (and, later, Module and BucketingModule)."""
from . import executor_group
from .executor_group import DataParallelExecutorGroup
from .param_store import ParamStore

__all__ = ["DataParallelExecutorGroup", "ParamStore", "executor_group"]
