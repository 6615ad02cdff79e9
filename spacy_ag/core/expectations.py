"""Variational expectations of the online and batch variational algorithms (docs/algorithms.md 4.3).

The first piece of the variational engine (issue 4): the approximating PCFG
of the variational algorithm has the same shape as MCMC's G', with weights
exp(E_q[log theta]) for rules and exp(E_q[log pi]) for grammaton entries, so
these functions produce exactly the `rho` and cache weights that the shared
inside and sampling kernels consume. numba has lgamma but no digamma, hence
the small routine below (6, Special functions).
"""
import math

import numpy as np
from numba import prange

from ..errors import Errors
from ..kernel_environment import kernel

#: A kernel can raise only a message known when it compiles: the coded text, read once here.
DIGAMMA_DOMAIN = Errors.E554


@kernel(cache=True)
def digamma(x):
    """psi(x) for x > 0: shift up with psi(x) = psi(x + 1) - 1/x, then the asymptotic series
    (from x >= 12 its first omitted term is below 1e-14)."""
    if not x > 0.0:
        raise ValueError(DIGAMMA_DOMAIN)
    shift = 0.0
    while x < 12.0:
        shift -= 1.0 / x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 / 132))))
    return shift + math.log(x) - 0.5 * inv - series


@kernel(cache=True)
def expected_log_theta(gamma, rule_parent, n_nt, out):
    """E_q[log theta_r] = psi(gamma_r) - psi(sum of gamma over r's parent) (Eq. 8).

    Shapes: gamma (R,) float64; rule_parent (R,) int32; out (R,) float64, written."""
    totals = np.zeros(n_nt)
    for r in range(gamma.shape[0]):
        totals[rule_parent[r]] += gamma[r]
    for r in range(gamma.shape[0]):
        out[r] = digamma(gamma[r]) - digamma(totals[rule_parent[r]])


@kernel(cache=True, inline="always")
def _stick_terms(nu1, nu2, log_pi, log_rest, i):
    """E_q[log V_i] and E_q[log(1 - V_i)] of stick i from its Beta(nu1, nu2) (one entry of `stick_terms`).

    Shapes: nu1, nu2, log_pi, log_rest (m,) float64 (as `stick_terms`)."""
    total = digamma(nu1[i] + nu2[i])
    log_pi[i] = digamma(nu1[i]) - total
    log_rest[i] = digamma(nu2[i]) - total


#: Interleaved slices of the sticks for the threads, in blocks of STICK_BLOCK sticks: a digamma of a
#: small argument costs up to twelve times one of a large, and the entries with large counts lead
#: each stick order, so halves in order would leave one thread most of the work. In the online
#: learner's `minibatches` kernel each slice goes to a thread on its own (numba's chunk size is 1
#: there, for the E-step): slices of single sticks would cost more in hand-offs, and both threads
#: would write to the same cache lines (docs/performance.md).
STICK_SLICES = 16
STICK_BLOCK = 8


@kernel(cache=True, parallel=True)
def stick_terms(nu1, nu2, log_pi, log_rest):
    """E_q[log V_i] into log_pi and E_q[log(1 - V_i)] into log_rest, for every i.

    The digammas, three per entry and most of the online learner's per-minibatch time on large
    grammatons, run in parallel (the same numbers on any number of threads).

    Shapes: nu1, nu2 (m,) float64, the sticks' Beta parameters; log_pi, log_rest (m,) float64, written."""
    m = nu1.shape[0]
    if m >= 512:  # below, a thread hand-off costs more than it saves
        n_blocks = (m + STICK_BLOCK - 1) // STICK_BLOCK
        for first in prange(STICK_SLICES):
            for block in range(first, n_blocks, STICK_SLICES):
                for i in range(block * STICK_BLOCK, min(m, (block + 1) * STICK_BLOCK)):
                    _stick_terms(nu1, nu2, log_pi, log_rest, i)
    else:
        for i in range(m):
            _stick_terms(nu1, nu2, log_pi, log_rest, i)


@kernel(cache=True)
def stick_expectations(nu1, nu2, log_pi):
    """E_q[log pi_i] of every listed entry (Eq. 7); returns E_q[log rho], the base-draw mass.

    The sums over earlier sticks run in stick order after `stick_terms`.

    Shapes: nu1, nu2 (m,) float64 in stick order; log_pi (m,) float64, written."""
    log_rest = np.empty(nu1.shape[0])  # E_q[log(1 - V_i)]
    stick_terms(nu1, nu2, log_pi, log_rest)
    m = nu1.shape[0]
    rest = 0.0  # sum over earlier sticks of E_q[log(1 - V_j)]
    for i in range(m):
        log_pi[i] += rest
        rest += log_rest[i]
    return rest
