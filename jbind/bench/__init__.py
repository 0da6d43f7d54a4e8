"""jbind-bench: jbind's benchmarks from the command line, each figure next to a hand-written
JAX baseline measured in the same run.

    jbind-bench {bind,compile,train,step,memory,all} [--quick] [--repeat N] [--json PATH] [--plot PATH]
    python -m jbind.bench all --quick --json out.json

The baselines live in the repository's `benchmarks/jax_baselines.py`, so the command needs
jbind installed from a checkout (`pip install -e .`). `--plot` needs matplotlib
(`pip install 'jbind[bench]'`).
"""
from ._cli import expected_figures, main
from ._report import Figure
from ._setup import BenchError, Config

__all__ = ["BenchError", "Config", "Figure", "expected_figures", "main"]
