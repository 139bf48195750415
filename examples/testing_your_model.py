"""Holding your own ETTR model to relmodel's invariants, as a hypothesis test.
===========================================================================

Two home-made models of ETTR: a long-run first-order model with the queue
factor (sound), and the same with the restart cost's sign slipped (broken).
Each is run through the same property test, built from
`relmodel.testing.strategies` and `relmodel.testing.invariants`, as a user
would put it in their own test suite; hypothesis finds and shrinks the broken
model's counterexample. Then both are set beside the simulation across job
sizes. Writes testing_your_model.nc and .png.

    python examples/testing_your_model.py [--quick] [--out DIR]
    pytest examples/testing_your_model.py      # the two property tests as a test file
"""

import argparse
from pathlib import Path

import xarray as xr
from hypothesis import given, settings
from matplotlib.figure import Figure

import relmodel as rm
from relmodel.testing import invariants
from relmodel.testing.strategies import scenarios


def sound_model(sc):
    """First order, long run: each failure costs a restart, a queue wait and half an interval."""
    lam = sc.job_failure_rate
    useful = max(0.0, 1 - lam * (sc.restart_cost + sc.checkpoint_interval / 2))
    return useful / (1 + sc.checkpoint_cost / sc.checkpoint_interval) / (1 + lam * sc.queue_wait)


def broken_model(sc):
    """The same, with the restart term's sign slipped: ETTR now rises with restart cost."""
    lam = sc.job_failure_rate
    useful = min(1.0, max(0.0, 1 - lam * (sc.checkpoint_interval / 2 - sc.restart_cost)))
    return useful / (1 + sc.checkpoint_cost / sc.checkpoint_interval) / (1 + lam * sc.queue_wait)


def long_run_failure_free(sc):
    return 1 / (1 + sc.checkpoint_cost / sc.checkpoint_interval)


def property_test(model):
    """What a user writes in their own test file, once per model."""
    @settings(max_examples=200, deadline=None, database=None)
    @given(scenarios(laws=("exponential",)))
    def test(sc):
        invariants.check_ettr_model(model, sc, failure_free=long_run_failure_free)
    return test


test_sound_model = property_test(sound_model)  # pytest collects this one: it passes


def verdict(model) -> str:
    try:
        property_test(model)()
    except AssertionError as err:
        return "caught: " + str(err).splitlines()[0]
    return "passes every invariant"


def beside_the_simulation(n_jobs: int) -> xr.Dataset:
    grid = rm.Scenario(n_gpus=[256, 1024, 4096, 16384], failure_rate=6.5e-3, checkpoint_interval="1h",
                       checkpoint_cost="5min", restart_cost="20min", work="14d")
    sim = rm.simulate(grid, n_jobs=n_jobs, seed=0)
    ds = sim[["ettr", "ettr_se"]]
    for name, model in (("sound", sound_model), ("broken", broken_model)):
        ds[f"ettr_{name}_model"] = ("n_gpus", [model(p) for p in grid.points()])
    ds["ettr_renewal"] = rm.ettr(grid, "renewal").variable
    ds.attrs = {**sim.attrs, "title": "two home-made ETTR models against the simulation",
                "sound_model": verdict(sound_model), "broken_model": verdict(broken_model)}
    return ds


def figure(ds: xr.Dataset, path: Path):
    fig = Figure(figsize=(6.5, 4.2), layout="constrained")
    ax = fig.add_subplot()
    gpus = ds.n_gpus.values
    # The models often agree: a large hollow circle around the smaller filled markers keeps each visible.
    ax.errorbar(gpus, ds.ettr, yerr=2 * ds.ettr_se, fmt="o", color="k", mfc="none", ms=11, zorder=4,
                label="simulation (2 SE)")
    ax.plot(gpus, ds.ettr_renewal, "k-", lw=1, label="renewal (exact)")
    ax.plot(gpus, ds.ettr_sound_model, "C0s--", ms=5, label="sound model")
    for name, style in (("broken", "C3^--"),):
        caught = ds.attrs[f"{name}_model"].startswith("caught")  # the label says what the test found
        ax.plot(gpus, ds[f"ettr_{name}_model"], style, ms=6,
                label=f"{name} model ({'caught' if caught else 'not caught'} by the invariants)")
    ax.set(xscale="log", xlabel="job size (GPUs)", ylabel="ETTR (productive / wall-clock)",
           title="Home-made ETTR models against relmodel")
    ax.set_xticks(gpus, [str(g) for g in gpus])
    ax.xaxis.set_minor_formatter("")
    ax.legend(fontsize=8)
    fig.supxlabel(f"fixed: failure rate 0.0065 per node-day, checkpoint every 1h, write 5min, restart 20min,\n"
                  f"work 14d, 8 GPUs/node; {ds.attrs['n_jobs']} simulated jobs a point", fontsize=8, color="0.2")
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])  # the gallery runs it with no __doc__
    parser.add_argument("--quick", action="store_true", help="fewer simulated jobs")
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ds = beside_the_simulation(5_000 if args.quick else 100_000)
    print(f"sound model:  {ds.attrs['sound_model']}")
    print(f"broken model: {ds.attrs['broken_model']}")
    ds.to_netcdf(args.out / "testing_your_model.nc", engine="h5netcdf")
    figure(ds, args.out / "testing_your_model.png")
    print(f"wrote {args.out / 'testing_your_model.nc'} and .png")


if __name__ == "__main__":
    main()
