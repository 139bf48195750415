"""relmodel.pipeline's schedules against an independent reference of ReCycle's model.

Each property draws a configuration (1-5 stages, 1-3 replicas, 1-10
micro-batches; every order, backward and optimizer kind; delays and optimizer
time on or off) with times of one of two kinds:

* "quarter": multiples of 1/4 up to 3. Every sum is exact in float64, so the
  package must equal the exact reference exactly (==).
* "extreme": each time 10**x with x drawn in [lo, lo + 6], lo in [-6, 0], so
  times from 1e-6 to 1e6 with ratios up to 1e6 in one configuration (zeros
  for B, W and the delays too). The package rounds each float64 sum once;
  a time is a sum along a path of at most K (3 m + 2 p + 1) ~ 250 tasks and
  delays, each rounding by at most 2**-53 of the clock, so it is off by at
  most 250 * 2**-53 ~ 3e-14 of the schedule's span; the period, a difference
  of completions 3 iterations apart divided by 3, by at most ~1.1e-13 of
  itself (span ~ 6 periods). REL = 1e-12 leaves a margin of about 10.

CI runs 25 examples per property (the "ci" profile); HYPOTHESIS_PROFILE=thorough runs 500.
"""

import math
from fractions import Fraction

import numpy as np
from hypothesis import event, given
from hypothesis import strategies as st

import relmodel.pipeline as pl
from relmodel.pipeline._recycle import recycle_schedule

from . import pipeline_reference as ref

REL = 1e-12  # float64 draws: see the module docstring; quarter draws compare exactly
ITERATIONS, MEASURED = 6, 3  # the package's defaults (N_ITERATIONS, N_MEASURED), restated for the reference
KIND_LETTER = {0: ref.FORWARD, 1: ref.BACKWARD, 2: ref.WEIGHT}


@st.composite
def times(draw, mode: str, zero: bool):
    """One time of the draw's kind; 0 allowed when `zero`."""
    if zero and draw(st.integers(0, 3)) == 0:
        return 0.0
    if mode == "quarter":
        return draw(st.integers(1, 12)) / 4
    lo = draw(st.shared(st.floats(-6.0, 0.0), key="lo"))  # one decade window per configuration
    return float(10.0 ** draw(st.floats(lo, lo + 6.0)))


@st.composite
def configs(draw, max_stages: int = 5, max_replicas: int = 3, max_microbatches: int = 10, kinds: bool = True,
            plain: bool = False, min_replicas: int = 1):
    """(PipelineConfig, mode) over the space the module docstring describes; `kinds=False`
    keeps fused 1F1B with a barrier, `plain` also uniform stages without delays or optimizer time."""
    mode = draw(st.sampled_from(["quarter", "extreme"]))
    p = draw(st.integers(1, max_stages))
    d = draw(st.integers(min_replicas, max_replicas))
    m = draw(st.integers(1, max_microbatches))
    f = [draw(times(mode, zero=False)) for _ in range(p)]  # F > 0: every stage has work
    b = [draw(times(mode, zero=True)) for _ in range(p)]
    w = [draw(times(mode, zero=True)) for _ in range(p)]
    if plain or draw(st.booleans()):  # uniform stages, ReCycle's closed forms
        f, b, w = [f[0]] * p, [b[0]] * p, [w[0]] * p
    order, backward, optimizer = "1f1b", "fused", "barrier"
    if kinds:
        order = draw(st.sampled_from(pl.ORDERS))
        backward = "decoupled" if order == "zb-h1" else draw(st.sampled_from(pl.BACKWARDS))
        optimizer = draw(st.sampled_from(pl.OPTIMIZERS))
    p2p = draw(times(mode, zero=True)) if not plain and draw(st.booleans()) else 0.0
    reroute = draw(times(mode, zero=True)) if not plain and draw(st.booleans()) else None
    step = draw(times(mode, zero=True)) if not plain and draw(st.booleans()) else 0.0
    cfg = pl.PipelineConfig(p, d, m, fwd=f, bwd_input=b, bwd_weight=w, order=order, backward=backward,
                            optimizer=optimizer, p2p_delay=p2p, reroute_delay=reroute, optimizer_time=step)
    event(f"times: {mode}")  # the statistics (--hypothesis-show-statistics) show the mix
    return cfg, mode


@st.composite
def masks(draw, d: int, p: int, survivable: bool = True, some: bool = False):
    """Boolean (d, p) failed-worker masks: with `survivable`, every stage keeps a
    worker; with `some`, at least one worker fails (d > 1 when both)."""
    if not survivable:
        mask = np.array(draw(st.lists(st.booleans(), min_size=d * p, max_size=d * p))).reshape(d, p)
        if some and not mask.any():
            mask[draw(st.integers(0, d - 1)), draw(st.integers(0, p - 1))] = True
        return mask
    mask = np.zeros((d, p), dtype=bool)
    for s in range(p):  # up to d - 1 failed replicas per stage
        mask[draw(st.lists(st.integers(0, d - 1), max_size=d - 1, unique=True)), s] = True
    if some and not mask.any():
        assert d > 1, "every survivable failure needs a second replica"
        mask[draw(st.integers(0, d - 1)), draw(st.integers(0, p - 1))] = True
    return mask


def same(got: float, want, mode: str, scale=None) -> bool:
    """got == want exactly for quarter draws; within REL of `scale` (default: of want) for extreme ones."""
    want = float(want)
    if mode == "quarter":
        return got == want
    return abs(got - want) <= REL * abs(float(scale) if scale is not None else want)


def at_least(got: float, bound, mode: str) -> bool:
    """got >= bound; extreme draws may round below it by REL."""
    bound = float(bound)
    return got >= bound if mode == "quarter" else got >= bound * (1 - REL)


def reference_schedule(cfg: pl.PipelineConfig, **changes) -> dict:
    """The reference's fault-free schedule of cfg (with `changes`, e.g. fewer replicas)."""
    args = dict(stages=cfg.stages, replicas=cfg.replicas, microbatches=cfg.microbatches, fwd=list(cfg.fwd),
                bwd_input=list(cfg.bwd_input), bwd_weight=list(cfg.bwd_weight), order=cfg.order,
                backward=cfg.backward, optimizer=cfg.optimizer, p2p_delay=cfg.p2p_delay,
                optimizer_time=cfg.optimizer_time, iterations=ITERATIONS, measured=MEASURED) | changes
    return ref.simulate(**args)


def package_tasks(schedule: pl.Schedule):
    """The schedule's computing tasks as the reference names them:
    (k, r, j, s, kind, (replica, stage) of its worker, start, end)."""
    graph = schedule.graph
    d, m, p = graph.shape
    out = []
    for k in range(graph.n_iterations):
        for r in range(d):
            for j in range(m):
                for s in range(p):
                    for t in range(3):
                        i = graph.task(k, r, j, s, t)
                        worker = int(graph.worker[i])
                        if worker >= 0:  # a fused backward's W is a placeholder that runs nowhere
                            out.append((k, r, j, s, KIND_LETTER[t], (worker // p, worker % p),
                                        float(schedule.start[i]), float(schedule.end[i])))
    return out


# -- fault-free schedules ---------------------------------------------------------------


@given(case=configs())
def test_fault_free_schedule_is_the_reference_task_by_task(case):
    cfg, mode = case
    schedule = pl.fault_free(cfg)
    want = reference_schedule(cfg)
    span = want["completion"][-1]
    tasks = package_tasks(schedule)
    assert len(tasks) == len(want["times"])
    for k, r, j, s, kind, worker, start, end in tasks:
        assert worker == (r, s)  # fault-free: every micro-batch on its own replica
        ref_start, ref_end = want["times"][k, r, j, s, kind]
        assert same(start, ref_start, mode, span) and same(end, ref_end, mode, span), (k, r, j, s, kind)
    assert same(schedule.period, want["period"], mode)


@given(case=configs(kinds=False, plain=True))
def test_uniform_fused_1f1b_is_m_plus_p_minus_1_stage_times(case):
    """ReCycle's T0 = (m + p - 1) t, through the public entry point, for every strategy with no failure
    (Bamboo's redundant forwards excepted: they cost time even without one)."""
    cfg, mode = case
    t = Fraction(cfg.fwd[0]) + Fraction(cfg.bwd_input[0]) + Fraction(cfg.bwd_weight[0])
    t0 = ref.fault_free_1f1b(cfg.microbatches, cfg.stages, t)
    for strategy in set(pl.RECOVERY_STRATEGIES) - {"bamboo"}:
        got = pl.iteration_time(cfg.stages, cfg.replicas, cfg.microbatches, cfg.fwd[0], cfg.bwd_input[0],
                                cfg.bwd_weight[0], strategy=strategy, failed={})
        assert same(got, t0, mode), strategy
    assert at_least(pl.iteration_time(cfg.stages, cfg.replicas, cfg.microbatches, cfg.fwd[0], cfg.bwd_input[0],
                                      cfg.bwd_weight[0], strategy="bamboo", failed={}), t0, mode)


@given(case=configs(), decoupled=st.booleans(), staggered=st.booleans())
def test_recycle_with_no_failure_is_the_fault_free_schedule_of_the_same_kind(case, decoupled, staggered):
    """Whatever ReCycle's options, with no failure it runs cfg's fault-free schedule."""
    cfg, mode = case
    want = reference_schedule(cfg)
    no_failure = np.zeros((cfg.replicas, cfg.stages), dtype=bool)
    schedule = recycle_schedule(cfg, no_failure, decoupled=decoupled, staggered=staggered)
    assert same(schedule.period, want["period"], mode)
    options = pl.StrategyOptions(recycle_decoupled=decoupled, recycle_staggered=staggered)
    assert same(pl.evaluate(cfg, "recycle", {}, options).period, want["period"], mode)


# -- with failures ---------------------------------------------------------------------


@given(case=configs(max_stages=4, max_replicas=3, max_microbatches=8), data=st.data())
def test_no_strategy_beats_the_work_bound(case, data):
    """No schedule beats max_s L_s t_s where work stays on its stage (ReCycle,
    dropped pipelines); none beats the average load of the workers it runs on;
    ReCycle never beats its aim max(T0, bound); restart and spare run T0, and
    dropping pipelines runs the reference's single pipeline with ceil(m d / d')."""
    cfg, mode = case
    d, p, m = cfg.replicas, cfg.stages, cfg.microbatches
    mask = data.draw(masks(d, p, some=d > 1))  # one replica survives no failure: its case is the fault-free one
    t = [Fraction(a) + Fraction(b) + Fraction(c) for a, b, c in zip(cfg.fwd, cfg.bwd_input, cfg.bwd_weight)]
    bound = ref.work_bound(m, d, mask.sum(axis=0).tolist(), t)
    t0 = reference_schedule(cfg)["period"]
    n_failed = int(mask.sum())
    for strategy in pl.RECOVERY_STRATEGIES:
        result = pl.evaluate(cfg, strategy, mask)
        assert same(result.work_bound, bound, mode)
        if not result.survives:
            continue
        replaced = strategy in ("restart", "spare")  # failed workers swapped for healthy nodes
        live = d * p if replaced else d * p - n_failed
        assert at_least(result.period, ref.average_load_bound(m, d, t, live), mode), strategy
        if strategy in ("recycle", "drop-pipeline"):
            assert at_least(result.period, bound, mode), strategy
        if replaced:
            assert same(result.period, t0, mode), strategy
    recycle, aim = pl.evaluate(cfg, "recycle", mask).period, ref.recycle_aim(t0, bound)
    assert at_least(recycle, bound, mode)  # its plans may beat the aim (a decoupled backward), never the bound
    fits = max(ref.survivor_load(m, d, f) for f in mask.sum(axis=0).tolist()) <= m + p - 1  # ReCycle's "fits"
    event("recycle: no failure" if not mask.any() else
          f"recycle: {'at' if same(recycle, aim, mode) else 'above' if recycle > aim else 'below'} its aim, "
          f"extra load {'fits the bubble' if fits else 'beyond the bubble'}")
    whole = int((~mask.any(axis=1)).sum())
    if whole:
        dropped = reference_schedule(cfg, replicas=1, microbatches=-(-(m * d) // whole))
        assert same(pl.evaluate(cfg, "drop-pipeline", mask).period, dropped["period"], mode)


@given(case=configs(max_stages=4, min_replicas=2, max_replicas=3, max_microbatches=6), data=st.data())
def test_recycle_schedule_keeps_the_reference_rules(case, data):
    """ReCycle's adapted schedule is a valid schedule under the reference's rules:
    each re-routed micro-batch on a surviving same-stage peer, every dependency
    and delay, one task at a time per worker, at most L_s micro-batches per
    survivor, the staggered optimizer's order between iterations.

    Only validity, not equality: which valid schedule the planner picks is the
    package's choice, not a semantics the reference can restate (its period is
    checked against exhaustive search in test_pipeline_planner)."""
    cfg, mode = case
    d, p, m = cfg.replicas, cfg.stages, cfg.microbatches
    mask = data.draw(masks(d, p, some=True))
    schedule = recycle_schedule(cfg, mask)
    whole, m_each, _ = schedule.graph.shape
    assert (whole, m_each) == (d, m)
    failed = [tuple(x) for x in np.argwhere(mask).tolist()]
    problems = ref.check_schedule(p, whole, m_each, schedule.graph.n_iterations, list(cfg.fwd), list(cfg.bwd_input),
                                  list(cfg.bwd_weight), package_tasks(schedule), backward="decoupled",
                                  optimizer="staggered", p2p_delay=cfg.p2p_delay, reroute_delay=cfg.reroute_delay,
                                  optimizer_time=cfg.optimizer_time, failed=failed)
    assert not problems, problems[:5]
    t = [Fraction(a) + Fraction(b) + Fraction(c) for a, b, c in zip(cfg.fwd, cfg.bwd_input, cfg.bwd_weight)]
    assert at_least(schedule.period, ref.work_bound(m, d, mask.sum(axis=0).tolist(), t), mode)


# -- the unit of time --------------------------------------------------------------------


@given(case=configs(max_stages=4, max_replicas=3, max_microbatches=6, kinds=False), data=st.data(),
       exponent=st.integers(-60, 60))
def test_every_strategy_scales_exactly_with_the_unit_of_time(case, data, exponent):
    """Times in other units give the same schedule: multiplying every time by
    2**e multiplies every period by exactly 2**e (a power of two rounds like
    the numbers it scales), at any scale far from overflow."""
    cfg, _ = case
    mask = data.draw(masks(cfg.replicas, cfg.stages, survivable=False))
    scale = 2.0 ** exponent
    scaled = cfg.replace(fwd=[x * scale for x in cfg.fwd], bwd_input=[x * scale for x in cfg.bwd_input],
                         bwd_weight=[x * scale for x in cfg.bwd_weight], p2p_delay=cfg.p2p_delay * scale,
                         reroute_delay=cfg.reroute_delay * scale, optimizer_time=cfg.optimizer_time * scale)
    for strategy in pl.RECOVERY_STRATEGIES:
        base = pl.evaluate(cfg, strategy, mask).period
        assert pl.evaluate(scaled, strategy, mask).period == (base * scale if math.isfinite(base) else base), strategy
