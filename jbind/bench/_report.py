"""Figures (samples + the baseline measured in the same run), tables and JSON."""
from __future__ import annotations

import dataclasses
import json
import math
import statistics

from ..io_util import atomic_write_text

SCALE = {"s": 1.0, "ms": 1e3, "us": 1e6}


@dataclasses.dataclass
class Figure:
    """One measured quantity: its samples over the repeats and, where there is one, the
    hand-written JAX baseline's samples measured in the same run."""

    name: str                       # dotted, unique: "step.T10"
    label: str                      # what a reader sees in the table
    unit: str                       # "ms", "s", "tokens/s", "bytes", "count"
    samples: list
    baseline: list | None = None
    baseline_label: str = ""
    note: str = ""

    def summary(self, xs=None) -> dict:
        xs = [float(x) for x in (self.samples if xs is None else xs)]
        return {"min": min(xs), "median": statistics.median(xs), "max": max(xs), "n": len(xs)}

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def ratio(self) -> float | None:
        """jbind's median over the baseline's (for a time: the binder's overhead factor)."""
        if not self.baseline:
            return None
        b = statistics.median(self.baseline)
        return self.median / b if b else None

    def to_json(self) -> dict:
        out = {"label": self.label, "unit": self.unit, **self.summary(), "samples": list(map(float, self.samples))}
        if self.baseline:
            out["baseline"] = {"label": self.baseline_label, **self.summary(self.baseline),
                               "samples": list(map(float, self.baseline))}
            out["ratio"] = self.ratio
        if self.note:
            out["note"] = self.note
        return out

    @classmethod
    def from_json(cls, name: str, d: dict) -> "Figure":
        b = d.get("baseline")
        return cls(name, d["label"], d["unit"], d["samples"], b["samples"] if b else None,
                   b["label"] if b else "", d.get("note", ""))


def _num(x: float, unit: str) -> str:
    if unit == "count":
        return f"{x:.0f}"
    if unit == "bytes":
        return f"{x:,.0f}"
    if unit == "tokens/s":
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.1f}"
    if abs(x) >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def table(title: str, figures: list) -> str:
    """A fixed-width table: figure, unit, median, min, max, baseline median (min..max), ratio."""
    rows = [("figure", "unit", "median", "min", "max", "baseline: median (min..max)", "ratio")]
    for f in figures:
        s = f.summary()
        if f.baseline:
            b = f.summary(f.baseline)
            base = (f"{_num(b['median'], f.unit)} ({_num(b['min'], f.unit)}..{_num(b['max'], f.unit)})"
                    f"  {f.baseline_label}")
            ratio = f"{f.ratio:.2f}" if f.ratio is not None and math.isfinite(f.ratio) else "-"
        else:
            base, ratio = "-", "-"
        rows.append((f.label, f.unit, _num(s["median"], f.unit), _num(s["min"], f.unit), _num(s["max"], f.unit),
                     base, ratio))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = [title]
    for k, r in enumerate(rows):
        cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1])] + [c.rjust(w) for c, w in zip(r[2:5], widths[2:5])]
        cells += [r[5].ljust(widths[5]), r[6]]
        lines.append("  " + "  ".join(cells).rstrip())
        if k == 0:
            lines.append("  " + "-" * (sum(widths) + 2 * len(widths) + 5))
    notes = [f"  * {f.label}: {f.note}" for f in figures if f.note]
    return "\n".join(lines + notes)


def write_json(path: str, meta: dict, figures: list) -> None:
    """All figures by name, with min/median/max/samples and the baseline's, written atomically."""
    doc = {"meta": meta, "figures": {f.name: f.to_json() for f in figures}}
    atomic_write_text(path, json.dumps(doc, indent=1, sort_keys=False) + "\n")
