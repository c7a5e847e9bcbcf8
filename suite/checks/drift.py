"""The signed-drift rule: across a test's passed cases, an output's mean signed error (in units of its bound) fitted
against the reduction length; a one-signed error that grows with the length fails the test at its end.

The |error| bound of suite/checks/tolerance.py judges each case alone, and a rounding that is biased one way (products
or an accumulator truncated toward zero, a sum rounded down) stays inside it on short reductions: its error grows like
K while the bound grows like sqrt(K) or not at all, so the kernel passes every drawn case and fails on longer ones.
Round-to-nearest errors have a mean near 0 whatever the length; this rule asks of each output, in each of two
directions (toward +inf: signed; away from zero: signed by the reference), whether the mean is far from 0 and grows.

Per case the harness gives each output's sums over its finite elements (tolerance.OutputCheck.drift). A test fails
where, for an output and a direction, all of these hold (the thresholds below, docs/checks.md "Signed drift"):

- at least FEWEST_CASES passed cases with a reduction length of 2 or more, at FEWEST_LENGTHS different lengths, the
  longest at least LENGTH_SPREAD times the shortest (a line through fewer proves nothing);
- the least-squares line of the cases' means (each case weighed by its elements, at most CASE_WEIGHT: one large case
  does not outvote the others) reaches DRIFT of the bound at the longest length;
- it grows: the line rises by at least DRIFT / 2 of the bound from the shortest length to the longest, the same way,
  and starts no further than DRIFT / 2 the other way (a line through 0 from one side to the other is not one-signed);
- it is clear: were the cases' means scattered around 0, a line so far from 0 at the longest length would have a
  chance below UNLIKELY, and one rising so much below UNLIKELY_RISE (Student's t over the line's residuals);
- it is one-signed: at least ONE_SIGNED of the cases at the longer half of the lengths have a mean of that sign.

Where the line over every case does not fail, it is judged again without the one case farthest from it, and as a step
(``_step``: the longer half, or the longest quarter, against the shorter cases).

A right kernel's per-element error is mostly its output's rounding, at most a quarter of the bound (u_out against
the bound's safety 4 * u_out): a mean of a quarter of the bound takes every element rounded the same way at full
size, and then the line must also rise and hold its sign over the longer cases. A bias that does not grow with the
length (an approximate rsqrt, XF32's truncated operands: a constant share of each product) is not this rule's.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

FEWEST_CASES = 8
FEWEST_LENGTHS = 3
LENGTH_SPREAD = 2.0
DRIFT = 0.25
ONE_SIGNED = 0.8
CASE_WEIGHT = 16
# How unlikely, were the cases' means scattered around 0 (Student's t over the line's residuals, one-sided), the line's
# value at the longest length must be, and its rise from the shortest: with few cases the scatter is known poorly
# and the t distribution's tails are wide, so few cases need a clearer line.
UNLIKELY = 1e-6
UNLIKELY_RISE = 1e-3
STEP_SIDE = 4  # the fewest cases on each side of a step (_step)

DIRECTIONS = (("signed", "toward -inf", "toward +inf"), ("away", "toward zero", "away from zero"))


def points(checks, passed_state: dict[str, list]) -> None:
    """Each output check's point (length, elements, signed sum, away sum) added to ``passed_state`` (per output);
    outputs without a reduction (length 1) or without a finite element are left out."""
    for check in checks:
        signed, away, counted = check.drift
        if counted and check.reduction_length >= 2:
            passed_state.setdefault(check.output, []).append([int(check.reduction_length), int(counted),
                                                              float(signed), float(away)])


@dataclass
class Line:
    """A weighted least-squares line y = a + b * x, and the standard errors that its points' scatter gives."""

    a: float
    b: float
    mx: float
    total: float
    sxx: float
    scatter: float  # the residuals' variance per unit weight

    def at(self, x: float) -> float:
        return self.a + self.b * x

    def error_at(self, x: float) -> float:
        """The standard error of the line's value at ``x``."""
        return math.sqrt(self.scatter * (1 / self.total + (x - self.mx) ** 2 / self.sxx))

    def error_of_rise(self, span: float) -> float:
        """The standard error of its rise over ``span``."""
        return math.sqrt(self.scatter / self.sxx) * span


def fit(xs: list[float], ys: list[float], ws: list[float]) -> Line:
    """Weighted least squares (a point of weight w taken to scatter like 1 / w), through at least 3 points at 2 or more
    different x."""
    total = sum(ws)
    mx = sum(w * x for w, x in zip(ws, xs, strict=True)) / total
    my = sum(w * y for w, y in zip(ws, ys, strict=True)) / total
    sxx = sum(w * (x - mx) ** 2 for w, x in zip(ws, xs, strict=True))
    sxy = sum(w * (x - mx) * (y - my) for w, x, y in zip(ws, xs, ys, strict=True))
    b = sxy / sxx
    a = my - b * mx
    scatter = sum(w * (y - a - b * x) ** 2 for w, x, y in zip(ws, xs, ys, strict=True)) / (len(xs) - 2)
    return Line(a, b, mx, total, sxx, scatter)


def t_tail(t: float, dof: int) -> float:
    """P(T > t) for Student's t with ``dof`` (a whole number >= 1) degrees of freedom: the closed form for whole
    degrees of freedom (Abramowitz and Stegun 26.7.3-4)."""
    if t <= 0:
        return 1.0 - t_tail(-t, dof) if t < 0 else 0.5
    theta = math.atan(t / math.sqrt(dof))
    c2, term = math.cos(theta) ** 2, 1.0
    if dof % 2:
        total, k = 0.0, 2
        if dof > 1:
            total = 1.0
            while k <= dof - 3 + 0.5:
                term *= c2 * k / (k + 1)
                total += term
                k += 2
        inside = 2 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total) if dof > 1 else 2 * theta / math.pi
    else:
        total, k = 1.0, 1
        while k <= dof - 3 + 0.5:
            term *= c2 * k / (k + 1)
            total += term
            k += 2
        inside = math.sin(theta) * total
    return max(0.0, (1.0 - inside) / 2)


def judge_output(name: str, cases: list[list]) -> str | None:
    """What drifts in one output's points (None: nothing, or too few to tell): judged over every case, and again
    without the one case farthest from the line (one case exact where the others drift, say, widens the scatter)."""
    lengths = sorted({int(c[0]) for c in cases})
    if len(cases) < FEWEST_CASES or len(lengths) < FEWEST_LENGTHS or lengths[-1] < LENGTH_SPREAD * lengths[0]:
        return None
    for column, (key, low, high) in enumerate(DIRECTIONS, start=2):
        points = [(float(c[0]), c[column] / c[1], float(min(c[1], CASE_WEIGHT))) for c in cases]
        if found := _one_way(points, key, low, high):
            return f"output {name!r}: {found}"
        if len(points) > FEWEST_CASES:
            line = fit(*zip(*points, strict=True))
            far = max(range(len(points)), key=lambda i: points[i][2] * (points[i][1] - line.at(points[i][0])) ** 2)
            rest = points[:far] + points[far + 1:]
            if len({x for x, _, _ in rest}) >= FEWEST_LENGTHS and (found := _one_way(rest, key, low, high)):
                x, y, _ = points[far]
                return f"output {name!r}: {found}, leaving out the case farthest from the line ({y:+.3f} at length {x:g})"
        if found := _step(points, key, low, high):
            return f"output {name!r}: {found}"
    return None


def _mean(points: list[tuple[float, float, float]]) -> tuple[float, float, int]:
    """The weighted mean of the points' means, its variance (from their scatter), and how many they were."""
    total = sum(w for _, _, w in points)
    mean = sum(w * y for _, y, w in points) / total
    n = len(points)
    spread = sum(w * w * (y - mean) ** 2 for _, y, w in points) / total**2 * n / max(n - 1, 1)
    return mean, spread, n


def _step(points: list[tuple[float, float, float]], key: str, low: str, high: str) -> str | None:
    """A bias that starts at some length rather than growing along a line (a path taken only on long reductions): the
    cases at the longer half, or the longest quarter, of the lengths against the shorter ones, held to the same
    thresholds (a two-sample t, each side at least STEP_SIDE cases, the chances doubled for the two splits)."""
    xs = sorted(x for x, _, _ in points)
    for at in (xs[len(xs) // 2], xs[(3 * len(xs)) // 4]):
        longer = [p for p in points if p[0] >= at]
        shorter = [p for p in points if p[0] < at]
        if len(longer) < STEP_SIDE or len(shorter) < STEP_SIDE or at < LENGTH_SPREAD * xs[0]:
            continue
        (up, up_var, n_up), (down, down_var, n_down) = _mean(longer), _mean(shorter)
        sign = 1.0 if up > 0 else -1.0
        if sign * up < DRIFT or sign * (up - down) < DRIFT / 2 or sign * down < -DRIFT / 2:
            continue
        same = sum(1 for _, y, _ in longer if sign * y > 0)
        if same < ONE_SIGNED * len(longer):
            continue
        # Welch's t and its degrees of freedom (at least 1, rounded down)
        joint = max(up_var + down_var, 1e-300)
        dof = joint**2 / max(up_var**2 / max(n_up - 1, 1) + down_var**2 / max(n_down - 1, 1), 1e-300)
        chance = 2 * t_tail(sign * up / max(math.sqrt(up_var), 1e-300), n_up - 1)
        chance_rise = 2 * t_tail(sign * (up - down) / math.sqrt(joint), max(1, int(dof)))
        if chance > UNLIKELY or chance_rise > UNLIKELY_RISE:
            continue
        way = high if sign > 0 else low
        return (f"its error drifts {way} from length {at:g} on ({key} mean error over the bound: {up:+.3f} over the "
                f"{n_up} passed cases at lengths >= {at:g}, {down:+.3f} over the {n_down} shorter ones, whose chance "
                f"were the means scattered around 0 is {max(chance, 1e-16):.0e}{' or less' if chance < 1e-16 else ''}"
                f"; {same} of the {n_up} {way})")
    return None


def _one_way(points: list[tuple[float, float, float]], key: str, low: str, high: str) -> str | None:
    """The rule over (length, mean, weight) points in one direction: what drifts, or None."""
    xs, ys, ws = (list(v) for v in zip(*points, strict=True))
    shortest, longest = min(xs), max(xs)
    if longest < LENGTH_SPREAD * shortest:
        return None
    line = fit(xs, ys, ws)
    first, last = line.at(shortest), line.at(longest)
    sign = 1.0 if last > 0 else -1.0
    if sign * last < DRIFT or sign * (last - first) < DRIFT / 2 or sign * first < -DRIFT / 2:
        return None
    dof = len(xs) - 2
    chance = t_tail(sign * last / max(line.error_at(longest), 1e-300), dof)
    chance_rise = t_tail(sign * (last - first) / max(line.error_of_rise(longest - shortest), 1e-300), dof)
    if chance > UNLIKELY or chance_rise > UNLIKELY_RISE:
        return None
    middle = statistics.median(xs)
    longer = [y for x, y in zip(xs, ys, strict=True) if x >= middle]
    same = sum(1 for y in longer if sign * y > 0)
    if same < ONE_SIGNED * len(longer):
        return None
    way = high if sign > 0 else low
    return (f"its error drifts {way} as the reduction grows ({key} mean error over the bound: {first:+.3f} at length "
            f"{shortest:g}, {last:+.3f} at length {longest:g}, a least-squares line over {len(xs)} passed cases, "
            f"whose chance were the means scattered around 0 is {max(chance, 1e-16):.0e}"
            f"{' or less' if chance < 1e-16 else ''}; {same} of the {len(longer)} cases at lengths >= {middle:g} "
            f"{way})")


def judge(spec_name: str, dtype: str, by_output: dict[str, list]) -> str | None:
    """The signed-drift rule over a test's passed cases (the module's docstring): why it fails, or None."""
    found = [message for name, cases in sorted(by_output.items()) if (message := judge_output(name, cases))]
    if not found:
        return None
    return (f"{spec_name}[{dtype}]: a one-signed error that grows with the reduction length, within the |error| bound "
            f"on every case but biased: " + "; ".join(found) + f". Round-to-nearest errors average near 0 at any "
            f"length; this is a rounding biased one way (products or an accumulator truncated toward zero, sums "
            f"rounded down, a narrower accumulator), which passes short reductions and fails longer ones "
            f"(docs/checks.md, 'Signed drift': fails where the line reaches {DRIFT:g} of the bound at the longest "
            f"length, rising by {DRIFT / 2:g} from the shortest, with {ONE_SIGNED:.0%} of the longer cases one-signed)")
