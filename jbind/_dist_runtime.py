"""How a worker joins, watches and leaves a `jbind.distributed` job (private).

JAX's own `jax.distributed.initialize` listens on every interface and ends every
failure in an abort: a join that times out, a peer that dies or stops, a port already
taken. This module starts the same coordinator service and client itself, so that:

- the coordinator listens only on the host it announces (loopback by default), and so
  do gloo's connections between the workers of a loopback job;
- a coordinator port already taken, or a job that does not assemble within the join
  timeout, is an `MXNetError`;
- after the join, a watchdog thread trades heartbeats with every other worker through the
  coordinator's key-value store; a worker (or the coordinator) silent for the heartbeat
  timeout ends this worker with one line naming it and exit code 1, well before JAX's
  own heartbeat (set to twice as long) would abort it;
- the errors JAX raises on its own threads when the coordinator goes away end in a
  `std::terminate`, which is turned into the same kind of one-line exit.
"""
from __future__ import annotations

import atexit
import ipaddress
import math
import os
import socket
import sys
import threading
import time

from .base import MXNetError

EXIT_JOB_FAILED = 1
_SHUTDOWN_TIMEOUT = 300  # seconds the workers wait for each other at exit (JAX's default)
_KEY = "jbind/alive/"


def parse_address(address: str, what: str = "the coordinator") -> tuple:
    """'host:port' / '[v6]:port' -> (host, port); MXNetError when malformed."""
    host, sep, port = address.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise MXNetError(f"{what} address {address!r} is not HOST:PORT with a port in 1..65535")
    return host, int(port)


def _addresses(host: str) -> list:
    try:
        return sorted({info[4][0] for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)})
    except (socket.gaierror, UnicodeError) as e:
        raise MXNetError(f"cannot resolve the coordinator host {host!r}: {e}") from None


def is_loopback(host: str) -> bool:
    """True when every address `host` resolves to is a loopback one (127.0.0.0/8, ::1)."""
    return all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in _addresses(host))


def check_network(address: str, trust_network: bool, env_name: str, flag: str) -> None:
    """Refuse a coordinator reachable from the network unless the user said the network is trusted."""
    host, _ = parse_address(address)
    if not trust_network and not is_loopback(host):
        raise MXNetError(
            f"the coordinator {address} is not a loopback address: its service and the workers' "
            f"gloo connections would accept anyone who reaches this network, with no authentication. "
            f"If every host on the network between the job's machines is trusted, set {env_name}=1 "
            f"(or {flag})")


def check_port_free(host: str, port: int) -> None:
    """MXNetError when nothing may listen on host:port here (taken, or not this machine's address)."""
    family = socket.AF_INET6 if ":" in _addresses(host)[0] else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC does: TIME_WAIT leftovers are fine
        try:
            s.bind((host, port))
            s.listen(1)
        except OSError as e:
            why = ("another program listens there" if e.errno == 98 else
                   "it is not an address of this machine" if e.errno == 99 else e.strerror)
            raise MXNetError(f"the coordinator cannot listen on {host}:{port}: {why}; "
                             f"choose another HOST:PORT") from None


def _wait_for_listener(host: str, port: int, deadline: float) -> None:
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.2)


def _bind_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def join(coordinator: str, num_processes: int, process_id: int, join_timeout: float,
         heartbeat_timeout: float) -> None:
    """Start (rank 0) the coordinator on `coordinator`'s own host and join it, as
    jax.distributed.initialize does; MXNetError when the job does not assemble in time."""
    import jax
    from jax._src import distributed as jd
    from jax._src.lib import _jax

    host, port = parse_address(coordinator)
    where = f"worker {process_id} of {num_processes}"
    state = jd.global_state
    if state.client is not None:
        raise MXNetError(f"{where}: jax.distributed is already initialized in this process")
    deadline = time.monotonic() + join_timeout
    backstop = int(math.ceil(2 * heartbeat_timeout + 10))  # JAX's heartbeat: only if the watchdog cannot run
    if process_id == 0:
        check_port_free(host, port)
    from jax._src import xla_bridge as xb
    if xb.backends_are_initialized():
        raise MXNetError(f"{where}: JAX already ran something in this process; the job must be joined first "
                         f"(import jbind before using JAX)")
    if process_id == 0:
        state.service = _jax.get_distributed_runtime_service(
            f"{_bind_host(host)}:{port}", num_processes, heartbeat_timeout=backstop,
            cluster_register_timeout=max(1, int(math.ceil(join_timeout))), shutdown_timeout=_SHUTDOWN_TIMEOUT)
    else:
        try:
            _wait_for_listener(host, port, deadline)
        except OSError as e:
            raise MXNetError(f"{where}: nothing listens at the coordinator {coordinator} after {join_timeout:g} s "
                             f"(the join timeout): worker 0 never started it ({e.strerror or e})") from None

    jax.config.update("jax_cpu_collectives_implementation", "gloo")

    def no_status(*_):
        """Never runs: JAX cannot hand it the status (std::bad_cast), which makes a failed
        connect() raise here instead of aborting the process."""

    client = _jax.get_distributed_runtime_client(
        coordinator, process_id, init_timeout=max(1, int(math.ceil(deadline - time.monotonic()))),
        heartbeat_timeout=backstop, shutdown_timeout=_SHUTDOWN_TIMEOUT, missed_heartbeat_callback=no_status,
        use_compression=True)
    try:
        client.connect()
    except Exception:
        del client
        if state.service is not None:
            state.service.shutdown()
            state.service = None
        raise MXNetError(f"{where}: the job did not assemble within {join_timeout:g} s (the join timeout): "
                         f"not every worker joined the coordinator at {coordinator}") from None
    state.client, state.process_id, state.num_processes = client, process_id, num_processes
    state.coordinator_address = coordinator
    state.initialize_preemption_sync_manager()
    if is_loopback(host):
        _gloo_on(host, client)
    _on_terminate.install(f"jbind.distributed: {where}: JAX's distributed runtime failed", host, port)
    dog = _Watchdog(client, process_id, num_processes, heartbeat_timeout, coordinator)
    atexit.register(_leave, dog)  # runs before JAX's own exit handler (registered earlier)


def _gloo_on(host: str, client) -> None:
    """Gloo's connections between the workers listen on `host` (else on this machine's hostname)."""
    import functools
    from jax._src import xla_bridge as xb
    from jax._src.lib import _jax
    addr = _addresses(host)[0]
    collectives = _jax.make_gloo_tcp_collectives(distributed_client=client, hostname=addr)
    xb.register_backend_factory("cpu", functools.partial(xb.make_cpu_client, collectives=collectives),
                                priority=0, fail_quietly=False)


def _die(message: str) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed or broken stream must not keep the process alive
            pass
    try:
        os.write(2, (message + "\n").encode())
    finally:
        os._exit(EXIT_JOB_FAILED)


class _Watchdog:
    """Heartbeats through the coordinator's key-value store, on two daemon threads: one
    talks to the coordinator (and may block there), the other only reads clocks and ends
    the process when a peer, or the coordinator, has been silent for `timeout` seconds."""

    def __init__(self, client, rank: int, num: int, timeout: float, coordinator: str):
        self.client, self.rank, self.timeout, self.coordinator = client, rank, timeout, coordinator
        self.period = max(0.1, timeout / 6)
        now = time.monotonic()
        self.last_round = now
        self.seen = {r: (None, now) for r in range(num) if r != rank}
        self.stopped = threading.Event()
        for target in (self._beat, self._check):
            threading.Thread(target=target, name=f"jbind-{target.__name__[1:]}", daemon=True).start()

    def stop(self) -> None:
        self.stopped.set()

    def _beat(self) -> None:
        from jax._src import distributed as jd
        count = 0
        while not self.stopped.is_set():
            if jd.global_state.client is not self.client:  # jax.distributed.shutdown() was called
                return self.stop()
            count += 1
            try:
                self.client.key_value_set(f"{_KEY}{self.rank}", str(count), allow_overwrite=True)
                values = dict(self.client.key_value_dir_get(_KEY))
            except Exception:  # the coordinator is gone or failing: _check decides when to give up
                self.stopped.wait(self.period)
                continue
            now = time.monotonic()
            for r, (value, _) in list(self.seen.items()):
                got = values.get(f"{_KEY}{r}")
                if got != value:
                    self.seen[r] = (got, now)
            self.last_round = now
            self.stopped.wait(self.period)

    def _check(self) -> None:
        while not self.stopped.wait(self.period):
            now = time.monotonic()
            if now - self.last_round > self.timeout:
                return self._fail(f"the coordinator (worker 0 at {self.coordinator}) has not answered for "
                                  f"{now - self.last_round:.0f} s")
            silent = sorted(r for r, (_, t) in self.seen.items() if now - t > self.timeout)
            if silent:
                return self._fail(f"worker {', '.join(map(str, silent))} sent no heartbeat for "
                                  f"{max(now - self.seen[r][1] for r in silent):.0f} s (died, stopped or hung)")

    def _fail(self, why: str) -> None:
        if not self.stopped.is_set():
            _die(f"jbind.distributed: worker {self.rank}: {why}, more than the heartbeat timeout of "
                 f"{self.timeout:g} s; exiting")


def _leave(dog: _Watchdog) -> None:
    """At exit: wait for every worker at JAX's shutdown barrier while the watchdog still
    runs (a peer that dies meanwhile ends this worker too), then stop it."""
    from jax._src import distributed as jd
    state = jd.global_state
    try:
        if state.preemption_sync_manager is not None:
            state.preemption_sync_manager.shutdown()
            state.preemption_sync_manager = None
        if state.client is not None:
            state.client.shutdown()
            state.client = None
    except Exception as e:  # noqa: BLE001 - at exit, one line is all that helps
        print(f"jbind.distributed: worker {dog.rank}: leaving the job failed: {str(e).splitlines()[0]}",
              file=sys.stderr, flush=True)
    finally:
        dog.stop()
        _on_terminate.uninstall()
    if state.service is not None:
        state.service.shutdown()
        state.service = None


class _OnTerminate:
    """A C++ terminate handler (libstdc++) that prints one line and exits with code 1.

    JAX's client calls its error callback on its own threads when the coordinator goes
    away; the callback cannot take the status (see `join`), and the std::bad_cast that
    escapes there would abort the process."""

    message: str | None = None
    _handler = _set = _previous = None

    def install(self, message: str, host: str, port: int) -> None:
        self.message, self.host, self.port = message, host, port
        if self._set is not None or not sys.platform.startswith("linux"):
            return
        import ctypes
        try:
            set_terminate = ctypes.CDLL("libstdc++.so.6")._ZSt13set_terminatePFvvE
        except (OSError, AttributeError):
            return
        set_terminate.restype, set_terminate.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
        self._handler = ctypes.CFUNCTYPE(None)(self._run)  # kept alive here: libstdc++ holds only the pointer
        self._previous = set_terminate(ctypes.cast(self._handler, ctypes.c_void_p))
        self._set = set_terminate

    def uninstall(self) -> None:
        """Back to the handler from before: out of the job, a terminate aborts as usual."""
        self.message = None
        if self._set is not None:
            self._set(self._previous)
            self._set = None

    def _coordinator_gone(self) -> bool:
        for _ in range(4):  # a dying coordinator may close its port a moment after its connections
            try:
                with socket.create_connection((self.host, self.port), timeout=1.0):
                    pass
            except OSError:
                return True
            time.sleep(0.25)
        return False

    def _run(self) -> None:
        if self.message is None:  # not in a job any more: what the default handler does
            os.abort()
        if self._coordinator_gone():
            why = f"the coordinator (worker 0 at {_bind_host(self.host)}:{self.port}) is gone"
        else:
            why = "a worker failed or the job's coordinator reported an error; see the lines above"
        _die(f"{self.message}: {why}; exiting")


_on_terminate = _OnTerminate()
