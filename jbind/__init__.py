"""jbind: Apache MXNet 1.x symbolic programs on JAX. Use as `import jbind as mx`."""
import gc as _gc

# Importing JAX and jbind creates a few hundred thousand objects that live as long as the
# process: collecting while they are created is wasted work (a sixth of the import's time).
# Afterwards they are moved out of the collector's generations (gc.freeze), so that scripts
# allocating many small objects (a corpus read into lists) do not pay for re-scanning them
# at every full collection.
_gc_was_on = _gc.isenabled()
_gc.disable()
try:
    from . import _malloc
    _malloc.tune()  # before XLA starts its threads: freed host memory stays mapped (see _malloc.py)

    from . import _x64
    _x64.enable()  # before any array: float64 / int64 stay 64-bit, as in MXNet (JBIND_X64=0: JAX decides)

    from . import distributed  # noqa: F401
    distributed.initialize()  # joins a multi-process job when JBIND_COORDINATOR etc. are set; else nothing

    from . import base, compile, name, ops, random  # noqa: F401
    from . import autograd, ndarray, symbol
    from . import operator
    from . import io, rnn  # noqa: F401
    from . import model
    from . import export  # noqa: F401
    from . import callback, module
    from . import module as mod
    from . import initializer, lr_scheduler, metric, optimizer  # noqa: F401
    from . import kvstore  # noqa: F401
    from . import kvstore as kv  # noqa: F401
    from . import initializer as init  # noqa: F401
    from . import ndarray as nd
    from . import symbol as sym
    from .attribute import AttrScope
    from .base import MXNetError
    from .context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus
    from .executor import Executor
    from . import engine, util  # noqa: F401
    from .util import is_np_array, is_np_shape, np_array, np_shape, set_np_shape, use_np_shape

    compile.enable_from_env()
    # JAX logs every backend it cannot find at INFO and its cache internals at DEBUG, into
    # the logs of MXNet scripts that call logging.basicConfig(level=DEBUG): see _jax_logging
    from ._jax_logging import quiet_jax_loggers as _quiet_jax_loggers
    _quiet_jax_loggers()
finally:
    if _gc_was_on:
        _gc.enable()
_gc.freeze()

__version__ = "0.1.0"

# Modules a training script rarely needs load on first use (`mx.viz`, `mx.test_utils`, ...).
_LAZY = {"contrib": "contrib", "gluon": "gluon", "image": "image", "img": "image", "mon": "monitor", "monitor": "monitor",
         "np": "numpy", "numpy": "numpy", "profiler": "profiler",
         "recordio": "recordio", "runtime": "runtime",
         "test_utils": "test_utils",
         "visualization": "visualization", "viz": "visualization"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'jbind' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
__all__ = ["AttrScope", "Context", "Executor", "MXNetError", "autograd", "base", "compile", "cpu", "cpu_pinned",
           "current_context", "gpu", "name", "nd", "ndarray", "num_gpus", "operator", "random", "sym", "symbol"]
