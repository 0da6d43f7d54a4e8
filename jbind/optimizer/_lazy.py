"""optax, imported on first use, so `import jbind` stays quick (optax's import pulls in
absl and its whole contrib tree: about a quarter of a second)."""
from __future__ import annotations

import importlib
import threading

_lock = threading.Lock()


class LazyModule:
    def __init__(self, name: str):
        self._name = name
        self._module = None

    def __getattr__(self, attr):
        module = self.__dict__.get("_module")
        if module is None:
            with _lock:
                module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)


optax = LazyModule("optax")
