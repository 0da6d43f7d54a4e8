"""The peers of `jbind-bench train`: the bucketing LM written for MXNet 1.9.1 and PyTorch.

The scripts live outside the repository (`--peers DIR`; default `../shared/peers` next to the
checkout when it exists, else the peers are left out with a note). Each prints one JSON
(`--json-out`) with steady tokens/s over the batches after `--warmup-batches` (padded
positions), its first batch and its total wall from process start, and its cumulative
perplexity. Every run is its own process, one after the other, pinned to the bench's first
core (`taskset -c`) with one thread (benchmarks/_common.py's `peer_environment`), on the
bundled corpus with the LM sizes, batch, buckets and batch count of the config, each
starting cold (jbind without JBIND_CACHE_DIR, PyTorch with a fresh TORCHINDUCTOR_CACHE_DIR):

  jbind           mxnet_bench_train.py with `import mxnet` resolved to this checkout's jbind
                  (benchmarks/_common.py's alias package): the explicit forward_backward /
                  update / update_metric loop
  mxnet_unrolled  mxnet_bench_train.py on MXNet 1.9.1 (unrolled LSTMCell)
  mxnet_fused     bench_train_fused.py --cell fused (FusedRNNCell)
  torch_eager     torch_bucketing_lm.py --compile none (nn.LSTM)
  torch_compile   torch_bucketing_lm.py --compile dynamic (torch.compile(dynamic=True))

The peers' Pythons: `--python-mxnet` / `--python-torch`, else JBIND_BENCH_MXNET_PYTHON /
JBIND_BENCH_TORCH_PYTHON, else benchmarks/gluon_lm_bench.py's defaults. A peer whose Python
is absent or cannot import its library is skipped with a note; so is one that fails. Each
peer gives three figures with jbind's run as the samples and the peer's as the baseline, so
`ratio` is jbind / peer (tokens/s: above 1 jbind is faster; seconds: below 1)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ._report import Figure
from ._setup import BenchError, benchmarks_dir, corpus_dir, import_benchmark

JBIND_SCRIPT = "mxnet_bench_train.py"
# name, label, library (its Python and the module it must import), script, extra flags
PEERS = (("mxnet_unrolled", "MXNet 1.9.1 LSTMCell", "mxnet", "mxnet_bench_train.py", ()),
         ("mxnet_fused", "MXNet 1.9.1 FusedRNNCell", "mxnet", "bench_train_fused.py", ("--cell", "fused")),
         ("torch_eager", "PyTorch eager", "torch", "torch_bucketing_lm.py", ("--compile", "none")),
         ("torch_compile", "torch.compile(dynamic=True)", "torch", "torch_bucketing_lm.py", ("--compile", "dynamic")))
SCRIPTS = tuple(sorted({p[3] for p in PEERS}))
KINDS = (("tokens_per_s", "steady tokens/s", "tokens/s", "steady_tokens_per_s_padded"),
         ("first_batch", "first batch from process start", "s", "first_batch_from_process_start_s"),
         ("wall", "wall from process start", "s", "total_wall_from_process_start_s"))
ENV = {"mxnet": "JBIND_BENCH_MXNET_PYTHON", "torch": "JBIND_BENCH_TORCH_PYTHON"}


def folder(cfg) -> tuple:
    """(the peers' folder or None, why there is none). `cfg.train_peers`: '' for the default
    (../shared/peers next to the checkout), 'none' for no peers, else a folder that must hold
    the scripts."""
    if cfg.train_peers == "none":
        return None, "peers not run (--peers none)"
    if cfg.train_peers:
        d = Path(cfg.train_peers).expanduser().resolve()
        missing = [s for s in SCRIPTS if not (d / s).is_file()]
        if missing:
            raise BenchError(f"--peers {cfg.train_peers}: no {', '.join(missing)} there (the bucketing LM "
                             f"peer scripts: {', '.join(SCRIPTS)})")
        return d, ""
    d = (benchmarks_dir().parent.parent / "shared" / "peers").resolve()
    if all((d / s).is_file() for s in SCRIPTS):
        return d, ""
    return None, f"peers not run: no peer scripts in {d} (give --peers DIR)"


def figure_names(cfg) -> list:
    if folder(cfg)[0] is None:
        return []
    return [f"train.peers.{name}.{kind}" for name, *_ in PEERS for kind, *_ in KINDS]


def python_of(cfg, lib: str) -> str:
    """The peer library's interpreter: the option, the environment variable, gluon_lm_bench's default."""
    given = getattr(cfg, f"python_{lib}") or os.environ.get(ENV[lib])
    return given or import_benchmark("gluon_lm_bench").build_parser().get_default(f"python_{lib}")


def core() -> int | None:
    """The core every run is pinned to: the first this process may run on."""
    return min(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def flags(cfg, out: str) -> list:
    layers, hidden, embed = cfg.lm_model
    return ["--data", str(corpus_dir() / "train.txt"), "--num-layers", str(layers), "--num-hidden", str(hidden),
            "--num-embed", str(embed), "--batch-size", str(cfg.batch),
            "--buckets", ",".join(map(str, cfg.train_buckets)), "--max-batches", str(cfg.peer_batches),
            "--warmup-batches", str(cfg.peer_warmup), "--json-out", out]


def run_one(cfg, lib: str, python: str, script: Path, extra, tmp: str, name: str) -> dict:
    """One pinned run -> its JSON, or {'error': why}."""
    common = import_benchmark("_common")
    alias = common.write_alias(os.path.join(tmp, "alias")) if lib == "jbind" else None
    env = common.peer_environment(lib, str(benchmarks_dir().parent), front=(alias,) if alias else ())
    if lib == "torch":      # a cold torch.compile, as jbind starts without its persistent cache
        env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tmp, f"inductor_{name}")
    out = os.path.join(tmp, f"{name}.json")
    c = core()
    pin = ["taskset", "-c", str(c)] if c is not None and shutil.which("taskset") else []
    cmd = pin + [python, str(script), *extra, *flags(cfg, out)]
    print(f"train peers: running {name}: {' '.join(cmd)}", flush=True)
    try:
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=cfg.child_timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"{type(e).__name__}: {e}"}
    if proc.returncode != 0 or not os.path.isfile(out):
        return {"error": f"exit {proc.returncode}\n" + (proc.stdout[-1000:] + proc.stderr[-2000:]).strip()}
    with open(out) as f:
        res = json.load(f)
    absent = [k for _, _, _, k in KINDS if not isinstance(res.get(k), (int, float))]
    if absent:
        return {"error": f"{script.name} wrote no {', '.join(absent)} to its JSON"}
    return res


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "?"


def _note(cfg, name: str, res: dict, mine: dict) -> str:
    if "skipped" in res:
        return f"{name} skipped: {res['skipped']}"
    if "error" in res:
        return f"{name} failed: {_last_line(res['error'])}"
    note = (f"perplexity jbind {mine.get('train_perplexity_cumulative', float('nan')):.2f}, "
            f"{name} {res.get('train_perplexity_cumulative', float('nan')):.2f}")
    if res.get("batches_run", cfg.peer_batches) != mine.get("batches_run", cfg.peer_batches):
        note += f"; batches run: jbind {mine.get('batches_run')}, {name} {res.get('batches_run')}"
    return note


def run(cfg) -> tuple:
    """-> (figures, a note for the section when the peers are not run)."""
    where, why = folder(cfg)
    if where is None:
        return [], why
    with tempfile.TemporaryDirectory(prefix="jbind-train-peers-") as tmp:
        mine = run_one(cfg, "jbind", sys.executable, where / JBIND_SCRIPT, (), tmp, "jbind")
        if "error" in mine:
            raise BenchError(f"train peers: jbind could not run {where / JBIND_SCRIPT}:\n{mine['error'][-3000:]}")
        results, checked = {}, {}
        for name, _, lib, script, extra in PEERS:
            python = python_of(cfg, lib)
            if lib not in checked:
                env = import_benchmark("_common").peer_environment(lib, str(benchmarks_dir().parent))
                missing = import_benchmark("_common").interpreter_missing(python, lib, env)
                checked[lib] = missing and f"{missing} (--python-{lib} or {ENV[lib]})"
            if checked[lib]:
                results[name] = {"skipped": checked[lib]}
            else:
                results[name] = run_one(cfg, lib, python, where / script, extra, tmp, name)
    figs, n = [], cfg.peer_batches
    for name, label, *_ in PEERS:
        res = results[name]
        ok = "skipped" not in res and "error" not in res
        for k, (kind, what, unit, key) in enumerate(KINDS):
            text = f"{n}-batch {what}" if kind == "wall" else what
            figs.append(Figure(f"train.peers.{name}.{kind}", f"{text}, jbind loop vs {label}", unit, [mine[key]],
                               [res[key]] if ok else None, label, _note(cfg, name, res, mine) if k == 0 else ""))
    return figs, ""
