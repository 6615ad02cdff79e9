"""Variational expectations against closed forms (docs/algorithms.md 4.3, Appendix A.5)."""
import math

import numpy as np
import pytest

from spacy_ag.core.expectations import digamma, expected_log_theta, stick_expectations

EULER = 0.5772156649015329


def test_digamma_closed_forms():
    assert digamma(1.0) == pytest.approx(-EULER, abs=1e-13)
    assert digamma(0.5) == pytest.approx(-EULER - 2 * math.log(2), abs=1e-13)
    for n in (2, 3, 7, 50):  # psi(n) = H_{n-1} - gamma
        assert digamma(float(n)) == pytest.approx(sum(1 / k for k in range(1, n)) - EULER, abs=1e-12)


def test_digamma_recurrence_and_small_arguments():
    rng = np.random.default_rng(0)
    for x in rng.uniform(1e-3, 30, size=200):
        assert digamma(x + 1) == pytest.approx(digamma(x) + 1 / x, rel=1e-12, abs=1e-12)
    # psi(x) -> -1/x as x -> 0
    assert digamma(1e-8) == pytest.approx(-1e8 - EULER, rel=1e-12)
    with pytest.raises(ValueError):
        digamma(0.0)


def test_stick_expectations_appendix_a5():
    log_pi = np.zeros(2)
    log_rho = stick_expectations(np.array([2.0, 1.0]), np.array([3.0, 4.0]), log_pi)
    assert log_pi[0] == pytest.approx(-1.083333, abs=1e-6)
    assert log_pi[1] == pytest.approx(-2.666667, abs=1e-6)
    assert log_rho == pytest.approx(-0.833333, abs=1e-6)
    assert np.exp(log_pi).sum() + math.exp(log_rho) == pytest.approx(0.842547, abs=1e-6)


def test_expected_log_theta_is_eq_8_per_parent():
    gamma = np.array([1.0, 3.0, 2.5, 0.5, 4.0])
    parent = np.array([0, 0, 1, 1, 1], dtype=np.int32)
    out = np.zeros(5)
    expected_log_theta(gamma, parent, 2, out)
    assert out[0] == pytest.approx(digamma(1.0) - digamma(4.0))
    assert out[4] == pytest.approx(digamma(4.0) - digamma(7.0))
    # sub-normalised by Jensen's inequality, and more so for small pseudo-counts
    assert np.exp(out[:2]).sum() < 1 and np.exp(out[2:]).sum() < 1


@pytest.mark.parametrize("threads", [1, 2])
def test_stick_expectations_of_a_long_grammaton_equal_the_sequential_sum(threads):
    """Past 512 entries the digammas run on the threads, in blocks of 8 (the last one here short); the
    result is the stick-order sum, exactly."""
    import numba

    if threads > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("numba has fewer threads here")
    rng, n = np.random.default_rng(0), 3003
    nu1, nu2 = rng.uniform(0.1, 50.0, n), rng.uniform(0.1, 5000.0, n)
    expected, rest = np.empty(n), 0.0
    for i in range(n):
        total = digamma(nu1[i] + nu2[i])
        expected[i] = digamma(nu1[i]) - total + rest
        rest += digamma(nu2[i]) - total
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        log_pi = np.empty(n)
        log_rho = stick_expectations(nu1, nu2, log_pi)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(log_pi, expected) and log_rho == rest
