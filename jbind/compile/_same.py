"""One executable for programs that lower to the same text.

jbind's compile cache is keyed by graph fingerprint, shapes, dtypes, grad_req and mode, so
two keys can still lower to one program: an inference forward and the training forward of
a graph none of whose ops looks at `is_train` (no Dropout, no BatchNorm), or two graphs that
differ only in what the lowering throws away. XLA:CPU would compile such a program twice
(0.3-1 s each for an RNN); here the second compile finds the first executable by the
program's StableHLO text and everything else its calling convention depends on (argument
and result trees, every argument's type including those the program does not read,
shardings, the devices it was lowered for (`jax.default_device` included), pruned
arguments, donation, layouts, compiler options). Programs with host callbacks or effects never share: their executables hold
Python closures of their own.

Executables are held weakly: the compile cache (`CACHE`) owns them and its eviction still
frees them. `shared()` counts the compiles saved.
"""
from __future__ import annotations

import hashlib
import threading
import weakref

from .. import _malloc

_BY_TEXT: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()
_lock = threading.Lock()
_saved = [0]


def program_key(lowered, opts: dict | None, tier: bool):
    """What makes two lowered programs interchangeable once compiled, or None where they
    must not share (host callbacks, effects, a JAX without these internals)."""
    try:
        low = lowered._lowering
        args = low.compile_args
        if (args.get("host_callbacks") or args.get("keepalive") or args.get("ordered_effects")
                or args.get("unordered_effects") or getattr(low, "const_args", None)):
            return None  # closures, effects, or constants passed beside the text
        text = lowered.as_text()
        # in_avals: the types of every argument, the ones pruned from the text too
        return (hashlib.sha256(text.encode()).digest(), str(lowered.in_tree), str(lowered.out_tree),
                repr(lowered.in_avals), repr(args.get("global_out_avals")),  # weak types too
                repr(getattr(low, "_device_list", None)),  # the devices (jax.default_device too)
                repr(args["in_shardings"]), repr(args["out_shardings"]), repr(args.get("kept_var_idx")),
                repr(lowered.donate_argnums), repr(args.get("tuple_args")), repr(args.get("in_layouts")),
                repr(args.get("out_layouts")), repr(sorted((opts or {}).items())), tier)
    except (AttributeError, KeyError, TypeError):
        return None


def compile_once(lowered, opts: dict | None, tier: bool, compile_fn):
    """`compile_fn()`, or the live executable an identical program already compiled to."""
    key = program_key(lowered, opts, tier)
    if key is not None:
        with _lock:
            got = _BY_TEXT.get(key)
            if got is not None:
                _saved[0] += 1
                return got
    compiled = compile_fn()
    _malloc.release()   # a compile is where one heap fragments (see jbind/_malloc.py)
    if key is not None:
        try:
            with _lock:
                _BY_TEXT[key] = compiled
        except TypeError:  # not weakly referenceable: just not shared
            pass
    return compiled


def shared() -> int:
    """Compiles saved so far by finding an identical program's executable."""
    return _saved[0]
