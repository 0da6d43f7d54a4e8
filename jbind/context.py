"""Devices: `mx.cpu(i)` and `mx.gpu(i)` name JAX devices.

As in MXNet, every `cpu(i)` (i >= 0) is valid: CPU contexts are labels on the one host.
Where JAX has fewer CPU devices than i + 1, `cpu(i)` runs on CPU device i % n and arrays
placed there keep the label `cpu(i)`. `gpu(i)` beyond the GPU count raises, as MXNet's."""
from __future__ import annotations

import threading
import warnings

import jax

from .base import JbindWarning, MXNetError

_local = threading.local()


class _ContextType(type):
    """Gives the class MXNet's deprecated `Context.default_ctx` (read and assigned on the class)."""

    @property
    def default_ctx(cls) -> "Context":
        """[DEPRECATED] This thread's current context; assigning sets it (as
        `test_utils.set_default_context`)."""
        warnings.warn("Context.default_ctx has been deprecated. Please use Context.current_context() instead. "
                      "Please use test_utils.set_default_context to set a default context",
                      DeprecationWarning, stacklevel=2)
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, ctx) -> None:
        warnings.warn("Context.default_ctx has been deprecated. Please use Context.current_context() instead. "
                      "Please use test_utils.set_default_context to set a default context",
                      DeprecationWarning, stacklevel=2)
        if not isinstance(ctx, Context):
            raise MXNetError(f"Context.default_ctx must be set to a Context, got {type(ctx).__name__}")
        _local.ctx = ctx


class Context(metaclass=_ContextType):
    """A device, as MXNet's `mx.Context` (`cpu(0)`, `gpu(1)`)."""

    devtype2str = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type = {v: k for k, v in devtype2str.items()}
    __slots__ = ("device_type", "device_id", "_old", "_device")

    def __init__(self, device_type, device_id: int = 0):
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        if isinstance(device_type, int):
            device_type = self.devtype2str[device_type]
        if device_type not in ("cpu", "gpu", "cpu_pinned", "cpu_shared"):
            raise MXNetError(f"unknown device type {device_type!r}")
        self.device_type = device_type
        self.device_id = int(device_id)
        self._old = None
        self._device = None

    @property
    def device_typeid(self) -> int:
        return self.devstr2type[self.device_type]

    @property
    def jax_device(self):
        """The JAX device this context names; raises MXNetError if there is none."""
        d = self._device
        if d is None:
            d = self._device = _resolve(self.device_type, self.device_id)
        return d

    def __eq__(self, other):
        return isinstance(other, Context) and (self.device_type, self.device_id) == \
            (other.device_type, other.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __reduce__(self):  # the resolved JAX device does not pickle: a fresh Context looks it up again
        return Context, (self.device_type, self.device_id)

    def __repr__(self):
        return f"{self.device_type}({self.device_id})"

    __str__ = __repr__

    def __enter__(self):
        self._old = current_context()
        _local.ctx = self
        return self

    def __exit__(self, *exc):
        _local.ctx = self._old

    def empty_cache(self):
        pass

    @staticmethod
    def current_context() -> "Context":
        """The context of the innermost `with ctx:` scope, cpu(0) outside any (MXNet's)."""
        return current_context()


_DEVICES: dict = {}


def _resolve(kind: str, i: int):
    platform = "gpu" if kind == "gpu" else "cpu"
    devs = _DEVICES.get(platform)
    if devs is None:
        try:
            devs = _DEVICES[platform] = jax.local_devices(backend=platform)
        except RuntimeError:
            devs = _DEVICES[platform] = []
    if platform == "cpu" and devs and i >= 0:
        return devs[i % len(devs)]  # more CPU contexts than devices: labels on the same host
    if not 0 <= i < len(devs):
        raise MXNetError(f"{kind}({i}) does not exist: JAX has {len(devs)} {platform} device(s)")
    return devs[i]


def is_alias(ctx) -> bool:
    """Whether `ctx` is a label on another context's device, which arrays placed there report:
    `cpu_pinned(i)` and `cpu_shared(i)` (host memory, as MXNet's), or a CPU context past JAX's
    CPU device count (it shares device i % n)."""
    if ctx is None or ctx.device_type == "gpu":
        return False
    if ctx.device_type != "cpu":
        return True
    ctx.jax_device  # noqa: B018  (fills the device table)
    return ctx.device_id >= len(_DEVICES["cpu"])


def cpu(device_id: int = 0) -> Context:
    return Context("cpu", device_id)


def gpu(device_id: int = 0) -> Context:
    return Context("gpu", device_id)


def cpu_pinned(device_id: int = 0) -> Context:
    return Context("cpu_pinned", device_id)


def num_gpus() -> int:
    try:
        return len(jax.local_devices(backend="gpu"))
    except RuntimeError:
        return 0


def parse(ctx) -> Context | None:
    """A Context from a Context or an op's `ctx` string ("cpu(1)", "gpu(0)"); None for ""."""
    if ctx is None or isinstance(ctx, Context):
        return ctx
    text = str(ctx).strip()
    if not text:
        return None
    kind, _, rest = text.partition("(")
    try:
        return Context(kind, int(rest.rstrip(")") or 0))
    except ValueError:
        raise MXNetError(f"ctx {ctx!r} is not a context such as 'cpu(0)' or 'gpu(1)'") from None


def current_context() -> Context:
    ctx = getattr(_local, "ctx", None)
    return ctx if ctx is not None else Context("cpu", 0)


_OF_DEVICE: dict = {}   # device -> (device type, device id): jax.local_devices() is not free


def context_of_device(device) -> Context:
    """A new Context naming `device` (new each call: a Context is also a `with` scope)."""
    got = _OF_DEVICE.get(device)
    if got is None:
        kind = "gpu" if device.platform in ("gpu", "cuda", "rocm") else "cpu"
        got = _OF_DEVICE[device] = (kind, _local_index(device))
    ctx = Context(*got)
    ctx._device = device
    return ctx


_LOCAL_INDEX: dict = {}  # device -> its index: a process's local devices never change


def _local_index(device) -> int:
    """The device's position among this process's devices of its platform (MXNet's device_id)."""
    i = _LOCAL_INDEX.get(device)
    if i is None:
        try:
            i = jax.local_devices(backend=device.platform).index(device)
        except (RuntimeError, ValueError):
            i = device.id
        _LOCAL_INDEX[device] = i
    return i


def check_group2ctx(group2ctx, contexts) -> None:
    """Warn where `group2ctx` (or a Module's `group2ctxs`) places `ctx_group`s on a device
    other than the bound context(s): jbind compiles the whole graph for those, so the
    placement is not followed. The results are MXNet's; only where the ops run differs."""
    if not group2ctx:
        return
    maps = group2ctx if isinstance(group2ctx, (list, tuple)) else [group2ctx]
    placed = set()
    for m in maps:
        for v in (m or {}).values():
            placed.update(str(Context(c)) for c in (v if isinstance(v, (list, tuple)) else [v]))
    bound = contexts if isinstance(contexts, (list, tuple)) else [contexts]
    other = sorted(placed - {str(Context(c)) for c in bound})
    if other:
        warnings.warn(f"group2ctx places ctx_groups on {', '.join(other)}: not followed, the whole graph runs "
                      f"on {', '.join(str(Context(c)) for c in bound)} as one compiled program (same results)",
                      JbindWarning, stacklevel=3)
