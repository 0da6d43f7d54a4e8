"""The file format of one stored executable, and reading it without running anything else.

    b"JBX2" | sha256 (32 bytes) over everything after it |
    u32 len | key (the hex digest of jbind's CacheKey and environment) |
    u32 len | the argument and result tree structures, as JSON |
    the executable, as JAX's `serialize_executable` writes it

An entry whose checksum fails is corrupt; one whose key is not the key asked for (a file
copied over another key's) is a miss. The tree structures are plain JSON (tuples, lists,
dicts with string or integer keys, None, leaves); a program with any other node is not
stored. JAX writes the executable's description (shapes, shardings, devices) as a pickle;
it is read here by an unpickler that resolves only the JAX and numpy data types listed in
`_JAX_TYPES`, imports nothing, allocates nothing sized by the file, and sets state only
on objects it built. The XLA program inside is native code: what keeps a stranger's
program out is the folder's ownership and mode (`_folder`).
"""
from __future__ import annotations

import hashlib
import io
import json
import pickle
import pickletools
import struct

import jax
import numpy as np
from jax._src.lib import xla_client as _xc

MAGIC = b"JBX2"
_U32 = struct.Struct("<I")


class BadEntry(Exception):
    """The entry is corrupt, truncated or unreadable (the caller removes it)."""


# What JAX's pickle of an executable names (jax 0.10), and nothing else.
_JAX_TYPES = {
    ("jax", "P"), ("jax._src.core", "ManualAxisType"), ("jax._src.core", "MemorySpace"),
    ("jax._src.core", "ShapedArray"), ("jax._src.interpreters.pxla", "AllArgsInfo"),
    ("jax._src.interpreters.pxla", "UnloadedMeshExecutable"), ("jax._src.layout", "Layout"),
    ("jax._src.linear_util", "DebugInfo"), ("jax._src.mesh", "AbstractDevice"), ("jax._src.mesh", "AbstractMesh"),
    ("jax._src.mesh", "AxisType"), ("jax._src.mesh", "Mesh"), ("jax._src.named_sharding", "_unpickle_named_sharding"),
    ("jax._src.sharding_impls", "_unpickle_single_device_sharding"), ("jax._src.stages", "ArgInfo"),
    ("jaxlib._jax", "DeviceList"), ("numpy", "dtype"),
}
# numpy's array reconstruction, under its names in numpy 1 and 2, answered by the stand-ins below
_NUMPY = {(m, n) for m in ("numpy", "numpy.core.multiarray", "numpy._core.multiarray")
          for n in ("ndarray", "_reconstruct")}
_NDARRAY = object()  # stands for numpy.ndarray, which is only ever the first argument of _reconstruct


def _reconstruct(subtype, shape, dtype):
    """numpy's `_reconstruct` as pickles call it: an empty array that BUILD then fills."""
    if subtype is not _NDARRAY or tuple(np.atleast_1d(shape)) != (0,):
        raise BadEntry("unsafe (numpy._reconstruct called with arguments no pickled array has)")
    return np.ndarray((0,), dtype)


class _Unpickler(pickle._Unpickler):  # the Python unpickler: BUILD can be checked
    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, file, backend, devices):
        super().__init__(file)
        self._backend, self._devices = backend, {d.id: d for d in devices}
        self._device_list = _xc.DeviceList(tuple(devices))
        self._shared: set = set()  # ids of what this load did not build: never a BUILD target

    def find_class(self, module, name):
        if (module, name) in _JAX_TYPES:
            found = super().find_class(module, name)
        elif (module, name) in _NUMPY:
            found = _NDARRAY if name == "ndarray" else _reconstruct
        else:
            raise BadEntry(f"unsafe (it names the global {module}.{name})")
        self._shared.add(id(found))
        return found

    def persistent_load(self, pid):
        kind = pid[0] if isinstance(pid, tuple) and pid else None
        if kind == "exec" and len(pid) == 2 and isinstance(pid[1], bytes):
            found = self._backend.deserialize_executable(pid[1], executable_devices=self._device_list)
        elif kind == "device" and len(pid) == 2 and pid[1] in self._devices:
            found = self._devices[pid[1]]
        elif kind == "client" and len(pid) == 1:
            found = self._backend
        else:
            raise BadEntry("unsafe (an unknown persistent id)")
        self._shared.add(id(found))
        return found

    def load_build(self):
        inst = self.stack[-2]
        if id(inst) in self._shared or isinstance(inst, type):
            raise BadEntry(f"unsafe (it sets attributes on a {type(inst).__name__} it did not build)")
        pickle._Unpickler.load_build(self)

    dispatch[pickle.BUILD[0]] = load_build


def _tree_json(tree):
    data = tree.node_data()
    if data is None:
        return "*"
    kind, aux = data
    children = [_tree_json(c) for c in tree.children()]
    if kind is tuple or kind is list:
        return {"tuple" if kind is tuple else "list": children}
    if kind is type(None):
        return None
    if kind is dict and all(isinstance(k, (str, int)) and not isinstance(k, bool) for k in aux):
        return {"dict": [[k, c] for k, c in zip(aux, children)]}
    raise ValueError(f"a {kind.__name__} node")


def _tree_example(desc, leaf):
    if desc == "*":
        return leaf
    if desc is None:
        return None
    if isinstance(desc, dict) and len(desc) == 1:
        (kind, items), = desc.items()
        if kind in ("tuple", "list") and isinstance(items, list):
            made = [_tree_example(d, leaf) for d in items]
            return tuple(made) if kind == "tuple" else made
        if kind == "dict" and isinstance(items, list) and all(isinstance(i, list) and len(i) == 2 for i in items):
            return {k: _tree_example(d, leaf) for k, d in items}
    raise BadEntry("corrupt (a malformed tree structure)")


def _tree(desc):
    leaf = object()
    return jax.tree_util.tree_structure(_tree_example(desc, leaf), is_leaf=lambda x: x is leaf)


def globals_named(payload: bytes) -> set:
    """The (module, name) pairs a pickle names (GLOBAL, INST and STACK_GLOBAL), read without
    running it; ("?", "?") where a STACK_GLOBAL's operands are not plain strings."""
    found, pushed, memo = set(), [], {}
    for op, arg, _ in pickletools.genops(payload):
        if op.name in ("GLOBAL", "INST"):
            found.add(tuple(arg.split(" ", 1)))
        elif op.name == "STACK_GLOBAL":
            pair = tuple(pushed[-2:])
            found.add(pair if len(pair) == 2 and all(isinstance(x, str) for x in pair) else ("?", "?"))
        elif op.name == "MEMOIZE":
            memo[len(memo)] = pushed[-1] if pushed else None
        elif op.name in ("PUT", "BINPUT", "LONG_BINPUT"):
            memo[arg] = pushed[-1] if pushed else None
        elif op.name in ("GET", "BINGET", "LONG_BINGET"):
            pushed.append(memo.get(arg))
        elif op.name != "FRAME":
            pushed.append(arg if isinstance(arg, str) and "UNICODE" in op.name else None)
    return found


def _loadable(payload: bytes) -> bool:
    return globals_named(payload) <= _JAX_TYPES | _NUMPY


def encode(key: str, compiled) -> bytes | None:
    """The entry for `compiled` under `key`, or None if it cannot be stored (and read back) safely."""
    from jax.experimental import serialize_executable
    try:
        payload, in_tree, out_tree = serialize_executable.serialize(compiled)
        trees = json.dumps([_tree_json(in_tree), _tree_json(out_tree)]).encode()
    except Exception:  # noqa: BLE001 - an executable JAX cannot serialize, or a tree JSON cannot hold
        return None
    if not _loadable(payload):  # a type `decode` would refuse: it stays with JAX's own cache
        return None
    k = key.encode()
    rest = b"".join([_U32.pack(len(k)), k, _U32.pack(len(trees)), trees, payload])
    return MAGIC + hashlib.sha256(rest).digest() + rest


def decode(blob: bytes, key: str, devices):
    """The executable in `blob`, loaded onto `devices`; None if `blob` is another key's entry.
    Raises `BadEntry` for a corrupt or unreadable one."""
    if blob[:4] != MAGIC or len(blob) < 44 or hashlib.sha256(memoryview(blob)[36:]).digest() != blob[4:36]:
        raise BadEntry("corrupt or truncated")
    pos = 36
    fields = []
    for _ in range(2):
        if pos + 4 > len(blob):
            raise BadEntry("corrupt or truncated")
        (n,) = _U32.unpack_from(blob, pos)
        if pos + 4 + n > len(blob):
            raise BadEntry("corrupt or truncated")
        fields.append(blob[pos + 4:pos + 4 + n])
        pos += 4 + n
    if fields[0] != key.encode():
        return None
    try:
        in_desc, out_desc = json.loads(fields[1])
        in_tree, out_tree = _tree(in_desc), _tree(out_desc)
        backend = devices[0].client
        unloaded, args_info_flat, no_kwargs = _Unpickler(io.BytesIO(memoryview(blob)[pos:]), backend,
                                                         devices).load()
    except BadEntry:
        raise
    except Exception as e:  # noqa: BLE001 - whatever a malformed entry makes the readers raise
        raise BadEntry(f"unloadable ({type(e).__name__})") from None
    from jax._src.interpreters.pxla import UnloadedMeshExecutable
    if (not isinstance(unloaded, UnloadedMeshExecutable) or not isinstance(args_info_flat, list)
            or not isinstance(no_kwargs, bool) or len(args_info_flat) != in_tree.num_leaves):
        raise BadEntry("corrupt (not an executable)")
    try:
        return jax.stages.Compiled(unloaded.load(), [], in_tree.unflatten(args_info_flat), out_tree,
                                   no_kwargs=no_kwargs)
    except Exception as e:  # noqa: BLE001 - an entry this JAX cannot load: compile instead
        raise BadEntry(f"unloadable ({type(e).__name__})") from None
