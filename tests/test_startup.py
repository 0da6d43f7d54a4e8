"""What `import jbind` does to the process besides defining modules."""
import gc
import os
import subprocess
import sys


def test_import_freezes_the_objects_it_created():
    # JAX's and jbind's module objects live for the whole process: frozen, the collector
    # does not re-scan them at every full collection of a script's own objects.
    code = "import gc; n = gc.get_freeze_count(); import jbind; print(n, gc.get_freeze_count())"
    before, after = map(int, subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                            check=True).stdout.split())
    assert after - before > 10000  # (some Python builds freeze a few hundred objects at startup)
    assert gc.isenabled()




def test_import_collects_nothing_and_leaves_the_collector_as_it_found_it():
    # The import runs with the collector off (its objects live as long as the process);
    # afterwards the collector is on again, or still off where the script had turned it off.
    code = ("import gc, sys; off = sys.argv[1] == 'off'\n"
            "if off: gc.disable()\n"
            "runs = []\n"
            "def seen(phase, info):  # a collection after JAX started importing, before jbind is done\n"
            "    if 'jax' in sys.modules and not hasattr(sys.modules.get('jbind'), '__version__'):\n"
            "        runs.append(phase)\n"
            "gc.callbacks.append(seen)\n"
            "import jbind; print(len(runs), gc.isenabled())")
    for state, enabled in (("on", "True"), ("off", "False")):
        out = subprocess.run([sys.executable, "-c", code, state], capture_output=True, text=True,
                             check=True).stdout.split()
        assert out == ["0", enabled]



_MALLOC = """
import ctypes, os, sys, tempfile
os.sched_setaffinity(0, {int(c) for c in sys.argv[1].split(",")})
import jbind, jax, jax.numpy as jnp
jax.jit(lambda x: x + 1)(jnp.ones((10_000_000,))).block_until_ready()  # XLA's threads allocate

class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
libc.fopen.restype, libc.fopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes, libc.fclose.argtypes = [ctypes.c_int, ctypes.c_void_p], [ctypes.c_void_p]
p = libc.malloc(40 << 20)
mapped = libc.mallinfo2().hblkhd >= 40 << 20      # served by its own mmap
libc.free(p)
kept = libc.mallinfo2().fordblks >= 40 << 20      # freed, still in the heap
path = os.path.join(tempfile.mkdtemp(), "info.xml")
f = libc.fopen(path.encode(), b"w"); libc.malloc_info(0, f); libc.fclose(f)
print(jbind._malloc.applied, mapped, kept, open(path).read().count("<heap nr="))
"""


def _malloc_state(tuning, cpus):
    """(settings applied, a 40 MB block mmapped, its memory kept after free, arenas) in a
    fresh process that ran a JAX program, on `cpus`."""
    env = dict(os.environ, JBIND_MALLOC_TUNING=tuning)
    out = subprocess.run([sys.executable, "-c", _MALLOC, ",".join(map(str, sorted(cpus)))], capture_output=True,
                         text=True, check=True, env=env).stdout.split()
    return out[0] == "True", out[1] == "True", out[2] == "True", int(out[3])


def test_one_cpu_keeps_freed_host_memory_in_one_arena():
    # glibc's defaults: a large block gets its own mmap (unmapped when freed), and XLA's
    # threads get arenas of their own; with one CPU, jbind's settings keep both in one heap.
    one = {min(os.sched_getaffinity(0))}
    assert _malloc_state("auto", one) == (True, False, True, 1)
    applied, mapped, kept, arenas = _malloc_state("0", one)
    assert (applied, mapped, kept) == (False, True, False) and arenas > 1


def test_malloc_is_left_alone_with_several_cpus_unless_asked():
    cpus = os.sched_getaffinity(0)
    assert len(cpus) > 1, "the test machine has several CPUs"
    applied, mapped, _, arenas = _malloc_state("auto", cpus)
    assert not applied and mapped and arenas > 1
    assert _malloc_state("1", cpus) == (True, False, True, 1)


_RELEASE = """
import ctypes, os, sys
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
import jbind as mx
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
def rss_mb():
    return int(open('/proc/self/statm').read().split()[1]) * os.sysconf('SC_PAGE_SIZE') >> 20
p = libc.malloc(300 << 20)
ctypes.memset(p, 1, 300 << 20)
libc.free(p)
kept = rss_mb()
(mx.nd.ones((3, 7)) * 5 + 2).asnumpy()   # an op of a new shape: an XLA compile
print(mx._malloc.applied, kept - rss_mb())
"""


def test_one_cpu_heap_gives_its_free_pages_back_after_a_compile():
    # With one arena and no trimming, a freed block stays resident; a program meeting new
    # shapes would fragment the heap without bound (MXNet's slice-and-pool Gluon tests grew
    # to 18 GB). Each XLA compile hands the heap's free pages back.
    out = subprocess.run([sys.executable, "-c", _RELEASE], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "True"
    assert int(out[1]) > 250   # MB given back of the 300 freed


def test_import_leaves_optax_for_first_use():
    """optax's import is about as long as jbind's own: it waits for an optimizer or a CTC loss."""
    out = subprocess.run([sys.executable, "-c", "import sys, jbind; print('optax' in sys.modules)"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_rarely_used_modules_load_on_first_use():
    """`import jbind` leaves mx.viz, mx.test_utils, mx.recordio, mx.profiler, mx.gluon and the
    C++-style iterators unloaded; the first attribute access loads them."""
    code = ("import sys, jbind as mx\n"
            "lazy = ['jbind.visualization', 'jbind.test_utils', 'jbind.recordio', 'jbind.profiler', 'jbind.io_iters',\n"
            "        'jbind.gluon']\n"
            "print([m for m in lazy if m in sys.modules])\n"
            "print(mx.viz.__name__, mx.test_utils.__name__, mx.recordio.__name__, mx.profiler.__name__,\n"
            "      mx.io.CSVIter.__module__, mx.io.MNISTIter.__module__, 'viz' in dir(mx), mx.gluon.nn.Dense.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]"
    assert out[1] == ("jbind.visualization jbind.test_utils jbind.recordio jbind.profiler jbind.io_iters "
                      "jbind.io_mnist True jbind.gluon.nn.basic_layers")


def test_op_classes_become_dataclasses_on_first_use():
    """Generating an op class's dataclass methods waits for its first instance or field
    lookup (two thirds of the import's own time went there); the result is the same."""
    code = ("import dataclasses, pickle, sys, jbind as mx\n"
            "from jbind.ops._base import REGISTRY, ALIASES\n"
            "print(sum(not dataclasses.is_dataclass(c) for c in REGISTRY.values()))\n"
            "c = REGISTRY['LeakyReLU']\n"
            "assert not dataclasses.is_dataclass(c)\n"
            "op = pickle.loads(pickle.dumps(c(act_type='elu')))  # unpickling calls __new__ too\n"
            "print(dataclasses.is_dataclass(c), [f.name for f in dataclasses.fields(op)][:2], op == c('elu'),\n"
            "      hash(op) == hash(c('elu')), repr(op)[:36])\n"
            "s = REGISTRY['_random_gamma_like']  # its base holds the parameters: made first\n"
            "print(s.param_names(), s.from_attrs({'alpha': '2'}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert int(out[0]) > 100
    assert out[1] == "True ['act_type', 'slope'] True True LeakyReLU(act_type='elu', slope=0.25"
    assert out[2] == "('alpha', 'beta') _random_gamma_like(alpha=2.0, beta=1.0)"


def test_op_classes_made_from_several_threads_at_once():
    code = ("import dataclasses, threading, jbind as mx\n"
            "from jbind.ops._base import REGISTRY\n"
            "pending = [c for c in REGISTRY.values() if not dataclasses.is_dataclass(c) and c.name != 'Custom']\n"
            "ops, errors = [], []\n"
            "def first_use():\n"
            "    for c in pending:\n"
            "        try:\n"
            "            ops.append(c.from_attrs({}))\n"
            "        except Exception as e:  # required parameters: still a clean ParamError\n"
            "            errors.append(type(e).__name__)\n"
            "ts = [threading.Thread(target=first_use) for _ in range(4)]\n"
            "[t.start() for t in ts]; [t.join() for t in ts]\n"
            "print(all(dataclasses.is_dataclass(c) for c in pending), set(errors), len(ops) % 4)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True {'ParamError'} 0"
