"""Shared by the benchmark scripts (library-agnostic: the per-library runners import it under
MXNet too): atomic JSON output, and the environment of one library's pinned process."""
import json
import os


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
