"""The `expected.json` that describes a folder of NDArray files, shared by both sides.

Imports only numpy, so the MXNet venv (`make_params_golden.py`, `check_jbind_params.py`)
and jbind's tests use the same code. Values are stored as the hex of their raw
little-endian bytes, so every comparison is bit-exact (NaN payloads, -0.0, bfloat16).

    {"files": {"<file>.params": {"form": "dict" | "list",
                                  "entries": [{"name", "dtype", "shape", "ctx", "hex"}]}},
     "checkpoints": [{"prefix", "epoch", "arguments", "auxiliary_states"}],
     "extra": {...}}
"""
import json
import os

import numpy as np

MANIFEST = "expected.json"


def dtype_name(dt) -> str:
    """numpy dtype -> MXNet dtype name; MXNet's bfloat16 is a structured uint16 dtype."""
    dt = np.dtype(dt)
    if dt.names == ("bfloat16",) or dt.name == "bfloat16":
        return "bfloat16"
    return dt.name


def raw_bytes(arr) -> bytes:
    a = np.ascontiguousarray(arr)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return a.tobytes()


def describe(name, arr, ctx=(1, 0)) -> dict:
    return {"name": name, "dtype": dtype_name(arr.dtype), "shape": list(arr.shape),
            "ctx": list(ctx), "hex": raw_bytes(arr).hex()}


def file_entry(values, names=None, contexts=None) -> dict:
    contexts = contexts or [(1, 0)] * len(values)
    names = names or [None] * len(values)
    return {"form": "dict" if names and names[0] is not None else "list",
            "entries": [describe(n, v, c) for n, v, c in zip(names, values, contexts)]}


def to_array(entry: dict) -> np.ndarray:
    """The entry's array; bfloat16 comes back as its raw uint16 bits."""
    dt = np.dtype(np.uint16 if entry["dtype"] == "bfloat16" else entry["dtype"]).newbyteorder("<")
    return np.frombuffer(bytes.fromhex(entry["hex"]), dt).reshape(entry["shape"]).copy()


def mismatch(entry: dict, arr, where: str):
    """None when `arr` matches `entry` bit for bit, else a message."""
    got = (dtype_name(arr.dtype), list(arr.shape))
    if got != (entry["dtype"], entry["shape"]):
        return f"{where}: got {got[0]}{got[1]}, expected {entry['dtype']}{entry['shape']}"
    if raw_bytes(arr).hex() != entry["hex"]:
        return f"{where}: bytes differ: got {raw_bytes(arr).hex()[:64]}..., expected {entry['hex'][:64]}..."
    return None


def check_loaded(fentry: dict, loaded, fname: str) -> list:
    """Messages for every way `loaded` (a list or dict of numpy arrays) differs from `fentry`."""
    entries = fentry["entries"]
    if fentry["form"] == "dict":
        if not isinstance(loaded, dict) or list(loaded) != [e["name"] for e in entries]:
            return [f"{fname}: expected a dict with names {[e['name'] for e in entries]}, got {loaded!r:.200}"]
        values = list(loaded.values())
    else:
        if not isinstance(loaded, list) or len(loaded) != len(entries):
            return [f"{fname}: expected a list of {len(entries)} arrays, got {type(loaded).__name__}"]
        values = loaded
    msgs = [mismatch(e, v, f"{fname}[{e['name'] if e['name'] is not None else i}]")
            for i, (e, v) in enumerate(zip(entries, values))]
    return [m for m in msgs if m]


def read(folder) -> dict:
    with open(os.path.join(folder, MANIFEST), encoding="utf-8") as f:
        return json.load(f)


def dumps(doc) -> str:
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=True) + "\n"
