"""`mx.profiler`: MXNet's profiler API over JAX's trace (`jax.profiler`).

`set_state('run')` starts a JAX trace in a temporary folder and `set_state('stop')`
collects its events. `dump()` writes them to the configured `filename` in the Chrome
tracing format MXNet's profiler writes (open it in chrome://tracing or Perfetto): the
compiled programs jbind runs (`jit(jbind_train)`, ...), the XLA kernels inside them and
the Python calls around them. With `aggregate_stats=True`, `dumps()` returns MXNet's
table of counts and times per event name (or JSON), by category. `Domain`, `Task`,
`Frame` and `Event` mark spans (JAX trace annotations); `Counter` and `Marker` add
counter and instant events to the dump.
"""
from __future__ import annotations

import atexit
import glob
import gzip
import json
import os
import shutil
import tempfile
import threading
import time
import warnings

from .base import MXNetError
from .io_util import atomic_write_bytes

_DEFAULTS = {"profile_all": False, "profile_symbolic": True, "profile_imperative": True,
             "profile_memory": True, "profile_api": True, "filename": "profile.json",
             "continuous_dump": False, "dump_period": 1.0, "aggregate_stats": False,
             "profile_process": "worker"}
_lock = threading.RLock()
_state = {"config": dict(_DEFAULTS), "folder": None, "events": [], "extra": [], "t0": None}


def _as_bool(v) -> bool:
    return v if isinstance(v, bool) else str(v).strip().lower() in ("1", "true")


def set_config(**kwargs) -> None:
    """Configure the profiler (keywords only, MXNet's names): `filename`, `aggregate_stats`,
    `profile_all`, `profile_symbolic`, `profile_imperative`, `profile_memory`,
    `profile_api`, `continuous_dump`, `dump_period`, `profile_process`."""
    unknown = sorted(set(kwargs) - set(_DEFAULTS))
    if unknown:
        raise MXNetError(f"Cannot find argument {unknown[0]!r}, possible arguments: {', '.join(_DEFAULTS)}")
    with _lock:
        for k, v in kwargs.items():
            default = _DEFAULTS[k]
            _state["config"][k] = _as_bool(v) if isinstance(default, bool) else type(default)(v)


def profiler_set_config(mode="symbolic", filename="profile.json") -> None:
    """Deprecated MXNet spelling of `set_config(profile_<mode>=True, filename=...)`."""
    warnings.warn("profiler.profiler_set_config() is deprecated. Please use profiler.set_config() instead",
                  stacklevel=2)
    set_config(**{"profile_" + mode: True, "filename": filename})


def _check_process(profile_process: str) -> None:
    if profile_process not in ("worker", "server"):
        raise KeyError(profile_process)


def set_state(state="stop", profile_process="worker") -> None:
    """'run' starts recording, 'stop' stops it (what was recorded stays for `dump`)."""
    if state not in ("run", "stop"):
        raise KeyError(state)
    _check_process(profile_process)
    with _lock:
        if state == "run" and _state["folder"] is None:
            _start()
        elif state == "stop" and _state["folder"] is not None:
            _stop()


def profiler_set_state(state="stop") -> None:
    """Deprecated MXNet spelling of `set_state`."""
    warnings.warn("profiler.profiler_set_state() is deprecated. Please use profiler.set_state() instead",
                  stacklevel=2)
    set_state(state)


def pause(profile_process="worker") -> None:
    """Stop recording until `resume()`."""
    _check_process(profile_process)
    with _lock:
        if _state["folder"] is not None:
            _stop()
            _state["paused"] = True


def resume(profile_process="worker") -> None:
    """Record again after `pause()`."""
    _check_process(profile_process)
    with _lock:
        if _state.pop("paused", False) and _state["folder"] is None:
            _start()


def dump(finished=True, profile_process="worker") -> None:
    """Write what was recorded to the configured file (Chrome tracing JSON, atomically).
    While recording, the events so far are included; `finished` also stops recording."""
    _check_process(profile_process)
    with _lock:
        running = _state["folder"] is not None
        if running:
            _stop()
            if not finished:
                _start()
        doc = {"traceEvents": _state["events"] + _state["extra"], "displayTimeUnit": "ms"}
        atomic_write_bytes(_state["config"]["filename"], json.dumps(doc).encode())
        _state["undumped"] = running and not finished


def dump_profile() -> None:
    """Deprecated MXNet spelling of `dump(True)`."""
    warnings.warn("profiler.dump_profile() is deprecated. Please use profiler.dump() instead", stacklevel=2)
    dump(True)


def dumps(reset=False, format="table", sort_by="total", ascending=False) -> str:
    """MXNet's aggregate statistics of what was recorded: count and total / min / max /
    average milliseconds per event name, by category, as a table or JSON. Empty unless
    `set_config(aggregate_stats=True)`, as MXNet's."""
    sorts = {"total": 1, "avg": 4, "min": 2, "max": 3, "count": 0}
    assert format in ("table", "json"), f"Invalid value provided for format: {format}. Support: 'table', 'json'"
    assert sort_by in sorts, f"Invalid value provided for sort_by: {sort_by}. Support: {', '.join(sorts)}"
    assert ascending in (False, True), f"Invalid value provided for ascending: {ascending}. Support: False, True"
    assert reset in (False, True), f"Invalid value provided for reset: {reset}. Support: False, True"
    with _lock:
        if not _state["config"]["aggregate_stats"]:
            return ""
        stats = _aggregate(_state["events"])
        if reset:
            _state["events"], _state["extra"] = [], []
    if not stats:
        return ""
    if format == "json":
        return json.dumps({"Time": {cat: {name: dict(zip(("Count", "Total", "Min", "Max", "Avg"),
                                                          (row[0],) + tuple(round(x, 4) for x in row[1:])))
                                          for name, row in rows.items()}
                                    for cat, rows in stats.items()}, "Unit": {"Time": "ms"}}, indent=4)
    lines = ["", "Profile Statistics:", "\tNote the difference in units for different entries."]
    for cat, rows in stats.items():
        lines += [cat, "=================",
                  f"{'Name':<30}{'Total Count':>11}{'Time (ms)':>17}{'Min Time (ms)':>17}{'Max Time (ms)':>17}"
                  f"{'Avg Time (ms)':>17}",
                  f"{'----':<30}{'-----------':>11}{'---------':>17}{'-------------':>17}{'-------------':>17}"
                  f"{'-------------':>17}"]
        order = sorted(rows.items(), key=lambda kv: kv[1][sorts[sort_by]], reverse=not ascending)
        lines += [f"{name:<30}{r[0]:>11}{r[1]:>17.4f}{r[2]:>17.4f}{r[3]:>17.4f}{r[4]:>17.4f}" for name, r in order]
        lines.append("")
    return "\n".join(lines) + "\n"


def _category(name: str) -> str:
    if name.startswith("$"):
        return "Python"
    if name.startswith("PjitFunction("):
        return "jbind programs"
    return "XLA"


def _aggregate(events) -> dict:
    """{category: {name: [count, total, min, max, avg]}} (milliseconds) of complete events."""
    out: dict = {}
    ends: dict = {}  # the end of the last counted span per (pid, tid, name): JAX nests some in themselves
    for e in sorted((e for e in events if e.get("ph") == "X"), key=lambda e: float(e.get("ts", 0.0))):
        if e.get("name", "").startswith("end: "):
            continue
        where = (e.get("pid"), e.get("tid"), e.get("name"))
        start = float(e.get("ts", 0.0))
        if start < ends.get(where, float("-inf")):
            continue
        ends[where] = start + float(e.get("dur", 0.0))
        name, ms = e["name"], float(e.get("dur", 0.0)) / 1000.0
        if name.startswith("PjitFunction("):
            name = name[len("PjitFunction("):-1]
        row = out.setdefault(_category(e["name"]), {}).setdefault(name, [0, 0.0, ms, ms, 0.0])
        row[0] += 1
        row[1] += ms
        row[2], row[3] = min(row[2], ms), max(row[3], ms)
        row[4] = row[1] / row[0]
    return out


def _dump_at_exit() -> None:
    # MXNet's profiler writes its file when the process ends (its destructor dumps), so a
    # script that sets 'run' and never dumps (image-classification's fit.py) still gets it.
    with _lock:
        if _state.get("undumped"):
            try:
                dump(True)
            except Exception as e:  # noqa: BLE001 - at exit: report, do not raise
                warnings.warn(f"mx.profiler: could not write {_state['config']['filename']!r} at exit: {e}",
                              stacklevel=1)


def _start() -> None:
    import jax
    if "exit_hook" not in _state:
        _state["exit_hook"] = atexit.register(_dump_at_exit)
    _state["undumped"] = True
    folder = tempfile.mkdtemp(prefix="jbind-profile-")
    jax.profiler.start_trace(folder)
    _state["folder"] = folder
    if _state["t0"] is None:
        _state["t0"] = time.perf_counter()


def _stop() -> None:
    import jax
    folder, _state["folder"] = _state["folder"], None
    try:
        jax.profiler.stop_trace()
        for path in sorted(glob.glob(os.path.join(folder, "plugins", "profile", "*", "*.trace.json.gz"))):
            with gzip.open(path) as f:
                _state["events"].extend(json.load(f).get("traceEvents", []))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _now_us() -> float:
    t0 = _state["t0"]
    return (time.perf_counter() - (t0 if t0 is not None else time.perf_counter())) * 1e6


# --- MXNet's profiling objects -----------------------------------------------------------------
class Domain:
    """A named group of tasks, frames, counters and markers."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name

    def new_task(self, name):
        return Task(self, name)

    def new_frame(self, name):
        return Frame(self, name)

    def new_counter(self, name, value=None):
        return Counter(self, name, value)

    def new_marker(self, name):
        return Marker(self, name)


class _Span:
    """A span between `start()` and `stop()`, recorded as a JAX trace annotation."""

    def __init__(self, name):
        self.name = name
        self._active = None

    def start(self):
        import jax
        self._active = jax.profiler.TraceAnnotation(self._label())
        self._active.__enter__()

    def stop(self):
        if self._active is not None:
            self._active.__exit__(None, None, None)
            self._active = None

    def _label(self) -> str:
        return self.name

    def __str__(self):
        return self.name


class Task(_Span):
    def __init__(self, domain, name):
        super().__init__(name)
        self.domain = domain

    def _label(self) -> str:
        return f"{self.domain}::{self.name}"


class Frame(Task):
    pass


class Event(_Span):
    pass


class Counter:
    """A named value; each change adds a counter event to the dump."""

    def __init__(self, domain, name, value=None):
        self.domain, self.name = domain, name
        if value is not None:
            self.set_value(value)

    def set_value(self, value):
        self.value = value
        with _lock:
            _state["extra"].append({"ph": "C", "name": f"{self.domain}::{self.name}", "pid": 0, "ts": _now_us(),
                                    "args": {self.name: value}})

    def increment(self, delta=1):
        self.set_value(getattr(self, "value", 0) + delta)

    def decrement(self, delta=1):
        self.set_value(getattr(self, "value", 0) - delta)

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self):
        return self.name


class Marker:
    """An instant event in the dump."""

    def __init__(self, domain, name):
        self.domain, self.name = domain, name

    def mark(self, scope="process"):
        with _lock:
            _state["extra"].append({"ph": "i", "name": f"{self.domain}::{self.name}", "pid": 0, "ts": _now_us(),
                                    "s": {"global": "g", "process": "p", "thread": "t"}.get(scope, "p")})
