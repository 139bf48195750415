"""Independent reference numbers for `relmodel._fit`, written apart from the package.

Nothing here imports relmodel, and nothing reuses its derivations: the
censored Weibull log-likelihood is the textbook sum of log-densities and
log-survivals, evaluated in mpmath at ``DPS`` digits; its gradient and Hessian
are numerical derivatives (``mpmath.diff``, finite differences carried out at
raised precision), never the analytic formulas of the package; the MLE comes
from a Nelder-Mead search (scipy, double precision) polished by Newton steps
on those numerical derivatives; profile likelihoods maximise over the nuisance
parameter numerically. The Poisson (Garwood) interval is found by bisection on
the Poisson tail sums themselves, not through chi-square or gamma quantiles.

Parameters are ``a = log shape`` and ``b = log scale`` throughout, as in the
package's intervals; the normal quantile is ``sqrt(2) erfinv(confidence)`` and
the chi-square(1) quantile is its square.
"""

from __future__ import annotations

import math

import mpmath as mp

DPS = 40  # working digits: far beyond double precision, so the reference error is negligible


# --------------------------------------------------------------------------- Weibull


def weibull_loglik(a, b, times, observed):
    """Censored Weibull log-likelihood at shape ``e^a``, scale ``e^b`` (mpmath numbers).

    A failure at ``t`` contributes ``log f(t) = log k - log s + (k - 1) log(t / s) - (t / s)^k``;
    a time censored at ``t`` contributes ``log S(t) = -(t / s)^k``.
    """
    shape, scale = mp.exp(a), mp.exp(b)
    total = mp.mpf(0)
    for t, failed in zip(times, observed):
        ratio = mp.mpf(t) / scale
        total -= ratio**shape
        if failed:
            total += mp.log(shape) - mp.log(scale) + (shape - 1) * mp.log(ratio)
    return total


def _float_negloglik(params, times, observed, unit):
    """The same log-likelihood in floats (times over `unit`), negated: only a start for Newton."""
    a, b = params
    if not (-20 < a < 20 and -50 < b < 50):
        return math.inf
    shape, scale = math.exp(a), math.exp(b)
    total = 0.0
    for t, failed in zip(times, observed):
        ratio = t / unit / scale
        try:
            total -= ratio**shape
        except OverflowError:
            return math.inf
        if failed:
            total += a - b + (shape - 1) * math.log(ratio)
    return -total


def weibull_mle(times, observed):
    """(a, b) = (log shape, log scale) maximising `weibull_loglik`, as mpf, and the log-likelihood there."""
    from scipy import optimize

    # Nelder-Mead in times over their mean, for a start within ~1e-6; then Newton at DPS digits.
    unit = sum(times) / len(times)
    start = optimize.minimize(_float_negloglik, [0.0, 0.0], args=(times, observed, unit), method="Nelder-Mead",
                              options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 20000, "maxfev": 40000})
    with mp.workdps(DPS):
        point = mp.matrix([mp.mpf(start.x[0]), mp.mpf(start.x[1]) + mp.log(unit)])

        def loglik(a, b):
            return weibull_loglik(a, b, times, observed)

        value = loglik(point[0], point[1])
        for _ in range(60):
            gradient, hessian = _gradient_hessian(loglik, point)
            step = mp.lu_solve(hessian, -gradient)
            # Newton near a maximum; halve the step if it would lower the likelihood.
            for _ in range(60):
                trial = point + step
                trial_value = loglik(trial[0], trial[1])
                if trial_value >= value - mp.mpf(10) ** (-DPS + 8):
                    break
                step /= 2
            point, value = trial, trial_value
            if mp.norm(step, mp.inf) < mp.mpf(10) ** (-(DPS - 12)):
                break
        else:
            raise RuntimeError("reference Newton iteration did not converge")
        return point[0], point[1], value


def _gradient_hessian(loglik, point):
    a, b = point[0], point[1]
    gradient = mp.matrix([mp.diff(loglik, (a, b), (1, 0)), mp.diff(loglik, (a, b), (0, 1))])
    cross = mp.diff(loglik, (a, b), (1, 1))
    hessian = mp.matrix([[mp.diff(loglik, (a, b), (2, 0)), cross], [cross, mp.diff(loglik, (a, b), (0, 2))]])
    return gradient, hessian


def _root_of_falling(function, guess, step=0.5):
    """Root of a function that is positive left of it and negative right of it: bracket, then Anderson-Bjorck."""
    low = high = guess
    while function(low) <= 0:
        low -= step
        step *= 2
    while function(high) >= 0:
        high += step
        step *= 2
    if low == high:
        return low
    return mp.findroot(function, (low, high), solver="anderson")


def exponential_loglik(times, observed):
    """Maximum over the scale of `weibull_loglik` with the shape held at 1 (a float)."""
    with mp.workdps(DPS):
        def slope(b):
            return mp.diff(lambda bb: weibull_loglik(0, bb, times, observed), b)

        best = _root_of_falling(slope, mp.log(mp.mpf(sum(times)) / len(times)))
        return float(weibull_loglik(0, best, times, observed))


def _one_argument(function, *bound):
    """function(x, *bound) as a function of x alone."""
    return lambda x: function(x, *bound)


def normal_quantile(confidence):
    """z with P(|N(0, 1)| <= z) = confidence."""
    return mp.sqrt(2) * mp.erfinv(mp.mpf(confidence))


def weibull_wald(times, observed, confidence=0.95):
    """MLE and Wald intervals on (log shape, log scale) from the numerical observed information.

    Returns a dict of floats: shape, scale, shape_ci, scale_ci, shape_se_log,
    scale_se_log, loglik.
    """
    a, b, value = weibull_mle(times, observed)
    with mp.workdps(DPS):
        _, hessian = _gradient_hessian(lambda x, y: weibull_loglik(x, y, times, observed), mp.matrix([a, b]))
        covariance = (-hessian) ** -1
        se_a, se_b = mp.sqrt(covariance[0, 0]), mp.sqrt(covariance[1, 1])
        z = normal_quantile(confidence)
        return {"shape": float(mp.exp(a)), "scale": float(mp.exp(b)),
                "shape_ci": (float(mp.exp(a - z * se_a)), float(mp.exp(a + z * se_a))),
                "scale_ci": (float(mp.exp(b - z * se_b)), float(mp.exp(b + z * se_b))),
                "shape_se_log": float(se_a), "scale_se_log": float(se_b), "loglik": float(value)}


def weibull_profile(times, observed, confidence=0.95):
    """MLE and profile-likelihood intervals: where max over the other parameter drops chi2_1 / 2.

    Returns a dict of floats: shape, scale, shape_ci, scale_ci.
    """
    a_hat, b_hat, best = weibull_mle(times, observed)
    wald = weibull_wald(times, observed, confidence)
    with mp.workdps(DPS):
        drop = normal_quantile(confidence) ** 2 / 2

        def loglik(a, b):
            return weibull_loglik(a, b, times, observed)

        def profile(fixed_index, value, guess):
            # Maximise over the other parameter: the root of its numerical partial derivative,
            # which changes sign once (the likelihood is unimodal in either parameter alone).
            if fixed_index == 0:
                def slope(y):
                    return mp.diff(lambda yy: loglik(value, yy), y)
            else:
                def slope(x):
                    return mp.diff(lambda xx: loglik(xx, value), x)
            other = _root_of_falling(slope, guess)
            return (loglik(value, other) if fixed_index == 0 else loglik(other, value)), other

        out = {"shape": float(mp.exp(a_hat)), "scale": float(mp.exp(b_hat))}
        for name, index, centre, nuisance, wald_ci in (("shape_ci", 0, a_hat, b_hat, wald["shape_ci"]),
                                                       ("scale_ci", 1, b_hat, a_hat, wald["scale_ci"])):
            ends = []
            for side, wald_end in ((-1, wald_ci[0]), (1, wald_ci[1])):
                # Bracket the crossing: from the MLE outwards in steps of the Wald half-width.
                half = abs(mp.log(wald_end) - centre)
                near, guess = centre, nuisance
                far = centre + side * half
                for _ in range(60):
                    value, guess_far = profile(index, far, guess)
                    if value < best - drop:
                        break
                    near, guess = far, guess_far
                    far = far + side * half
                else:
                    raise RuntimeError("reference profile never dropped below the threshold")
                # One argument only: findroot tries f(*x0) to detect a multidimensional f.
                root = mp.findroot(_one_argument(lambda p, i, g: profile(i, p, g)[0] - (best - drop), index, guess),
                                   (near, far), solver="anderson")
                ends.append(float(mp.exp(root)))
            out[name] = tuple(sorted(ends))
        return out


# --------------------------------------------------------------------------- Poisson


def _poisson_cdf(count, mean):
    """P(X <= count) for X ~ Poisson(mean), summed term by term."""
    term = mp.exp(-mean)
    total = term
    for j in range(1, count + 1):
        term = term * mean / j
        total += term
    return total


def _bisect(function, low, high, iterations=200):
    """Root of an increasing `function` with function(low) < 0 < function(high), by bisection."""
    for _ in range(iterations):
        mid = (low + high) / 2
        if function(mid) < 0:
            low = mid
        else:
            high = mid
        if high - low <= abs(high) * mp.mpf(10) ** -20:  # ten digits beyond any tolerance used
            break
    return (low + high) / 2


def garwood_interval(count, exposure, confidence=0.95):
    """Exact Poisson rate interval: means with P(X >= count) = alpha/2 and P(X <= count) = alpha/2."""
    with mp.workdps(DPS):
        tail = (1 - mp.mpf(confidence)) / 2
        high = mp.mpf(count + 10)
        while _poisson_cdf(count, high) > tail:  # grow the bracket until the upper tail is reached
            high *= 2
        # upper: P(X <= count; mu) falls with mu, so tail - cdf rises
        upper = _bisect(lambda mu: tail - _poisson_cdf(count, mu), mp.mpf(0), high)
        if count == 0:
            lower = mp.mpf(0)
        else:  # lower: P(X >= count; mu) = 1 - P(X <= count - 1; mu) rises with mu
            lower = _bisect(lambda mu: (1 - _poisson_cdf(count - 1, mu)) - tail, mp.mpf(0), high)
        return float(lower / exposure), float(upper / exposure)
