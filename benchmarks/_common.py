"""Shared by the benchmark scripts (library-agnostic: the per-library runners import it under
MXNet too): atomic JSON output, the environment of one library's pinned process, whether a
peer's interpreter can run, and the alias that makes `import mxnet` load jbind."""
from __future__ import annotations

import json
import os
import subprocess


def write_json(path: str, obj, indent=None) -> None:
    """Write `obj` as JSON to `path` through a temporary file and one rename."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=indent)
    os.replace(tmp, path)


def peer_environment(lib: str, root: str, front=(), clear_peer_path: bool = True) -> dict:
    """The environment a benchmark runs one library's process in: one thread everywhere; for
    jbind this checkout first on PYTHONPATH (after `front`), the CPU backend, XLA's Eigen
    pool off and no persistent cache (a cold start, as the peers have); for a peer, with
    `clear_peer_path`, no PYTHONPATH (its own venv's packages only)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    if lib == "jbind":
        env["PYTHONPATH"] = os.pathsep.join([*front, root, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env.setdefault("JAX_PLATFORMS", "cpu")
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
        env.pop("JBIND_CACHE_DIR", None)
    elif clear_peer_path:
        env.pop("PYTHONPATH", None)
    return env


def interpreter_missing(python: str, module: str, env: dict | None = None) -> str | None:
    """Why `python` cannot `import module` (no such file, import fails, hangs), or None."""
    if not python or not os.path.isfile(python):
        return f"no interpreter at {python!r}"
    try:
        out = subprocess.run([python, "-c", f"import {module}"], env=env, capture_output=True, text=True,
                             timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{python} failed: {e}"
    if out.returncode != 0:
        return f"{python} cannot import {module}: {out.stderr.strip().splitlines()[-1:]}"
    return None


ALIAS = '''"""`import mxnet` (and mxnet.X.Y) is this checkout's jbind: written by _common.write_alias."""
import importlib, importlib.abc, importlib.util, sys
import jbind


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if not name.startswith("mxnet."):
            return None
        try:
            mod = importlib.import_module("jbind" + name[5:])
        except ModuleNotFoundError:
            return None
        spec = importlib.util.spec_from_loader(name, self)
        spec.loader_state = (mod, mod.__spec__)
        return spec

    def create_module(self, spec):
        return spec.loader_state[0]

    def exec_module(self, module):   # importlib gave jbind's module the mxnet.* spec: give its own back
        state = getattr(module.__spec__, "loader_state", None)
        if isinstance(state, tuple):
            module.__spec__ = state[1]


sys.meta_path.insert(0, _Alias())
sys.modules["mxnet"] = jbind
'''


def write_alias(folder: str) -> str:
    """Write the package `mxnet` (ALIAS) into `folder`; with `folder` first on PYTHONPATH, an
    unchanged MXNet script runs on jbind. Returns `folder`."""
    os.makedirs(os.path.join(folder, "mxnet"), exist_ok=True)
    with open(os.path.join(folder, "mxnet", "__init__.py"), "w") as f:
        f.write(ALIAS)
    return folder
