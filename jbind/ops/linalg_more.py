"""The rest of MXNet 1.9.1's linalg family: factorizations (potrf, gelqf, syevd), triangular
products and solves (trmm, trsm, potri), syrk, inverse, det, slogdet, sumlogdiag and the
diagonal / triangle packers (extractdiag, makediag, extracttrian, maketrian).

Inputs are batches of matrices: the last two axes are the matrix, every leading axis is a
batch axis that all inputs share. As in MXNet, only float32 and float64 are accepted.
Outputs that reduce a matrix to a number (det, slogdet, sumlogdiag) have the batch shape,
or (1,) for a single matrix, as MXNet's. Triangles are packed as MXNet packs them: a lower
triangle row by row, an upper one column by column (`offset` > 0 is upper, < 0 lower,
0 follows `lower`).
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ..base import fmt_shape
from ._base import Op, frozen, register
from .linalg import _check_dtypes


def _t(x):
    return jnp.swapaxes(x, -1, -2)


def _matrix(op, name, s, square=True):
    """Check that `s` is a batch of (square) matrices."""
    if s is None:
        return
    if len(s) < 2:
        raise ValueError(f"{name} {fmt_shape(s)} must have at least 2 dimensions (a batch of matrices)")
    if square and s[-1] and s[-2] and s[-1] != s[-2]:
        raise ValueError(f"{name} {fmt_shape(s)} must be a batch of square matrices (its last two "
                         f"dimensions equal)")


def _scalar_shape(s):
    return tuple(s[:-2]) if len(s) > 2 else (1,)


def _scalar_out(x, ndim):
    return x.reshape((1,)) if ndim == 2 else x


class _LinalgOp(Op):
    def infer_type(self, ins, outs):
        _check_dtypes(self.arguments(), ins)
        return super().infer_type(ins, outs)


class _Square(_LinalgOp):
    """One square-matrix input, one output of the input's shape."""
    def arguments(self):
        return ("A",)

    def infer_shape(self, ins, outs):
        a = ins[0] if ins[0] is not None else outs[0]
        _matrix(self, "A", a)
        return [a], [a], []


def _lower_sym(a):
    """The symmetric matrix whose lower triangle is a's (what LAPACK reads)."""
    low = jnp.tril(a)
    return low + _t(jnp.tril(a, -1))


def _read_lower(a):
    """A as LAPACK reads a symmetric matrix (its lower triangle mirrored), its gradient flowing
    to A's symmetric part: MXNet's potrf and syevd gradients are symmetric matrices."""
    sym = 0.5 * (a + _t(a))
    return sym + jax.lax.stop_gradient(_lower_sym(a) - sym)


class _Flag(int):
    """The value of a parameter named `lower` (a bool: it prints, compares and hashes as one)
    that is also callable as the op's `lower` method, whose name it shares."""

    def __new__(cls, value, op):
        f = int.__new__(cls, bool(value))
        f._op = op
        return f

    def __call__(self, ins, aux, is_train, key):
        return self._op._lower(ins, aux, is_train, key)

    def __repr__(self):
        return repr(bool(self))

    __str__ = __repr__


class _LowerParam:
    """The `lower` parameter as a data descriptor: `op.lower` reads as the flag and calls as the
    lowering (Op.lower), so the MXNet parameter keeps its name."""

    def __init__(self, default=True):
        self.default = default

    def __set_name__(self, owner, name):
        self.slot = "_param_" + name

    def __get__(self, op, owner=None):
        if op is None:
            return self.default
        return _Flag(op.__dict__[self.slot], op)

    def __set__(self, op, value):
        op.__dict__[self.slot] = bool(value)


@frozen
class _SquareFlagged(_Square):
    """potrf's and potri's `lower` parameter: which triangle holds the factor."""
    lower: bool = _LowerParam(True)
    mxnet_order = ()  # MXNet 1.9.1 takes `lower` by keyword but declares no parameter here


@register(aliases=("linalg_potrf",))
class _linalg_potrf(_SquareFlagged):
    """Cholesky factor of symmetric positive definite A: L lower triangular with A = L L^T,
    reading A's lower triangle, or with lower=False U upper triangular with A = U^T U,
    reading its upper one. The gradient is symmetric, as MXNet's."""

    def _lower(self, ins, aux, is_train, key):
        a = ins[0] if self.lower else _t(ins[0])
        low = jax.lax.linalg.cholesky(_read_lower(a), symmetrize_input=False)
        return [low if self.lower else _t(low)], aux

    def check_eager(self, outs):
        # LAPACK's potrf fails on a matrix that is not positive definite; XLA gives NaN
        if not bool(jnp.isfinite(outs[0]).all()):
            raise ValueError("the matrix is not symmetric positive definite (Cholesky factorization failed)")


@register(aliases=("linalg_potri",))
class _linalg_potri(_SquareFlagged):
    """(L L^T)^-1 from a Cholesky factor L (its lower triangle; the upper one is ignored), or
    (U^T U)^-1 from U's upper triangle with lower=False."""

    def _lower(self, ins, aux, is_train, key):
        low = jnp.tril(ins[0] if self.lower else _t(ins[0]))
        eye = jnp.broadcast_to(jnp.eye(low.shape[-1], dtype=low.dtype), low.shape)
        inv = jax.lax.linalg.triangular_solve(low, eye, left_side=True, lower=True)
        return [_t(inv) @ inv], aux


@frozen
class _Triangular(_LinalgOp):
    """trmm's and trsm's parameters and shapes: triangular A (N..., m, m), B (N..., m, n)."""
    transpose: bool = False
    rightside: bool = False
    lower: bool = _LowerParam(True)
    alpha: float = 1.0

    def arguments(self):
        return ("A", "B")

    def infer_shape(self, ins, outs):
        a, b = ins
        b = b if b is not None else outs[0]
        _matrix(self, "A", a)
        _matrix(self, "B", b, square=False)
        if a is not None and b is not None:
            if len(a) != len(b) or any(x and y and x != y for x, y in zip(a[:-2], b[:-2])):
                raise ValueError(f"A {fmt_shape(a)} and B {fmt_shape(b)} must have the same batch dimensions "
                                 f"(all but the last two)")
            n = b[-1] if self.rightside else b[-2]
            if a[-1] and n and a[-1] != n:
                raise ValueError(f"A {fmt_shape(a)} is {a[-1]}x{a[-1]} but B {fmt_shape(b)} has {n} "
                                 f"{'columns' if self.rightside else 'rows'} (rightside={self.rightside})")
        return [a, b], [b], []

    def _tri(self, a):
        return jnp.tril(a) if self.lower else jnp.triu(a)

    def _scale(self, y):
        return y if self.alpha == 1.0 else y * jnp.asarray(self.alpha, y.dtype)


@register(aliases=("linalg_trmm",))
class _linalg_trmm(_Triangular):
    """alpha * op(A) @ B (or B @ op(A) with rightside) for triangular A (its lower triangle, or
    its upper one with lower=False; op: transpose or not)."""

    def _lower(self, ins, aux, is_train, key):
        a, b = ins
        a = self._tri(a)
        if self.transpose:
            a = _t(a)
        return [self._scale(b @ a if self.rightside else a @ b)], aux


@register(aliases=("linalg_trsm",))
class _linalg_trsm(_Triangular):
    """alpha * op(A)^-1 @ B (or B @ op(A)^-1 with rightside) for triangular A."""

    def _lower(self, ins, aux, is_train, key):
        a, b = ins
        a = self._tri(a)
        y = jax.lax.linalg.triangular_solve(a, b, left_side=not self.rightside, lower=bool(self.lower),
                                            transpose_a=self.transpose)
        return [self._scale(y)], aux


@register(aliases=("linalg_syrk",))
class _linalg_syrk(_LinalgOp):
    """alpha * A @ A^T (alpha * A^T @ A with transpose)."""
    transpose: bool = False
    alpha: float = 1.0

    def infer_shape(self, ins, outs):
        a = ins[0]
        _matrix(self, "A", a, square=False)
        if a is None:
            return [a], [outs[0]], []
        n = a[-1] if self.transpose else a[-2]
        return [a], [tuple(a[:-2]) + (n, n)], []

    def lower(self, ins, aux, is_train, key):
        a = ins[0]
        y = _t(a) @ a if self.transpose else a @ _t(a)
        return [y if self.alpha == 1.0 else y * jnp.asarray(self.alpha, y.dtype)], aux


@register(aliases=("linalg_inverse",))
class _linalg_inverse(_Square):
    """The inverse of each square matrix."""

    def lower(self, ins, aux, is_train, key):
        return [jnp.linalg.inv(ins[0])], aux


class _ToScalar(_LinalgOp):
    """Square matrices in, one number per matrix out (shape: the batch, or (1,))."""
    def arguments(self):
        return ("A",)

    n_out = 1
    n_hidden = 2  # MXNet keeps the LU factorization and its pivots as hidden outputs

    def outputs(self):
        return tuple(f"output{i}" for i in range(self.n_out))

    def total_outputs(self):
        return self.n_out + self.n_hidden

    def infer_shape(self, ins, outs):
        a = ins[0]
        _matrix(self, "A", a)
        out = None if a is None else _scalar_shape(a)
        return [a], [out] * self.n_out, []


@register(aliases=("linalg_det",))
class _linalg_det(_ToScalar):
    """The determinant of each square matrix."""

    def lower(self, ins, aux, is_train, key):
        return [_scalar_out(jnp.linalg.det(ins[0]), ins[0].ndim)], aux


@register(aliases=("linalg_slogdet",))
class _linalg_slogdet(_ToScalar):
    """sign and log(|det|) of each square matrix (two outputs, in that order)."""
    n_out = 2

    def lower(self, ins, aux, is_train, key):
        sign, logdet = jnp.linalg.slogdet(ins[0])
        return [_scalar_out(jax.lax.stop_gradient(sign), ins[0].ndim), _scalar_out(logdet, ins[0].ndim)], aux


@register(aliases=("linalg_sumlogdiag",))
class _linalg_sumlogdiag(_ToScalar):
    """The sum of the logs of each square matrix's diagonal."""
    n_hidden = 0

    def outputs(self):
        return ("output",)

    def lower(self, ins, aux, is_train, key):
        d = jnp.diagonal(ins[0], axis1=-2, axis2=-1)
        return [_scalar_out(jnp.sum(jnp.log(d), axis=-1), ins[0].ndim)], aux


def _check_offset(name, n, offset, shape):
    if n and abs(offset) >= n:
        raise ValueError(f"offset {offset} is out of range for {name} {fmt_shape(shape)} "
                         f"({n}x{n} matrices)")


@register(aliases=("linalg_extractdiag",))
class _linalg_extractdiag(_LinalgOp):
    """The `offset` diagonal of each square matrix (> 0 above the main one, < 0 below)."""
    offset: int = 0

    def infer_shape(self, ins, outs):
        a = ins[0]
        _matrix(self, "A", a)
        if a is None:
            return [a], [outs[0]], []
        _check_offset("A", a[-1], self.offset, a)
        return [a], [tuple(a[:-2]) + ((a[-1] - abs(self.offset)) if a[-1] else 0,)], []

    def lower(self, ins, aux, is_train, key):
        return [jnp.diagonal(ins[0], offset=self.offset, axis1=-2, axis2=-1)], aux


def _diag_index(m, offset):
    i = np.arange(m)
    return i + max(-offset, 0), i + max(offset, 0)


def _vector(name, s):
    if s is not None and len(s) < 1:
        raise ValueError(f"{name} {fmt_shape(s)} must have at least 1 dimension")


@register(aliases=("linalg_makediag",))
class _linalg_makediag(_LinalgOp):
    """Square matrices with each vector on their `offset` diagonal, zeros elsewhere."""
    offset: int = 0

    def infer_shape(self, ins, outs):
        a = ins[0]
        _vector("A", a)
        if a is None:
            return [a], [outs[0]], []
        n = a[-1] + abs(self.offset) if a[-1] else 0
        return [a], [tuple(a[:-1]) + (n, n)], []

    def lower(self, ins, aux, is_train, key):
        a = ins[0]
        m = a.shape[-1]
        n = m + abs(self.offset)
        r, c = _diag_index(m, self.offset)
        return [jnp.zeros(a.shape[:-1] + (n, n), a.dtype).at[..., r, c].set(a)], aux


def _trian_index(n, offset, lower):
    """(rows, cols) of the packed triangle, in MXNet's order: a lower triangle row by row, an
    upper one column by column."""
    low = offset < 0 or (offset == 0 and lower)
    k = -abs(offset)
    pairs = [(i, j) for i in range(n) for j in range(0, i + k + 1)]
    r = np.array([p[0] for p in pairs], dtype=np.int64)
    c = np.array([p[1] for p in pairs], dtype=np.int64)
    return (r, c) if low else (c, r)


def _trian_size(n, offset):
    m = n - abs(offset)
    return m * (m + 1) // 2


@register(aliases=("linalg_extracttrian",))
class _linalg_extracttrian(_LinalgOp):
    """The triangle of each square matrix packed into a vector: lower (offset < 0, or 0 with
    lower=True) or upper (offset > 0, or 0 with lower=False), from the `offset` diagonal on."""
    offset: int = 0
    lower: bool = _LowerParam(True)

    def infer_shape(self, ins, outs):
        a = ins[0]
        _matrix(self, "A", a)
        if a is None:
            return [a], [outs[0]], []
        _check_offset("A", a[-1], self.offset, a)
        return [a], [tuple(a[:-2]) + (_trian_size(a[-1], self.offset) if a[-1] else 0,)], []

    def _lower(self, ins, aux, is_train, key):
        a = ins[0]
        r, c = _trian_index(a.shape[-1], self.offset, bool(self.lower))
        return [a[..., r, c]], aux


@register(aliases=("linalg_maketrian",))
class _linalg_maketrian(_LinalgOp):
    """Square matrices from packed triangles (extracttrian's inverse), zeros elsewhere."""
    offset: int = 0
    lower: bool = _LowerParam(True)

    def _n(self, length):
        m = int((math.isqrt(8 * length + 1) - 1) // 2)
        if m * (m + 1) // 2 != length:
            raise ValueError(f"the last dimension of A, {length}, is not a triangular number m*(m+1)/2")
        return m + abs(self.offset)

    def infer_shape(self, ins, outs):
        a = ins[0]
        _vector("A", a)
        if a is None or not a[-1]:
            return [a], [outs[0]], []
        n = self._n(a[-1])
        return [a], [tuple(a[:-1]) + (n, n)], []

    def _lower(self, ins, aux, is_train, key):
        a = ins[0]
        n = self._n(a.shape[-1])
        r, c = _trian_index(n, self.offset, bool(self.lower))
        return [jnp.zeros(a.shape[:-1] + (n, n), a.dtype).at[..., r, c].set(a)], aux


@register(aliases=("linalg_gelqf",))
class _linalg_gelqf(_LinalgOp):
    """LQ factorization A = L Q of each m x n matrix (m <= n): outputs Q (m x n, orthonormal rows)
    and L (m x m, lower triangular), from LAPACK's Householder QR of A^T."""

    def outputs(self):
        return ("output0", "output1")

    def infer_shape(self, ins, outs):
        a = ins[0]
        _matrix(self, "A", a, square=False)
        if a is None:
            return [a], [outs[0], outs[1]], []
        if a[-1] and a[-2] and a[-2] > a[-1]:
            raise ValueError(f"A {fmt_shape(a)} has more rows than columns; gelqf needs m <= n")
        return [a], [a, tuple(a[:-1]) + (a[-2],)], []

    def lower(self, ins, aux, is_train, key):
        q, r = jnp.linalg.qr(_t(ins[0]), mode="reduced")
        return [_t(q), _t(r)], aux


@register  # MXNet 1.9.1 has no linalg_syevd alias (mx.sym.linalg.syevd is _linalg_syevd)
class _linalg_syevd(_LinalgOp):
    """Eigendecomposition A = U^T diag(L) U of each symmetric matrix (its lower triangle read, its
    gradient symmetric): outputs U (eigenvectors as rows, each signed so its largest-magnitude
    entry is positive, as MXNet's) and L (ascending)."""

    def outputs(self):
        return ("output0", "output1")

    def infer_shape(self, ins, outs):
        a = ins[0] if ins[0] is not None else outs[0]
        _matrix(self, "A", a)
        if a is None:
            return [a], [outs[0], outs[1]], []
        return [a], [a, tuple(a[:-1])], []

    def lower(self, ins, aux, is_train, key):
        w, v = jnp.linalg.eigh(_read_lower(ins[0]), symmetrize_input=False)
        u = _t(v)
        big = jnp.take_along_axis(u, jnp.argmax(jnp.abs(u), axis=-1)[..., None], axis=-1)
        u = u * jax.lax.stop_gradient(jnp.where(big < 0, -1, 1).astype(u.dtype))
        return [u, w], aux
