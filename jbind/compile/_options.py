"""XLA compiler options by program size: small programs compile with a short pipeline.

XLA:CPU spends ~55 ms of CPU compiling even an elementwise add, almost all of it fixed
cost (fusion emitters, LLVM's optimization pipeline), while running such a program
takes microseconds. Imperative op calls and the small executors of operator tests
compile one program per shape, so that fixed cost is what they spend their time on.
A program whose arguments and results together hold at most `SMALL_BYTES` compiles
with XLA's classic elemental emitters and LLVM at -O0 (measured: ~18 ms instead of
~55 ms); its run time stays negligible next to dispatch at that size. Executors' programs
are excepted (`runs_often`), outside jbind's test helpers. Larger programs
compile with XLA's classic loop emitters too (`large_options`), at XLA's usual LLVM
optimization level. The pipelines compute the same IEEE
operations (no fast math either way); the choice is a function of the program alone,
so an executable's cache key still decides it.

The short pipeline is opt-in (`JBIND_SMALL_PROGRAM_BYTES=262144`, say): at -O0 XLA rounds
some reductions differently from the optimizing pipeline that executors and hybridized
blocks use, so an op run eagerly and the same op inside a hybridized block could differ in
the last bits (MXNet's test_groupnorm compares the two at atol 1e-6 on gradients that are
zero up to rounding, and failed). `JBIND_XLA_FUSION_EMITTERS=1`
keeps XLA's fusion emitters for the larger programs. Other backends get XLA's defaults.
"""
from __future__ import annotations

import contextlib
import functools
import os
import threading
import weakref
from collections import OrderedDict

import jax
import numpy as np
from jax.sharding import SingleDeviceSharding

from . import _same, _tiered

SMALL_BYTES = int(os.environ.get("JBIND_SMALL_PROGRAM_BYTES") or 0)
# XLA debug options accepted per compile (jaxlib 0.10): the legacy elemental emitters, LLVM -O0.
SMALL_OPTIONS = {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 0}


def _nbytes(leaves) -> int:
    total = 0
    for x in leaves:
        aval = getattr(x, "_aval", x)  # an ArgInfo holds its aval; a ShapeDtypeStruct is one
        shape, dtype = getattr(aval, "shape", None), getattr(aval, "dtype", None)
        if shape is None or dtype is None:
            continue
        try:
            itemsize = np.dtype(dtype).itemsize
        except TypeError:  # an extended dtype (a PRNG key): count its key data
            itemsize = 8
        total += int(np.prod(shape, dtype=np.int64)) * itemsize
    return total


def program_bytes(lowered) -> int:
    """Bytes of a lowered program's arguments and results."""
    return _nbytes(jax.tree.leaves(lowered.args_info)) + _nbytes(jax.tree.leaves(lowered.out_info))


def large_options() -> dict:
    """XLA:CPU options for programs above `SMALL_BYTES`: XLA's classic loop emitters.

    XLA:CPU's newer fusion emitters cost much compile time on jbind's programs (measured:
    squeezenet1.1's first training step 7.3 -> 4.1 s of compile CPU, its inference 1.9 ->
    1.1 s, resnet18's batched optimizer update 2.7 -> 1.7 s) without running faster.
    `JBIND_XLA_FUSION_EMITTERS=1` (set before the first compile) keeps XLA's default."""
    if os.environ.get("JBIND_XLA_FUSION_EMITTERS", "").strip().lower() in ("1", "true", "yes"):
        return {}
    return {"xla_cpu_use_fusion_emitters": False}


def cpu_options() -> dict | None:
    """`compiler_options` for a `jax.jit` whose size is not known up front (the optimizer's
    update): `large_options()` on the CPU backend, None (XLA's defaults) elsewhere."""
    return (large_options() or None) if jax.default_backend() == "cpu" else None


# Programs that run many times (executors, fused steps, hybridized blocks) keep XLA's
# optimizing pipeline whatever their size: at -O0 a tiny LSTM's training step ran 1.7x
# slower. Inside `short_pipeline()` (jbind's test helpers, which bind many small executors
# and run each a few times) they may take the short pipeline too.
_scope = threading.local()


@contextlib.contextmanager
def short_pipeline():
    """Let small executor programs compiled in this block take the short pipeline."""
    prev = getattr(_scope, "on", False)
    _scope.on = True
    try:
        yield
    finally:
        _scope.on = prev


def with_short_pipeline(fn):
    """Decorator: run `fn` inside `short_pipeline()` (for test helpers)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with short_pipeline():
            return fn(*args, **kwargs)
    return wrapper


def options_for(lowered, runs_often: bool = False) -> dict:
    """The compiler options jbind compiles `lowered` with ({} for XLA's defaults);
    `runs_often`: an executor's program, short pipeline only inside `short_pipeline()`."""
    if _platform(lowered) != "cpu":  # the options are XLA:CPU's
        return {}
    short_ok = not runs_often or getattr(_scope, "on", False)
    if short_ok and SMALL_BYTES > 0 and program_bytes(lowered) <= SMALL_BYTES:
        return dict(SMALL_OPTIONS)
    return large_options()


def _platform(lowered) -> str | None:
    try:
        return lowered._lowering.compile_args["backend"].platform
    except (AttributeError, KeyError, TypeError):  # another JAX: its defaults
        return None


def compile_lowered(lowered, runs_often: bool = False, tier: bool = True):
    """`lowered.compile()` with the options `options_for` picks; on the CPU, where those are
    the optimizing pipeline's, a quick compile first that tiers up after a few calls
    (`_tiered`). `tier=False`: a program known to run many times (a training loop's fused
    step), compiled optimized at once."""
    opts = options_for(lowered, runs_often)
    if tier and opts != SMALL_OPTIONS and _tiers(lowered):
        def tiered():
            quick = lowered.compile(compiler_options=dict(SMALL_OPTIONS))
            return _tiered.Tiered(lowered, quick, _compile_with(opts), _tiered.TIER_UP_CALLS)
        return _same.compile_once(lowered, opts, True, tiered)
    return _same.compile_once(lowered, opts, False, lambda: _compile_with(opts)(lowered))


def _compile_with(opts: dict):
    return lambda lowered: lowered.compile(compiler_options=opts) if opts else lowered.compile()


def _tiers(lowered) -> bool:
    """Whether `lowered` compiles quick first: tiering on, the CPU backend, and no
    persistent cache folder (whose entries should be the optimized executables)."""
    if _tiered.TIER_UP_CALLS <= 0 or _platform(lowered) != "cpu":
        return False
    from . import persistent
    return persistent.persistent_cache_dir() is None


# Every `jit` wrapper's executables together: at most TOTAL_LIMIT, least recently used
# dropped first. Per-wrapper limits alone let hundreds of wrappers (one per elementwise
# function, one per autograd tape structure) hold many thousand executables between them.
TOTAL_LIMIT = 1024
_ALL: "OrderedDict[tuple, weakref.ref]" = OrderedDict()   # (id(wrapper), key) -> the wrapper
_all_lock = threading.Lock()


class jit:  # noqa: N801 - used as jax.jit is
    """`jax.jit(fn)` whose executables compile with `compile_lowered` (small programs with the
    short pipeline). Keyed as jit keys a call: the arguments' tree, shapes, dtypes, weak types
    and shardings (scalars by type); at most `limit` executables per wrapper and
    `TOTAL_LIMIT` over all wrappers, least recently used dropped first."""

    def __init__(self, fn, limit: int = 256, **jit_kwargs):
        self._jitted = jax.jit(fn, **jit_kwargs)
        self._compiled: "OrderedDict[tuple, object]" = OrderedDict()
        self._limit = limit
        self.__wrapped__ = fn

    def __call__(self, *args):
        leaves, tree = jax.tree.flatten(args)
        parts = []
        for x in leaves:
            if type(x) is _ArrayImpl:  # the common case, without the generic checks
                parts.append((x.shape, x.dtype, x.weak_type, sharding_key(x.sharding)))
            elif isinstance(x, jax.core.Tracer):  # called inside a trace: inline
                return self._jitted(*args)
            else:
                parts.append(_leaf_key(x))
        key = _Key((tree, tuple(parts)))  # hashed once, not at each of the look-ups below
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = compile_lowered(self._jitted.lower(*args))
            with _all_lock:
                self._compiled[key] = compiled
                _ALL[(id(self), key)] = weakref.ref(self)
                while len(self._compiled) > self._limit:
                    old, _ = self._compiled.popitem(last=False)
                    _ALL.pop((id(self), old), None)
                while len(_ALL) > TOTAL_LIMIT:
                    (_, old), ref = _ALL.popitem(last=False)
                    owner = ref()
                    if owner is not None:
                        owner._compiled.pop(old, None)
        else:
            with _all_lock:
                try:
                    self._compiled.move_to_end(key)
                    _ALL.move_to_end((id(self), key))
                except KeyError:  # dropped meanwhile by another thread: it still runs this call
                    pass
        return compiled(*args)

    def lower(self, *args):
        return self._jitted.lower(*args)


class _Key:
    """A cache key whose hash is computed once (a tuple's is recomputed at every look-up)."""
    __slots__ = ("parts", "_hash")

    def __init__(self, parts):
        self.parts, self._hash = parts, hash(parts)

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        return type(other) is _Key and self._hash == other._hash and self.parts == other.parts


def sharding_key(s):
    """`s` as a part of a cache key: a single device's sharding as (device, memory kind),
    what its equality compares (its own hash and equality are Python, run at every
    look-up); any other sharding as it is."""
    if type(s) is SingleDeviceSharding:
        return (s._device, s._memory_kind)
    return s


try:
    from jax._src.array import ArrayImpl as _ArrayImpl
except ImportError:  # another JAX: every leaf takes the generic path
    class _ArrayImpl:  # noqa: N801
        pass


def _leaf_key(x):
    if isinstance(x, jax.Array):
        return (x.shape, x.dtype, getattr(x, "weak_type", False), x.sharding)  # a key array has none
    if isinstance(x, np.ndarray):
        return (x.shape, x.dtype)
    return (type(x), getattr(x, "dtype", None))  # a scalar: its type decides the traced aval
