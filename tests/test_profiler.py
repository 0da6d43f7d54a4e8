"""mx.profiler: MXNet's profiler API over JAX's trace (jbind/profiler.py)."""
import json

import numpy as np
import pytest

import jbind as mx
from jbind import profiler


@pytest.fixture
def fresh(tmp_path):
    out = tmp_path / "profile.json"
    yield out
    profiler.set_state("stop")
    profiler._state.update(config=dict(profiler._DEFAULTS), events=[], extra=[], t0=None)


def _train_steps(n=3):
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, name="fc"), name="sm")
    exe = net.simple_bind(mx.cpu(), data=(8, 5))
    exe.arg_dict["data"][:] = np.ones((8, 5))
    for _ in range(n):
        exe.forward(is_train=True)
        exe.backward()
    exe.grad_dict["fc_weight"].asnumpy()


def test_run_stop_dump_writes_a_chrome_trace_of_jbinds_programs(fresh):
    profiler.set_config(profile_all=True, aggregate_stats=True, filename=str(fresh))
    assert profiler.dumps() == ""  # nothing recorded yet
    profiler.set_state("run")
    _train_steps(3)
    profiler.set_state("stop")
    profiler.dump()
    doc = json.loads(fresh.read_text())
    names = [e.get("name", "") for e in doc["traceEvents"]]
    assert doc["displayTimeUnit"] == "ms" and any("jbind_train" in n for n in names)
    table = profiler.dumps()
    assert "Profile Statistics:" in table and "Total Count" in table
    row = next(line for line in table.splitlines() if line.startswith("jit(jbind_train)"))
    assert int(row.split()[1]) == 3  # one compiled call per training step
    stats = json.loads(profiler.dumps(format="json", reset=True))
    assert stats["Time"]["jbind programs"]["jit(jbind_train)"]["Count"] == 3
    assert "jit(jbind_train)" not in profiler.dumps()  # reset cleared them


def test_without_aggregate_stats_dumps_is_empty_and_pause_skips_work(fresh):
    profiler.set_config(filename=str(fresh))
    profiler.set_state("run")
    profiler.pause()
    _train_steps(2)
    profiler.resume()
    profiler.set_state("stop")
    assert profiler.dumps() == ""
    profiler.set_config(aggregate_stats=True)
    assert "jit(jbind_train)" not in profiler.dumps()


def test_domains_tasks_counters_and_markers_reach_the_dump(fresh):
    profiler.set_config(filename=str(fresh))
    domain = profiler.Domain("work")
    task, counter, marker = domain.new_task("load"), domain.new_counter("items", 1), domain.new_marker("here")
    profiler.set_state("run")
    task.start()
    counter += 2
    marker.mark()
    task.stop()
    profiler.dump()  # finished: stops recording
    events = json.loads(fresh.read_text())["traceEvents"]
    names = {e.get("name") for e in events}
    assert {"work::load", "work::items", "work::here"} <= names
    assert [e["args"]["items"] for e in events if e.get("name") == "work::items"] == [1, 3]
    assert str(task) == "load" and counter.value == 3


def test_bad_arguments_are_errors_as_mxnet():
    with pytest.raises(mx.base.MXNetError, match="'bogus'"):
        profiler.set_config(bogus=1)
    with pytest.raises(KeyError):
        profiler.set_state("walk")
    with pytest.raises(AssertionError, match="sort_by"):
        profiler.dumps(sort_by="name")
    with pytest.warns(UserWarning, match="deprecated"):
        profiler.profiler_set_state("stop")


def test_mx_profiler_is_the_module():
    assert mx.profiler is profiler


def test_a_running_profile_is_written_at_exit(tmp_path):
    """As MXNet's (its destructor dumps): 'run' without dump() still leaves the file when the process ends."""
    import os
    import subprocess
    import sys
    out = tmp_path / "prof.json"
    code = ("import jbind as mx\nmx.profiler.set_config(filename=%r, profile_all=True)\n"
            "mx.profiler.set_state('run')\n(mx.nd.ones((2, 2)) * 2).asnumpy()\n" % str(out))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root, timeout=120)
    assert "traceEvents" in json.loads(out.read_text())
