"""Keeps JAX's own loggers out of users' logs.

MXNet scripts call `logging.basicConfig(level=logging.DEBUG)` (image-classification's
`common/fit.py` does); JAX then writes about a dozen DEBUG lines of compilation-cache
internals per compile into the user's training log. On import jbind sets the `jax` and
`jaxlib` loggers (the parents of every `jax._src...` logger) to WARNING, unless the user
or JAX (`JAX_LOGGING_LEVEL`) already gave them a level. `JBIND_JAX_LOG_LEVEL` picks
another level (`DEBUG`, `INFO`, ...), or `NOTSET` to leave JAX's loggers alone. jbind's
own loggers are not touched.
"""
from __future__ import annotations

import logging
import os

JAX_LOGGERS = ("jax", "jaxlib")


def quiet_jax_loggers(environ=os.environ) -> None:
    """Set JAX's top loggers to `JBIND_JAX_LOG_LEVEL` (default WARNING) where unset."""
    name = environ.get("JBIND_JAX_LOG_LEVEL", "WARNING").strip().upper() or "WARNING"
    if name == "NOTSET":
        return
    level = logging.getLevelName(name)
    if not isinstance(level, int):
        from .base import MXNetError
        raise MXNetError(f"JBIND_JAX_LOG_LEVEL={name!r} is not a logging level; use DEBUG, INFO, WARNING, "
                         f"ERROR, CRITICAL or NOTSET")
    for logger_name in JAX_LOGGERS:
        logger = logging.getLogger(logger_name)
        if logger.level == logging.NOTSET:
            logger.setLevel(level)
