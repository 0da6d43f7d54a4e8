"""`mx.module` / `mx.mod`: executor groups, Module and BucketingModule."""
from . import executor_group
from .base_module import BaseModule
from .bucketing_module import BucketingModule
from .executor_group import DataParallelExecutorGroup
from .module import Module
from .param_store import ParamStore

__all__ = ["BaseModule", "BucketingModule", "DataParallelExecutorGroup", "Module", "ParamStore", "executor_group"]
