"""Persistent compilation across processes, through JAX's compilation cache."""
from __future__ import annotations

import os

import jax

_enabled: list = []


def enable_persistent_cache(path: str) -> None:
    """Store compiled executables under `path` so a later process loads instead of compiling."""
    os.makedirs(path, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", os.fspath(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    _enabled[:] = [path]


def persistent_cache_dir():
    return _enabled[0] if _enabled else None


def enable_from_env() -> None:
    path = os.environ.get("JBIND_CACHE_DIR")
    if path:
        enable_persistent_cache(path)
