"""Atomic JSON output for the benchmark scripts (library-agnostic: the per-library runners
import it under MXNet too): a reader never sees a half-written report."""
import json
import os


def write_json(path: str, obj, indent=None) -> None:
    """Write `obj` as JSON to `path` through a temporary file and one rename."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=indent)
    os.replace(tmp, path)
