"""`--plot PATH`: compile time per bucket and tokens/s, as one PNG (needs matplotlib)."""
from __future__ import annotations

import io
import re

from ..io_util import atomic_write_bytes
from ._setup import BenchError

_COMPILE = re.compile(r"compile\.(\w+)\.T(\d+)")
_STEP = re.compile(r"step\.T(\d+)")


def require() -> None:
    """Fail before any benchmark runs if matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise BenchError("--plot needs matplotlib, an optional dependency of jbind: "
                         "pip install 'jbind[bench]' (or pip install matplotlib)") from None


def plot(path: str, figures: list, batch: int) -> None:
    """Cold compile seconds against T, per lowering and the JAX baseline; tokens/s of one training
    step per bucket (batch x T / step time) and of steady training. Panels without data are left out."""
    require()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    compile_series, jax_compile, step_j, step_x, train = {}, {}, {}, {}, None
    for f in figures:
        m = _COMPILE.fullmatch(f.name)
        if m:
            t = int(m.group(2))
            compile_series.setdefault(m.group(1), {})[t] = f.median
            jax_compile[t] = f.summary(f.baseline)["median"]
        m = _STEP.fullmatch(f.name)
        if m:
            t = int(m.group(1))
            step_j[t] = batch * t / (f.median / 1e3)
            step_x[t] = batch * t / (f.summary(f.baseline)["median"] / 1e3)
        if f.name == "train.tokens_per_s":
            train = (f.median, f.summary(f.baseline)["median"])
    if not compile_series and not step_j and train is None:
        raise BenchError("nothing to plot: --plot draws the compile and tokens/s figures of `compile`, `train`, "
                         "`step` or `all`")
    panels = (["compile"] if compile_series else []) + (["tokens"] if step_j or train is not None else [])
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.5), squeeze=False)
    axes = dict(zip(panels, axes[0]))
    if "compile" in axes:
        ax = axes["compile"]
        for name, series in sorted(compile_series.items()):
            ts = sorted(series)
            ax.plot(ts, [series[t] for t in ts], marker="o", label=f"jbind, {name}")
        ts = sorted(jax_compile)
        ax.plot(ts, [jax_compile[t] for t in ts], marker="s", linestyle="--", color="k", label="JAX by hand")
        ax.set_yscale("log")
        ax.set_xticks(sorted(set(ts) | {t for series in compile_series.values() for t in series}))
        ax.set(title="cold compile, forward+backward, per bucket", xlabel="bucket length T", ylabel="seconds")
        ax.legend()
    if "tokens" in axes:
        ax = axes["tokens"]
        if step_j:
            ts = sorted(step_j)
            ax.plot(ts, [step_j[t] for t in ts], marker="o", label="jbind train step (seed model)")
            ax.plot(ts, [step_x[t] for t in ts], marker="s", linestyle="--", color="k", label="JAX by hand, step")
            ax.set_xticks(ts)
        if train is not None:
            ax.axhline(train[0], color="C1", label="jbind fit, steady (LM, mixed buckets)")
            ax.axhline(train[1], color="C1", linestyle="--", label="JAX loop, steady")
        ax.set(title="training throughput", xlabel="bucket length T", ylabel="tokens / s")
        ax.set_ylim(bottom=0)
        ax.legend()
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())
