"""Executors: bound symbols (`simple_bind`, `bind`)."""
from .bind import bind, simple_bind
from .executor import Executor

__all__ = ["Executor", "bind", "simple_bind"]
