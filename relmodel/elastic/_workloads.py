"""Workloads: lists of jobs with their provenance, and a synthetic generator
(Poisson arrivals, a model mix). Trace readers are in `traces`.

Random numbers come from the project's Philox4x32-10 generator with key
(seed, stream) and counter (draw, row): arrivals are row 0 of STREAM_ARRIVALS,
job i's attributes row i of STREAM_JOBS. So job i is the same job whatever the
arrival rate, and a longer window only appends jobs.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from .._errors import ParameterError
from .._display import key_value_table
from .._units import format_hours, short_repr, to_hours
from ._jobs import Job
from ._throughput import curve_models

STREAM_ARRIVALS = 1
STREAM_JOBS = 2


@dataclasses.dataclass(frozen=True)
class Workload:
    """Jobs in submission order, and the parameters that made them.

    Parameters
    ----------
    jobs : tuple of Job
        The jobs, in submission order.
    attrs : dict
        The parameters, copied into the simulation Dataset with a
        ``workload_`` prefix.
    """

    jobs: tuple[Job, ...]
    attrs: dict

    def __len__(self):
        return len(self.jobs)

    def __iter__(self):
        return iter(self.jobs)

    @property
    def window(self) -> float:
        """Hours from 0 to the last submission."""
        return max((j.submit_time for j in self.jobs), default=0.0)

    def __repr__(self) -> str:
        return (f"Workload({len(self.jobs):,} jobs submitted over {format_hours(self.window)}, "
                f"attrs={short_repr(self.attrs, 160)})")

    def _repr_html_(self) -> str:
        gpus = [job.gpus for job in self.jobs]
        models = {getattr(job.model, "name", str(job.model)) for job in self.jobs}
        rows = [("jobs", f"{len(self.jobs):,}"), ("submitted over", format_hours(self.window)),
                ("GPUs a job", f"{min(gpus)} to {max(gpus)}" if gpus else "none"),
                ("models", short_repr(", ".join(sorted(models)), 120)),
                *((name, short_repr(value, 120)) for name, value in self.attrs.items())]
        return key_value_table("Workload", rows)


def _check_factors(factors) -> tuple[float, float]:
    lo, hi = (float(f) for f in factors)
    if not (0 < lo <= 1 <= hi and math.isfinite(hi)):
        raise ParameterError("batch_range_factor", f"need 0 < low <= 1 <= high (got {factors!r})")
    return lo, hi


MAX_BATCH = 2**53  # a global batch above this is not a whole float, nor a real batch


def batch_range(batch: int, factors: tuple[float, float]) -> tuple[int, int]:
    """[B_lo, B_hi] around a submitted batch: (batch * low, batch * high), rounded."""
    if batch * factors[1] > MAX_BATCH:
        raise ParameterError("batch_range_factor", f"high factor {factors[1]:g} times batch {batch} is beyond "
                                                   f"the largest batch, 2**53")
    return max(1, round(batch * factors[0])), max(batch, round(batch * factors[1]))


def _positive(name: str, value, *, duration=False) -> float:
    x = to_hours(value, name) if duration else value
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x) or x <= 0:
        shown = format_hours(x) if duration and isinstance(x, numbers.Real) else repr(value)
        raise ParameterError(name, f"must be a finite number > 0 (got {shown})")
    return float(x)


def poisson_arrivals(rate: float, window: float, seed: int) -> np.ndarray:
    """Arrival times (h) of a Poisson process of `rate` per hour on [0, window)."""
    from ._allocation_kernel import stream_uniforms

    times, first, t = [], 0, 0.0
    chunk = int(rate * window * 1.2) + 64
    while True:
        with np.errstate(over="ignore"):  # a subnormal rate: gaps of inf, no arrival, as it should be
            gaps = -np.log(stream_uniforms(seed, STREAM_ARRIVALS, 0, first, chunk)) / rate
        arrivals = t + np.cumsum(gaps)
        times.append(arrivals[arrivals < window])
        if arrivals[-1] >= window:
            return np.concatenate(times)
        t, first = arrivals[-1], first + chunk


def _models_for(models: Mapping | None, curve: str) -> tuple[dict, str]:
    """A workload's model catalogue and the name its attrs give the curves:
    `models` ("custom"), or the catalogue of the family `curve`, not both."""
    if models is not None and curve != "fitted":
        raise ParameterError("curve", f"give either models or a curve family, not both (got curve {curve!r})")
    if models is None:
        return dict(curve_models(curve)), curve
    return dict(models), "custom"


MAX_SYNTHETIC_JOBS = 200_000
"""Most expected jobs (arrival_rate x duration) of `synthetic_workload`:
`relmodel cluster` on 64 GPUs takes about 3 s for 5,000 jobs, 5 s for
50,000 and 15 s for 200,000 (all three policies); a rate typed in the wrong
unit (jobs per second as per hour) is refused, not run."""


def synthetic_workload(arrival_rate, duration, seed: int = 0, *, model_mix: Mapping[str, float] | None = None,
                       gpu_choices: Sequence[int] = (1, 2, 4, 8, 16),
                       gpu_weights: Sequence[float] = (0.55, 0.1, 0.15, 0.15, 0.05),
                       job_duration=("10min", "8h"), batch_range_factor=(0.5, 2.0),
                       batch_scaling: str = "global", models: Mapping | None = None, curve: str = "fitted",
                       max_gpus: int | None = None, min_local_batch: int = 1,
                       noise_scale_factor: float | None = None) -> Workload:
    """Draw Poisson arrivals at `arrival_rate` jobs per hour over `duration`.

    Each job draws a model from `model_mix`, a size among the model's
    ``batch_sizes``, a GPU count from `gpu_choices` (by `gpu_weights`), and a run
    time at that size, log-uniform in `job_duration`; its work is that run time
    times its throughput there. With ``batch_scaling="global"`` (as in the
    ElasticFlow traces) the size is the global batch, whatever the GPU count (GPU
    counts that do not give a whole local batch within the memory bound are left
    out); with "per-gpu" it is the local batch, so the global batch grows with
    the GPUs asked for. GPU counts above `max_gpus`, or whose local batch is
    below `min_local_batch`, are left out too; a job none of whose GPU counts
    is left asks for the fewest GPUs that hold its batch, and is rejected at
    submission if that breaks its bounds.

    The throughput-curve family (`curve`) changes only the model objects and
    so the work: job i draws the same uniforms, so it keeps its submission
    time, model name, batch and GPU count in every family.

    Parameters
    ----------
    arrival_rate : float
        Jobs per hour.
    duration : float or str
        The arrival window.
    seed : int, default 0
        Random seed.
    model_mix : mapping of str to float, optional
        Model weights; every model of `models`, equally, when None.
    gpu_choices : sequence of int, default (1, 2, 4, 8, 16)
        GPU counts asked for.
    gpu_weights : sequence of float, default (0.55, 0.1, 0.15, 0.15, 0.05)
        Their weights.
    job_duration : tuple, default ("10min", "8h")
        Range of the log-uniform run time at the submitted size.
    batch_range_factor : tuple of float, default (0.5, 2.0)
        The batch range as factors of the submitted batch.
    batch_scaling : {"global", "per-gpu"}, default "global"
        Whether the drawn size is the global or the local batch.
    models : mapping, optional
        Model name to throughput model; ``curve_models(curve)`` when None.
    curve : {"fitted", "roofline"}, default "fitted"
        The throughput-curve family (`CURVE_FAMILIES`) of the models, when
        `models` is None.
    max_gpus : int, optional
        Most GPUs of every job; the cluster size when None.
    min_local_batch : int, default 1
        Smallest per-GPU batch of every job.
    noise_scale_factor : float, optional
        Each job's gradient noise scale as a multiple of its submitted batch
        (`Job.noise_scale`: its samples grow with the batch, and the policies
        rate it by goodput); None: no statistical-efficiency penalty.

    Returns
    -------
    Workload
        The jobs.
    """
    rate, window = _arrival_window(arrival_rate, duration)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
        raise ParameterError("seed", f"must be an integer in [0, 2**32) (got {seed!r})")
    models, curve_name = _models_for(models, curve)
    scale = _check_job_bounds(max_gpus, min_local_batch, noise_scale_factor)
    mix, names, weights = _model_mix(model_mix, models, min_local_batch)
    choices, g_weights = _gpu_mix(gpu_choices, gpu_weights)
    short, long = (_positive("job_duration", d, duration=True) for d in job_duration)
    if short > long:
        raise ParameterError("job_duration", f"low {short} h > high {long} h")
    factors = _check_factors(batch_range_factor)
    if batch_scaling not in ("global", "per-gpu"):
        raise ParameterError("batch_scaling", f"must be 'global' or 'per-gpu' (got {batch_scaling!r})")

    draw = _JobDraw(seed=int(seed), models=models, names=names, model_cdf=np.cumsum(weights) / weights.sum(),
                    choices=choices, gpu_weights=g_weights, run_hours=(short, long), factors=factors,
                    per_gpu=batch_scaling == "per-gpu", max_gpus=max_gpus, min_local_batch=min_local_batch,
                    noise_scale_factor=scale)
    jobs = [draw.job(i, t) for i, t in enumerate(poisson_arrivals(rate, window, int(seed)))]
    attrs = {
        "workload": "synthetic: Poisson arrivals, model mix, log-uniform run times",
        "arrival_rate_per_h": rate, "arrival_window_h": window, "seed": int(seed), "n_jobs": len(jobs),
        "model_mix": ",".join(f"{n}:{mix[n]:g}" for n in names),
        "gpu_choices": choices.tolist(), "gpu_weights": g_weights.tolist(),
        "job_duration_h": [short, long], "batch_range_factor": list(factors), "batch_scaling": batch_scaling,
        "curve": curve_name,
        "max_gpus": None if max_gpus is None else int(max_gpus), "min_local_batch": int(min_local_batch),
        "noise_scale_factor": "none" if scale is None else scale,
        "rng": "Philox4x32-10; key (seed, stream); arrivals row 0 of stream 1, job i row i of stream 2",
    }
    return Workload(tuple(jobs), attrs)


def _arrival_window(arrival_rate, duration) -> tuple[float, float]:
    """The arrival rate (per hour) and window (hours), refused where they expect too many jobs."""
    rate = _positive("arrival_rate", arrival_rate)
    window = _positive("duration", duration, duration=True)
    if rate * window > MAX_SYNTHETIC_JOBS:
        # Named: the one further above a usual workload's (6 jobs an hour over a day).
        culprit = "duration" if window / 24.0 > rate / 6.0 else "arrival_rate"
        jobs = f"about {rate * window:.3g}" if math.isfinite(rate * window) else "more than 1e308"
        raise ParameterError(culprit, f"{rate:g} jobs/h over {format_hours(window)} is {jobs} "
                                      f"jobs (limit {MAX_SYNTHETIC_JOBS:,}, some 15 s of cluster simulation); "
                                      "lower the arrival rate (--arrival-rate) or the window (--duration)")
    return rate, window


def _check_job_bounds(max_gpus, min_local_batch, noise_scale_factor) -> float | None:
    """Check the bounds every job gets; return the noise scale factor as a float (or None)."""
    if max_gpus is not None and (isinstance(max_gpus, bool) or not isinstance(max_gpus, (int, np.integer))
                                 or max_gpus < 1):
        raise ParameterError("max_gpus", f"must be a positive integer or None (got {max_gpus!r})")
    if isinstance(min_local_batch, bool) or not isinstance(min_local_batch, (int, np.integer)) \
            or min_local_batch < 1:
        raise ParameterError("min_local_batch", f"must be a positive integer (got {min_local_batch!r})")
    scale = noise_scale_factor
    if scale is not None:
        if isinstance(scale, bool) or not isinstance(scale, (int, float, np.integer, np.floating)) \
                or not (math.isfinite(scale) and scale > 0):
            raise ParameterError("noise_scale_factor", f"must be a finite number > 0, or None (got {scale!r})")
        scale = float(scale)
    return scale


def _model_mix(model_mix, models: dict, min_local_batch: int) -> tuple[dict, list, np.ndarray]:
    """The model weights (every model alike when None): the mix, its model names and their weights."""
    mix = {name: 1.0 for name in models} if model_mix is None else dict(model_mix)
    unknown = set(mix) - set(models)
    if unknown:
        raise ParameterError("model_mix", f"unknown model(s) {sorted(unknown)}; known: {', '.join(models)}")
    names = list(mix)
    weights = np.array([mix[n] for n in names], dtype=float)
    if not np.all(np.isfinite(weights)) or np.any(weights < 0) or weights.sum() <= 0:
        raise ParameterError("model_mix", f"weights must be >= 0 with a positive sum (got {mix})")
    too_small = [n for n, w in zip(names, weights) if w > 0 and models[n].max_local_batch < min_local_batch]
    if too_small:
        raise ParameterError("min_local_batch", f"{min_local_batch} is above the memory bound (max_local_batch) "
                                                f"of {', '.join(too_small)}")
    return mix, names, weights


def _gpu_mix(gpu_choices, gpu_weights) -> tuple[np.ndarray, np.ndarray]:
    """The GPU counts jobs ask for and their weights, as arrays."""
    choices = np.array(gpu_choices, dtype=np.int64)
    g_weights = np.array(gpu_weights, dtype=float)
    if choices.ndim != 1 or choices.size == 0 or choices.shape != g_weights.shape or np.any(choices < 1) \
            or np.any(g_weights < 0) or g_weights.sum() <= 0:
        raise ParameterError("gpu_choices", "need positive GPU counts and as many non-negative weights (positive sum)")
    return choices, g_weights


@dataclasses.dataclass(frozen=True)
class _JobDraw:
    """How job i of a synthetic workload is made from its row of uniforms (model, size, GPUs, run time)."""

    seed: int
    models: dict
    names: list
    model_cdf: np.ndarray
    choices: np.ndarray
    gpu_weights: np.ndarray
    run_hours: tuple[float, float]
    factors: tuple[float, float]
    per_gpu: bool
    max_gpus: int | None
    min_local_batch: int
    noise_scale_factor: float | None

    def job(self, i: int, submit_time) -> Job:
        """Return job `i`, submitted at `submit_time` hours."""
        from ._allocation_kernel import stream_uniforms

        u = stream_uniforms(self.seed, STREAM_JOBS, i, 0, 4)
        model = self.models[self.names[min(int(np.searchsorted(self.model_cdf, u[0])), len(self.names) - 1)]]
        sizes = model.batch_sizes or (model.max_local_batch,)
        size = int(sizes[min(int(u[1] * len(sizes)), len(sizes) - 1)])
        gpus = self._gpus(model, size, u[2])
        batch = gpus * size if self.per_gpu else size
        short, long = self.run_hours
        run_h = short * (long / short) ** u[3]
        work = run_h * 3600.0 * float(model.throughput(gpus, batch))
        lo, hi = batch_range(batch, self.factors)
        scale, max_gpus = self.noise_scale_factor, self.max_gpus
        return Job(model, work, batch, gpus, min_batch=lo, max_batch=hi, min_local_batch=int(self.min_local_batch),
                   max_gpus=None if max_gpus is None else int(max_gpus), submit_time=float(submit_time),
                   job_id=f"job{i:05d}", noise_scale=None if scale is None else scale * batch)

    def _gpus(self, model, size: int, u: float) -> int:
        """The GPU count drawn by uniform `u` among the choices that hold a batch of `size`."""
        choices = self.choices
        fits = self.per_gpu | ((size % choices == 0) & (size // choices <= model.max_local_batch))
        # Only when asked for: the default bounds leave the draws as they were.
        if self.max_gpus is not None:
            fits = fits & (choices <= self.max_gpus)
        if self.min_local_batch > 1:
            fits = fits & ((size if self.per_gpu else size // choices) >= self.min_local_batch)
        w = np.where(fits, self.gpu_weights, 0.0)
        if w.sum() == 0:  # no listed size fits: the fewest GPUs that hold the batch
            return -(-size // model.max_local_batch)
        cdf = np.cumsum(w) / w.sum()
        return int(choices[min(int(np.searchsorted(cdf, u)), choices.size - 1)])
