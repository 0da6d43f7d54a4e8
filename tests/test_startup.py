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
    assert before == 0 and after > 10000
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

_FAULTS = """
import resource
import jbind, jax, jax.numpy as jnp
x = jnp.ones((10_000_000,), jnp.float32)   # 40 MB: over glibc's largest mmap threshold
f = jax.jit(lambda x: x + 1)
f(x).block_until_ready()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(40):
    f(x).block_until_ready()
print(jbind._malloc.applied, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(tuning):
    env = dict(os.environ, JBIND_MALLOC_TUNING=tuning)
    out = subprocess.run([sys.executable, "-c", _FAULTS], capture_output=True, text=True, check=True,
                         env=env).stdout.split()
    return out[0] == "True", int(out[1])


def test_import_keeps_freed_host_memory_for_reuse():
    # Each call's 40 MB output is freed and allocated again. Without jbind's malloc settings
    # every call maps it anew and faults in its 9,766 pages; with them the heap grows for the
    # first few calls (glibc's aligned blocks fragment it), then serves them from freed memory.
    applied, tuned = _faults("1")
    assert applied
    applied, untuned = _faults("0")
    assert not applied and untuned > 40 * 9000
    assert tuned < untuned / 4
