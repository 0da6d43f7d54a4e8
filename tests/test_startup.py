"""What `import jbind` does to the process besides defining modules."""
import gc
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
