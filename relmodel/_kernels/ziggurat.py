"""Tables of the 256-layer ziggurat for the standard exponential (Marsaglia and
Tsang, J. Stat. Softw. 5(8), 2000), computed here from the layer recurrence so
both kernel backends read the same bits.

Layer i >= 1 is the rectangle [0, x[i]) x [f(x[i]), f(x[i+1])] with
f(x) = exp(-x), x[1] = R and x[256] = 0; every layer, and the base layer
[0, R) x [0, f(R)] with the tail beyond R, has area V. Layer 0's pseudo-width
x[0] = V / f(R) lets one uniform point cover the base rectangle and the tail.

A 64-bit word w gives the layer i = w & 0xFF and a 53-bit integer m = w >> 11
(disjoint bits); x = m * WIDTH[i] is accepted at once when m < ACCEPT[i] (97.8%
of draws), else the tail (layer 0: R plus a fresh exponential) or the wedge
(a second word decides against f) is taken.
"""

import math

import numpy as np

N_LAYERS = 256
R = 7.69711747013104972  # right edge of the base layer
V = 3.949659822581572e-3  # area of each layer


def _edges():
    x = [V / math.exp(-R), R]
    for _ in range(1, N_LAYERS - 1):
        x.append(-math.log(V / x[-1] + math.exp(-x[-1])))
    x.append(0.0)  # the recurrence reaches 0 up to rounding; the top layer's apex is exactly 0
    return np.array(x)


EDGES = _edges()  # x[0] .. x[256]
WIDTH = EDGES[:N_LAYERS] * 2.0**-53  # x[i] per unit of m
ACCEPT = np.array([int(EDGES[i + 1] / EDGES[i] * 2.0**53) for i in range(N_LAYERS)], dtype=np.uint64)
DENSITY = np.exp(-EDGES)  # f(x[i]) for i = 0 .. 256
INV_FACTORIAL = np.array([1.0 / math.factorial(n) for n in range(13)])  # Taylor terms of `rng_numba.exp_neg`
WEDGE_MARGIN = 1e-12  # moves the lines of `_wedge_bounds` out


def _wedge_bounds():
    """Per layer i >= 1, lines below and above f on the layer's wedge [x[i+1], x[i]]:
    f is convex, so the chord lies above it and the tangent of the same slope
    below; either decides most wedge tests with no exp (`lanes_numba`). Each
    line is moved out by WEDGE_MARGIN, far more than the rounding of the test
    and of `rng_numba.exp_neg`, so a decision by the lines is the exact test's."""
    slope = np.zeros(N_LAYERS)
    above = np.full(N_LAYERS, -np.inf)  # layer 0 has no wedge: never decided by the lines
    below = np.full(N_LAYERS, -np.inf)
    for i in range(1, N_LAYERS):
        a, b = EDGES[i + 1], EDGES[i]
        s = (DENSITY[i + 1] - DENSITY[i]) / (b - a)
        slope[i] = s
        above[i] = DENSITY[i] + s * b + WEDGE_MARGIN  # chord: f(b) + s (b - x)
        below[i] = s * (1.0 - math.log(s)) - WEDGE_MARGIN  # tangent at x = -log(s), where f' = -s
    return slope, above, below


WEDGE_SLOPE, WEDGE_ABOVE, WEDGE_BELOW = _wedge_bounds()
