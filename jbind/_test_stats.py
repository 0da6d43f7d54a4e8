"""mx.test_utils' statistical checks of random number generators (see test_utils.py).

A generator is a function `generator(n)` returning n i.i.d. samples. The chi-square p-value
is computed as scipy 1.x's `chisquare` did when MXNet 1.9.1 was released: the statistic
sum((observed - expected)^2 / expected) against a chi-square law with k - 1 degrees of
freedom, without the check newer scipy adds that observed and expected sum to the same
total (MXNet's expected counts are truncated to integers, so they never quite do).
"""
from __future__ import annotations

import numpy as np

from .base import MXNetError


def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """`nbuckets` buckets of equal probability for a continuous law given its quantile
    function `ppf`: ([(ppf(i / n), ppf((i + 1) / n)) for each i], [1 / n] * n)."""
    if not nbuckets > 0:
        raise AssertionError(f"gen_buckets_probs_with_ppf: nbuckets must be positive, got {nbuckets}")
    probs = [1.0 / nbuckets for _ in range(nbuckets)]
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets))) for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu, sigma, nsamples=1000000) -> bool:
    """Whether the mean of `nsamples` draws lies within mu +- 3 sigma / sqrt(nsamples)."""
    mean = np.array(generator(nsamples)).mean()
    bound = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - bound < mean < mu + bound)


def var_check(generator, sigma, nsamples=1000000) -> bool:
    """Whether the sample variance (ddof 1) of `nsamples` draws lies within
    sigma^2 +- 3 sqrt(2 sigma^4 / (nsamples - 1))."""
    var = np.array(generator(nsamples)).var(ddof=1)
    bound = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - bound < var < sigma ** 2 + bound)


def _chi2_sf(stat: float, dof: int) -> float:
    """P(X > stat) for X chi-square with `dof` degrees of freedom."""
    try:
        from scipy.special import chdtrc
    except ImportError as e:  # scipy comes with jax; a bare install may still lack it
        raise MXNetError("chi_square_check needs scipy (pip install scipy) for the chi-square p-value") from e
    return float(chdtrc(dof, stat))


def _bucket_counts(samples, buckets):
    """Observed count per bucket. Continuous buckets (pairs (low, high), ascending, not
    overlapping): a sample at or above a bucket's high edge and below the next bucket's
    high edge counts in the next bucket, one below the first low edge in the first, one at
    or above the last high edge in none. Discrete buckets (values): exact matches."""
    samples = np.asarray(samples).reshape(-1)
    if isinstance(buckets[0], (list, tuple)):
        edges = np.zeros(2 * len(buckets), dtype=np.float32)
        for i, (low, high) in enumerate(buckets):
            if not low <= high:
                raise AssertionError(f"chi_square_check: bucket {i} {buckets[i]} has low > high")
            if i < len(buckets) - 1 and not high <= buckets[i + 1][0]:
                raise AssertionError(f"chi_square_check: buckets {i} and {i + 1} overlap or are out of order")
            edges[2 * i], edges[2 * i + 1] = low, high
        ids = np.searchsorted(edges, samples, side="right") // 2
        return np.bincount(ids, minlength=len(buckets) + 1)[:len(buckets)].astype(np.int64)
    return np.array([(samples == b).sum() for b in buckets], dtype=np.int64)


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Pearson's chi-square test of `nsamples` draws of `generator` against the bucket
    probabilities `probs`. `buckets`: a list of (low, high) ranges for a continuous law or a
    list of values for a discrete one. Returns (p, observed counts, expected counts), the
    expected counts being nsamples * probs truncated to integers; p above ~0.05 means the
    draws agree with the law."""
    if not isinstance(buckets, list):
        raise AssertionError(f"chi_square_check: buckets must be a list, got {type(buckets).__name__}")
    if len(probs) != len(buckets):
        raise AssertionError(f"chi_square_check: {len(probs)} probabilities for {len(buckets)} buckets")
    samples = generator(nsamples)
    expected = (nsamples * np.array(probs, dtype=np.float32)).astype(np.int32)
    observed = _bucket_counts(samples, buckets)
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = float(np.sum((observed - expected.astype(np.float64)) ** 2 / expected))
    return _chi2_sf(stat, len(buckets) - 1), observed, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2, alpha=0.05):
    """Run `chi_square_check` `nrepeat` times; raise AssertionError (with every p-value and
    count) unless at least `nrepeat * success_rate` of the p-values exceed `alpha`.
    Returns the p-values."""
    results = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    pvalues = [r[0] for r in results]
    if (np.array(pvalues) > alpha).sum() < nrepeat * success_rate:
        raise AssertionError(
            "Generator test fails, Chi-square p=%s, obs_freq=%s, expected_freq=%s.\nbuckets=%s, probs=%s"
            % (pvalues, [r[1] for r in results], [r[2] for r in results], buckets, probs))
    return pvalues
