"""What every subcommand shares: sizes, the repository's benchmarks/ folder, the models,
the corpus, progress bars, the loop-lowering switch and the subprocess runner."""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..base import MXNetError


class BenchError(MXNetError):
    """A benchmark cannot run (missing folder, optional dependency, failed subprocess)."""


@dataclasses.dataclass(frozen=True)
class Config:
    """Sizes and repeats of every subcommand: `full()` for figures, `quick_config()` for CI smoke."""

    quick: bool = False
    batch: int = 32
    # bind: MXNet's executor-group benchmark (mx.rnn LSTM cells; layers, hidden, embed, vocab)
    bind_model: tuple = (5, 200, 200, 50)
    bind_buckets: tuple = (1, 2, 3, 4, 5)
    bind_default: int = 10
    bind_loop: int = 500
    bind_repeat: int = 5
    contexts: int = 2
    # compile and train: the bucketing LM of examples/bucketing_rnn.py on the bundled corpus
    lm_model: tuple = (2, 200, 200)
    compile_lengths: tuple = (10, 20, 30, 40, 50, 60)
    compile_repeat: int = 1
    restart_warm_runs: int = 2
    train_buckets: tuple = (10, 20, 30, 40, 50, 60)
    train_batches: int = 100
    train_repeat: int = 3
    # train's peers (_train_peers.py): their folder ('' the default, 'none' off), Pythons, batches
    train_peers: str = ""
    python_mxnet: str = ""
    python_torch: str = ""
    peer_batches: int = 200
    peer_warmup: int = 10
    # step: the seed config (benchmarks/models.py), one train step per bucket
    step_model: tuple = (5, 200, 200, 50)
    step_buckets: tuple = (10, 20, 30, 40, 50, 60)
    step_repeat: int = 20
    # memory: K buckets of a BucketingModule, then G more executor groups (the step buckets:
    # after `step`, jbind finds them compiled)
    memory_buckets: tuple = (10, 20, 30, 40, 50, 60)
    memory_groups: int = 4
    child_timeout: int = 1800
    # zoo: Gluon model zoo checkpoints vs MXNet 1.9.1 (benchmarks/zoo_bench.py; () = all its models)
    zoo_models: tuple = ()
    zoo_batches: tuple = (1, 32)
    zoo_reps: int = 10
    zoo_cache: str = ""
    # imgclf: MXNet's example/image-classification scripts (benchmarks/image_classification.py; () = all)
    imgclf_networks: tuple = ()
    imgclf_batches: tuple = (1, 16, 32)
    imgclf_reps: int = 3
    imgclf_examples: str = ""

    @classmethod
    def full(cls, brief: bool = False, repeat: int | None = None) -> "Config":
        cfg = cls(bind_repeat=3, train_batches=50, train_repeat=2, step_repeat=10) if brief else cls()
        return cfg.with_repeat(repeat)

    @classmethod
    def quick_config(cls, repeat: int | None = None) -> "Config":
        tiny = (1, 8, 8, 20)
        cfg = cls(quick=True, batch=4, bind_model=tiny, bind_buckets=(1,), bind_default=2, bind_loop=10,
                  bind_repeat=2, lm_model=(1, 8, 8), compile_lengths=(3,), compile_repeat=1,
                  restart_warm_runs=1, train_buckets=(5, 10), train_batches=3, train_repeat=1,
                  peer_batches=12, peer_warmup=4,
                  step_model=tiny, step_buckets=(2, 4), step_repeat=3, memory_buckets=(2, 4),
                  memory_groups=2, child_timeout=300, zoo_models=("tiny",), zoo_batches=(1, 2), zoo_reps=2,
                  imgclf_networks=("resnet-18",), imgclf_batches=(1, 2), imgclf_reps=1)
        return cfg.with_repeat(repeat)

    def with_repeat(self, repeat: int | None) -> "Config":
        if repeat is None:
            return self
        if repeat < 1:
            raise BenchError(f"--repeat must be at least 1, got {repeat}")
        return dataclasses.replace(self, bind_repeat=repeat, compile_repeat=repeat, restart_warm_runs=repeat,
                                   train_repeat=repeat, step_repeat=repeat, zoo_reps=repeat,
                                   imgclf_reps=repeat)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Config":
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


# --- the repository's benchmarks/ folder ----------------------------------------------------
def benchmarks_dir() -> Path:
    """benchmarks/ of the checkout jbind is installed from (editable install)."""
    here = Path(__file__).resolve().parent.parent.parent / "benchmarks"
    if not (here / "jax_baselines.py").is_file():
        raise BenchError(f"jbind-bench needs the repository's benchmarks/ folder (jax_baselines.py, models.py) "
                         f"and did not find it at {here}: install jbind from a checkout with "
                         f"`pip install -e .`")
    return here


def import_benchmark(name: str):
    """Import `benchmarks/<name>.py` (jax_baselines or models)."""
    path = str(benchmarks_dir())
    if path not in sys.path:
        sys.path.insert(0, path)
    return importlib.import_module(name)


def corpus_dir() -> Path:
    d = benchmarks_dir().parent / "examples" / "data" / "fortunes"
    if not (d / "train.txt").is_file():
        raise BenchError(f"the bundled corpus is missing: {d / 'train.txt'}")
    return d


@functools.lru_cache(maxsize=None)
def corpus():
    """(encoded sentences, vocab) of the bundled corpus, as examples/bucketing_rnn.py reads it."""
    from .. import rnn
    with open(corpus_dir() / "train.txt") as f:
        lines = [list(filter(None, line.split(" "))) for line in f.read().splitlines()]
    return rnn.encode_sentences(lines, invalid_label=0, start_label=1)


def lm_vocab() -> int:
    """Vocabulary size of the bundled corpus (the LM's input_dim and output classes)."""
    return len(corpus()[1])


# --- models ------------------------------------------------------------------------------
def rnn_lm(mx, num_layers, num_hidden, num_embed, vocab):
    """`sym_gen(seq_len) -> Symbol` of the LSTM LM with mx.rnn cells (bind_bench.py, the example)."""
    stack = mx.rnn.SequentialRNNCell()
    for i in range(num_layers):
        stack.add(mx.rnn.LSTMCell(num_hidden=num_hidden, prefix="lstm_l%d_" % i))

    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        embed = mx.sym.Embedding(data=data, input_dim=vocab, output_dim=num_embed, name="embed")
        stack.reset()
        outputs, _ = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.Reshape(outputs, shape=(-1, num_hidden))
        pred = mx.sym.FullyConnected(data=pred, num_hidden=vocab, name="pred")
        label = mx.sym.Reshape(label, shape=(-1,))
        return mx.sym.SoftmaxOutput(data=pred, label=label, name="softmax")
    return sym_gen


def seed_model(mx, num_layers, num_hidden, num_embed, vocab):
    """`sym_gen(seq_len) -> Symbol` of the seed model written with ops (benchmarks/models.py)."""
    return import_benchmark("models").sym_gen_factory(mx, num_layers, num_hidden, num_embed, vocab)


def batch(mx, n, seq_len, vocab, seed=0):
    """A DataBatch of random tokens with bucket_key `seq_len` (labels are tokens too)."""
    import numpy as np
    rng = np.random.default_rng(seed + seq_len)
    data = rng.integers(0, vocab, (n, seq_len)).astype(np.float32)
    label = rng.integers(0, vocab, (n, seq_len)).astype(np.float32)
    return mx.io.DataBatch([mx.nd.array(data)], [mx.nd.array(label)], pad=0, bucket_key=seq_len,
                           provide_data=[mx.io.DataDesc("data", (n, seq_len))],
                           provide_label=[mx.io.DataDesc("softmax_label", (n, seq_len))])


@contextlib.contextmanager
def quiet_stdout():
    """BucketSentenceIter prints MXNet's discard warning; keep the tables readable."""
    with contextlib.redirect_stdout(io.StringIO()):
        yield


# --- progress, lowering, compile time ----------------------------------------------------------
def progress(iterable=None, desc="", total=None):
    """A tqdm bar on stderr when it is a terminal (none in CI logs)."""
    from tqdm import tqdm
    return tqdm(iterable, desc=desc, total=total, leave=False, disable=None, file=sys.stderr)


def loop_switch():
    """`set_loop_lowering` and the current state, or None while loop lowering does not exist."""
    try:
        from ..symbol.rolled import loop_lowering_enabled, set_loop_lowering
    except ImportError:
        return None
    return set_loop_lowering, loop_lowering_enabled


def lowering_name() -> str:
    sw = loop_switch()
    return "n/a (no loop lowering)" if sw is None else ("rolled" if sw[1]() else "unrolled")


@contextlib.contextmanager
def lowering(rolled: bool | None):
    """Bind and compile with the loop lowering on or off (None: leave it as it is)."""
    sw = loop_switch()
    if sw is None or rolled is None:
        yield
        return
    old = sw[1]()
    sw[0](rolled)
    try:
        yield
    finally:
        sw[0](old)


_COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
                   "/jax/core/compile/backend_compile_duration")


class CompileClock:
    """Seconds JAX spent tracing, lowering and compiling, and the number of XLA compiles."""
    seconds = 0.0
    count = 0


@contextlib.contextmanager
def jax_compile_clock():
    """Time JAX's compile work inside the block, in any thread: the same clock for jbind and
    for the hand-written baseline. `with jax_compile_clock() as c: ...; c.seconds, c.count`."""
    import jax.monitoring as mon
    clock = CompileClock()

    def listener(event, duration, **kwargs):
        if event in _COMPILE_EVENTS:
            clock.seconds += duration
            clock.count += event == _COMPILE_EVENTS[-1]
    mon.register_event_duration_secs_listener(listener)
    try:
        yield clock
    finally:
        mon.unregister_event_duration_listener(listener)


# --- subprocesses ------------------------------------------------------------------------------
_DEVICE_FLAG = re.compile(r"--xla_force_host_platform_device_count=\d+")


def run_child(kind: str, cfg: Config, env: dict | None = None, devices: int | None = None,
              extra: dict | None = None) -> tuple:
    """Run `python -m jbind.bench._child kind` in a fresh process -> (its JSON result, wall seconds).

    `devices`: number of CPU devices (XLA_FLAGS must be set before JAX starts); `extra`: more
    JSON-able arguments for the child."""
    child_env = dict(os.environ, **(env or {}))
    if devices is not None:
        flags = _DEVICE_FLAG.sub("", child_env.get("XLA_FLAGS", "")).strip()
        child_env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={devices}".strip()
    with tempfile.TemporaryDirectory(prefix="jbind-bench-") as tmp:
        out = os.path.join(tmp, "result.json")
        args = json.dumps({"config": cfg.to_json(), "extra": extra or {}})
        cmd = [sys.executable, "-m", "jbind.bench._child", kind, args, out]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, env=child_env, capture_output=True, text=True, timeout=cfg.child_timeout)
        except subprocess.TimeoutExpired:
            raise BenchError(f"the {kind!r} benchmark subprocess ran past {cfg.child_timeout} s") from None
        wall = time.perf_counter() - t0
        if proc.returncode != 0 or not os.path.exists(out):
            raise BenchError(f"the {kind!r} benchmark subprocess failed (exit {proc.returncode}):\n"
                             + proc.stderr[-3000:])
        with open(out) as f:
            return json.load(f), wall
