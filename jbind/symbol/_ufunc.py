"""MXNet's Python-level binary functions of `mx.sym` (`maximum`, `minimum`, `power` /
`pow`, `hypot`): a Symbol with a Symbol, a Symbol with a number, or two numbers."""
from __future__ import annotations

import numbers

from .symbol import Symbol


def _binary(name, left, right, op, scalar_op, rscalar_op, on_numbers):
    from . import _functions
    if isinstance(left, Symbol) and isinstance(right, Symbol):
        return _functions[op](left, right)
    if isinstance(left, Symbol) and isinstance(right, numbers.Number):
        return _functions[scalar_op](left, scalar=right)
    if isinstance(left, numbers.Number) and isinstance(right, Symbol):
        return _functions[rscalar_op](right, scalar=left)
    if isinstance(left, numbers.Number) and isinstance(right, numbers.Number):
        return on_numbers(left, right)
    raise TypeError(f"{name}: types ({type(left).__name__}, {type(right).__name__}) not supported; "
                    f"give Symbols or numbers")


def maximum(left, right):
    """Elementwise maximum of two same-shape Symbols, or of a Symbol and a number."""
    return _binary("maximum", left, right, "_Maximum", "_MaximumScalar", "_MaximumScalar", max)


def minimum(left, right):
    """Elementwise minimum of two same-shape Symbols, or of a Symbol and a number."""
    return _binary("minimum", left, right, "_Minimum", "_MinimumScalar", "_MinimumScalar", min)


def power(base, exp):
    """base ** exp elementwise (same-shape Symbols, or a Symbol and a number either way)."""
    return _binary("power", base, exp, "_Power", "_PowerScalar", "_RPowerScalar", lambda a, b: a ** b)


pow = power  # noqa: A001 - MXNet's name


def hypot(left, right):
    """sqrt(left**2 + right**2) elementwise (same-shape Symbols, or a Symbol and a number)."""
    return _binary("hypot", left, right, "_Hypot", "_HypotScalar", "_HypotScalar",
                   lambda a, b: (a * a + b * b) ** 0.5)


def histogram(a, bins=10, range=None, **kwargs):  # noqa: A002 - MXNet's name
    """(counts, bin edges) of `a`, as numpy.histogram: `bins` equal bins over `range`, or
    the edges given as a Symbol."""
    from . import _functions
    if isinstance(bins, Symbol):
        return _functions["_histogram"](data=a, bins=bins, **kwargs)
    return _functions["_histogram"](data=a, bin_cnt=int(bins), range=range, **kwargs)
