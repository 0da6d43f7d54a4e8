"""`python -m jbind.launch`: real two-worker jobs on this machine (gloo over loopback).

Each worker is a fresh Python that imports jbind and joins the job; it inherits
XLA_FLAGS from conftest, so it has two CPU devices. Every run is bounded by a timeout,
and every worker writes its pid, so none outlives its test.
"""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from jbind import launch

TIMEOUT = 120

WORKER = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    open(os.path.join(sys.argv[1], "pid.%s" % os.environ["JBIND_PROCESS_ID"]), "w").write(str(os.getpid()))
    import jbind as mx
    from jbind import distributed

    r, n = distributed.rank(), distributed.num_workers()
    print("rank=%d workers=%d extra=%s" % (r, n, os.environ.get("EXTRA")))
    sums = distributed.allreduce_sum([np.full((3,), r + 1.0, np.float32), np.arange(4.0, dtype=np.float32) * (r + 1)])
    print("allreduce", [np.asarray(s).tolist() for s in sums])

    kv = mx.kv.create("dist_sync")
    print("kv", kv.type, kv.rank, kv.num_workers, mx.kv.create("local").num_workers)
    kv.init([0, 1], [mx.nd.full((2,), 10.0 * (r + 1)), mx.nd.full((3,), -1.0 * (r + 1))])
    out = [mx.nd.zeros((2,)), mx.nd.zeros((3,))]
    kv.pull([0, 1], out=out)
    print("init", [o.asnumpy().tolist() for o in out])
    kv.push([0, 1], [[mx.nd.full((2,), r + 1.0, ctx=mx.cpu(i)) for i in range(2)], mx.nd.full((3,), 1.0)])
    kv.pull([0, 1], out=out)
    print("push", [o.asnumpy().tolist() for o in out])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5))
    kv.pushpull(0, mx.nd.full((2,), float(r)), out=out[0])
    print("sgd", out[0].asnumpy().tolist())
    kv.barrier()
    print("to stderr", file=sys.stderr)
    if sys.argv[2] == "fail":
        if r == 1:
            os._exit(3)
        time.sleep(60)
""")


@pytest.fixture
def job(tmp_path):
    """Writes the worker script; at teardown kills any worker still alive (a failed test)."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    yield script
    for f in tmp_path.glob("pid.*"):
        try:
            os.kill(int(f.read_text()), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def _launch(*args, timeout=TIMEOUT):
    return subprocess.run([sys.executable, "-m", "jbind.launch", *args], capture_output=True, text=True,
                          timeout=timeout)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_two_workers(job):
    """Both ranks' output comes back prefixed; the collectives and the dist kvstore sum over both."""
    res = _launch("-n", "2", "--env", "EXTRA=yes", str(job), str(job.parent), "ok")
    assert res.returncode == 0, res.stderr
    for r in (0, 1):
        lines = [ln[4:] for ln in res.stdout.splitlines() if ln.startswith("[%d] " % r)]
        assert "rank=%d workers=2 extra=yes" % r in lines
        assert "allreduce [[3.0, 3.0, 3.0], [0.0, 3.0, 6.0, 9.0]]" in lines
        assert "kv dist_sync %d 2 1" % r in lines
        assert "init [[10.0, 10.0], [-1.0, -1.0, -1.0]]" in lines       # rank 0's values
        assert "push [[6.0, 6.0], [2.0, 2.0, 2.0]]" in lines            # 2 devices x (1 + 2); 1 + 1
        assert "sgd [5.5, 5.5]" in lines                                # 6 - 0.5 * (0 + 1)
        assert "[%d] to stderr" % r in res.stderr.splitlines()


def test_failing_worker_stops_the_job(job):
    """Worker 1 dies by os._exit(3) while worker 0 sleeps 60 s: the launcher stops it and exits 3."""
    start = time.monotonic()
    res = _launch("-n", "2", str(job), str(job.parent), "fail")
    elapsed = time.monotonic() - start
    assert res.returncode == 3, res.stderr
    assert elapsed < 30, elapsed
    assert "jbind.launch: worker 1 exited with code 3; stopping the others" in res.stderr
    pids = [int(f.read_text()) for f in job.parent.glob("pid.*")]
    assert len(pids) == 2 and not any(_alive(p) for p in pids)


def test_interrupt_stops_every_worker(tmp_path):
    """SIGINT to the launcher (Ctrl-C) stops the workers; the launcher exits 130."""
    script = tmp_path / "sleep.py"
    script.write_text("import os, sys, time\n"
                      "open(os.path.join(sys.argv[1], 'pid.' + os.environ['JBIND_PROCESS_ID']), 'w')"
                      ".write(str(os.getpid()))\nprint('ready', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-m", "jbind.launch", "-n", "2", str(script), str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids = []
    try:
        ready = [proc.stdout.readline() for _ in range(2)]
        assert sorted(ready) == ["[0] ready\n", "[1] ready\n"]
        pids = [int(f.read_text()) for f in tmp_path.glob("pid.*")]
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130 and "interrupted" in err
        assert len(pids) == 2 and not any(_alive(p) for p in pids)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
        for p in pids:
            if _alive(p):
                os.kill(p, signal.SIGKILL)


def test_launcher_with_job_variables_in_its_own_environment_does_not_join(tmp_path):
    """Variables left exported in the launcher's shell (a bogus coordinator here) must not
    make the launcher itself try to join a job: it starts its workers with its own."""
    script = tmp_path / "w.py"
    script.write_text("from jbind import distributed\nprint('workers', distributed.num_workers())\n")
    env = dict(os.environ, JBIND_COORDINATOR="127.0.0.1:9", JBIND_NUM_PROCESSES="5", JBIND_PROCESS_ID="3")
    proc = subprocess.run([sys.executable, "-m", "jbind.launch", "-n", "2", str(script)], capture_output=True,
                          text=True, timeout=TIMEOUT, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("workers 2") == 2


def test_worker_environment():
    envs = launch.worker_envs(2, "h:1", num_processes=4, first_rank=2, extra={"A": "1"}, base={"B": "2"})
    assert [(e["JBIND_PROCESS_ID"], e["JBIND_NUM_PROCESSES"], e["JBIND_COORDINATOR"], e["A"], e["B"])
            for e in envs] == [("2", "4", "h:1", "1", "2"), ("3", "4", "h:1", "1", "2")]
    with pytest.raises(ValueError, match="do not fit"):
        launch.worker_envs(2, "h:1", num_processes=3, first_rank=2)


def test_command_line_split():
    assert launch._split(["-n", "2", "--env", "A=1", "t.py", "-n", "5"]) == (["-n", "2", "--env", "A=1"],
                                                                              ["t.py", "-n", "5"])
    assert launch._split(["-n", "2", "-m", "pkg.mod", "--x"]) == (["-n", "2"], ["-m", "pkg.mod", "--x"])
    assert launch._split(["-n", "2", "--", "-weird.py"]) == (["-n", "2"], ["-weird.py"])


@pytest.mark.parametrize("argv,msg", [
    (["-n", "2"], "SCRIPT"),
    (["-n", "2", "--env", "NOEQUALS", "t.py"], "KEY=VAL"),
    (["-n", "2", "--num-processes", "4", "t.py"], "--coordinator"),
    (["-n", "2", "--num-processes", "3", "--first-rank", "2", "--coordinator", "h:1", "t.py"], "do not fit"),
])
def test_command_line_errors(argv, msg, capsys):
    with pytest.raises(SystemExit) as e:
        launch.main(argv)
    assert e.value.code == 2 and msg in capsys.readouterr().err
