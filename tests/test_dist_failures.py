"""Distributed jobs that go wrong end in an MXNetError or a one-line exit, within the
configured timeouts: never a segfault, an abort or a hang (issue #20, parts 2 and 3).

Every scenario is two loopback processes (or the launcher and two) with short timeouts.
"""
import ipaddress
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from jbind import distributed, launch
from jbind import _dist_runtime as rt
from jbind.base import MXNetError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, "tests", "dist_fail_worker.py")
HEARTBEAT = 4  # seconds; the failures below are detected within it
LIMIT = 90     # no scenario may take longer than this (they take a few heartbeats)
CRASH = ("Segmentation fault", "Aborted", "terminate called", "Fatal Python error", "Check failure")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _read(path):
    with open(path) as f:
        return f.read()


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JBIND_")}
    # the workers import this checkout's jbind, not whichever one is installed
    env.update(PYTHONPATH=os.pathsep.join([ROOT] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
               JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1")
    env.update({k: str(v) for k, v in extra.items()})
    return env


class Scenario:
    """Processes started now; `result()` waits for them and returns [(rc, stdout, stderr)]."""

    def __init__(self, piddir, cmds):
        self.piddir, self.start = piddir, time.monotonic()
        self.files = [(open(os.path.join(piddir, f"out.{i}"), "w+"), open(os.path.join(piddir, f"err.{i}"), "w+"))
                      for i in range(len(cmds))]  # files, not pipes: nobody reads while they run
        self.procs = [subprocess.Popen(cmd, env=env, stdout=o, stderr=e, text=True, cwd=ROOT)
                      for (cmd, env), (o, e) in zip(cmds, self.files)]
        self._result = None

    def result(self):
        if self._result is None:
            try:
                for p in self.procs:
                    p.wait(timeout=max(1, LIMIT - (time.monotonic() - self.start)))
            finally:
                self.kill()
            self.elapsed = time.monotonic() - self.start
            self._result = [(p.returncode, _read(o.name), _read(e.name)) for p, (o, e) in zip(self.procs, self.files)]
        return self._result

    def ended(self, i):
        """When process i last wrote to stderr (its last words come just before it exits)."""
        return os.path.getmtime(self.files[i][1].name)

    def pids(self):
        return [int(_read(os.path.join(self.piddir, f))) for f in os.listdir(self.piddir) if f.startswith("pid.")]

    def kill(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for f in (f for files in self.files for f in files):
            f.close()


def _workers(piddir, action, victim, n=2, ranks=None, port=None, **env):
    port = port or _free_port()
    return [([sys.executable, WORKER, action, str(victim), piddir],
             _env(JBIND_COORDINATOR=f"127.0.0.1:{port}", JBIND_NUM_PROCESSES=n, JBIND_PROCESS_ID=r, **env))
            for r in (range(n) if ranks is None else ranks)]


def _start_all(tmp_path, d):
    def piddir(name):
        d = tmp_path / name
        d.mkdir()
        return str(d)
    fast = dict(JBIND_HEARTBEAT_TIMEOUT=HEARTBEAT, JBIND_JOIN_TIMEOUT=60)
    p = piddir("na")
    d["never_arrives"] = Scenario(p, _workers(p, "none", 9, ranks=[0], JBIND_JOIN_TIMEOUT=2)
                                  + _workers(p, "none", 9, ranks=[1], JBIND_JOIN_TIMEOUT=2))
    p = piddir("k1")
    d["killed_1"] = Scenario(p, _workers(p, "kill", 1, **fast))
    p = piddir("k0")
    d["killed_0"] = Scenario(p, _workers(p, "kill", 0, **fast))
    p = piddir("st")
    d["stopped_launcher"] = Scenario(p, [(
        [sys.executable, "-m", "jbind.launch", "-n", "2", "--heartbeat-timeout", str(HEARTBEAT),
         "--join-timeout", "60", WORKER, "stop", "1", p], _env())])


def _at(text, marker):
    """The time.time() a worker printed after `marker`."""
    return float(next(ln for ln in text.splitlines() if marker in ln).rsplit(" ", 1)[1])


def _no_crash(err):
    for word in CRASH:
        assert word not in err, err[-3000:]


def test_port_taken_is_an_mxnet_error(capsys):
    """Rank 0 finds its coordinator port taken: an MXNetError before JAX is touched (its
    service segfaulted there), and the launcher refuses the port in one line before
    starting anyone."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(MXNetError, match=f"cannot listen on 127.0.0.1:{port}: another program listens"):
            distributed.initialize(f"127.0.0.1:{port}", 2, 0)
        assert launch.main(["-n", "2", "--coordinator", f"127.0.0.1:{port}", "t.py"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0] == (f"jbind.launch: the coordinator cannot listen on 127.0.0.1:{port}: another program "
                        f"listens there; choose another HOST:PORT")


def _peer_that_never_arrives(s):
    """Rank 0 alone, and rank 1 alone (its coordinator never starts): each raises an
    MXNetError after the 2 s join timeout (it aborted after about 131 s)."""
    (rc0, out0, err0), (rc1, out1, err1) = s.result()
    assert rc0 == 1 and "MXNetError: worker 0 of 2: the job did not assemble within 2 s" in err0, err0[-3000:]
    assert rc1 == 1 and "MXNetError: worker 1 of 2: nothing listens at the coordinator" in err1, err1[-3000:]
    _no_crash(err0 + err1)
    for i, out in enumerate((out0, out1)):  # 2 s, and a little more for rank 1's retries: not 131
        assert s.ended(i) - _at(out, "joining at") < 2 + 5 + 10, i


def _worker_killed_mid_step(s):
    """Worker 1 is SIGKILLed between all-reduces: worker 0 gets an MXNetError and exits 1
    with a line naming worker 1 within the heartbeat timeout (it aborted 80 s later)."""
    (rc0, out0, err0), (rc1, out1, _) = s.result()
    assert rc1 == -signal.SIGKILL
    assert rc0 == 1, err0[-3000:]
    assert "MXNetError: worker 0: the all-reduce over 2 workers failed" in err0, err0[-3000:]
    assert f"jbind.distributed: worker 0: worker 1 sent no heartbeat" in err0, err0[-3000:]
    assert "done" not in out0
    _no_crash(err0)
    assert s.ended(0) - _at(out1, "victim") < HEARTBEAT + 15  # not 80 s


def _coordinator_killed_mid_step(s):
    """Worker 0, which holds the coordinator, is SIGKILLed: worker 1 exits 1 with a line
    naming worker 0 (JAX's error thread used to abort it)."""
    (rc0, out0, _), (rc1, _, err1) = s.result()
    assert rc0 == -signal.SIGKILL
    assert rc1 == 1, err1[-3000:]
    assert "jbind.distributed: worker 1" in err1 and "worker 0" in err1.split("jbind.distributed: worker 1")[-1]
    _no_crash(err1)
    assert s.ended(1) - _at(out0, "victim") < HEARTBEAT + 15


def _frozen_worker_under_the_launcher(s):
    """Worker 1 stops itself (SIGSTOP): worker 0 exits within the heartbeat timeout with a
    line naming it, the launcher stops the job with a line naming worker 1, and no worker
    is left. Before that, each worker listened only on loopback addresses."""
    [(rc, out, err)] = s.result()
    assert rc == 1, err[-3000:]
    assert "[0] jbind.distributed: worker 0: worker 1 sent no heartbeat" in err, err[-3000:]
    [line] = [ln for ln in err.splitlines() if ln.startswith("jbind.launch:")]
    # whichever saw it first: the launcher (worker 1 stopped too long) or worker 0 (exit 1)
    assert "worker 1" in line and "stopped (SIGSTOP)" in line, line
    _no_crash(err)
    assert s.ended(0) - _at(out, "victim") < HEARTBEAT + 15  # not 82 s
    listens = {r: ln[len(f"[{r}] listen "):].split() for ln in out.splitlines() for r in (0, 1)
               if ln.startswith(f"[{r}] listen ")}
    assert sorted(listens) == [0, 1] and listens[0], out
    port = out.split("[0] coordinator ")[1].split()[0].rsplit(":", 1)[1]
    assert any(a.endswith(":" + port) for a in listens[0]), (port, listens[0])  # rank 0's coordinator is one
    for r, addrs in listens.items():
        for a in addrs:
            host = a.rsplit(":", 1)[0].strip("[]")
            ip = ipaddress.ip_address(host)
            assert (getattr(ip, "ipv4_mapped", None) or ip).is_loopback, (r, a)
    pids = s.pids()
    assert len(pids) == 2
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_each_failure_ends_in_one_line_within_its_timeout(tmp_path):
    """The four failures of issue #20 part 3, two loopback workers each, all at once (they
    mostly wait; one test, so that pytest-xdist does not start them twice)."""
    runs = {}
    try:
        _start_all(tmp_path, runs)
        _peer_that_never_arrives(runs["never_arrives"])
        _worker_killed_mid_step(runs["killed_1"])
        _coordinator_killed_mid_step(runs["killed_0"])
        _frozen_worker_under_the_launcher(runs["stopped_launcher"])
    finally:
        for s in runs.values():
            s.kill()


def test_non_loopback_coordinator_needs_an_explicit_opt_in(capsys):
    """A coordinator on a network address is refused by the worker and by the launcher
    unless the network is declared trusted."""
    with pytest.raises(MXNetError, match="not a loopback address.*JBIND_TRUST_NETWORK=1"):
        distributed.initialize("192.0.2.1:29500", 2, 1)
    assert launch.main(["-n", "2", "--coordinator", "192.0.2.1:29500", "t.py"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a loopback address" in err[0] and "--trust-network" in err[0], err
    rt.check_network("192.0.2.1:29500", True, "X", "--x")  # trusted: allowed

    rt.check_network("localhost:29500", False, "X", "--x")
    rt.check_network("[::1]:29500", False, "X", "--x")


def test_joining_after_jax_ran_is_an_mxnet_error():
    import jax.numpy as jnp
    jnp.zeros(1).block_until_ready()
    with pytest.raises(MXNetError, match="JAX already ran something"):
        distributed.initialize("127.0.0.1:9", 2, 1, join_timeout=1)


def test_port_and_address_checks():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        with pytest.raises(MXNetError, match="another program listens there"):
            rt.check_port_free("127.0.0.1", s.getsockname()[1])
    rt.check_port_free("127.0.0.1", _free_port())
    assert rt.parse_address("[::1]:80") == ("::1", 80)
    for bad in ("nohost", "h:0", "h:x", ":80", "h:70000"):
        with pytest.raises(MXNetError, match="HOST:PORT"):
            rt.parse_address(bad)
    assert rt.is_loopback("127.0.0.2") and not rt.is_loopback("192.0.2.1")


@pytest.mark.parametrize("value", ["0", "-1", "x", "inf", "nan"])
def test_timeouts_must_be_positive_seconds(value, capsys):
    with pytest.raises(MXNetError, match="positive number of seconds"):
        distributed.env_seconds("JBIND_JOIN_TIMEOUT", 1.0, {"JBIND_JOIN_TIMEOUT": value})
    with pytest.raises(SystemExit):
        launch.main(["-n", "2", "--heartbeat-timeout", value, "t.py"])
    assert "positive number of seconds" in capsys.readouterr().err


def test_launcher_names_the_signal():
    assert launch._how(-9) == "was killed by signal 9 (SIGKILL)" and launch._how(3) == "exited with code 3"
