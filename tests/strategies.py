"""Scenario strategies for the project's own property tests."""

from hypothesis import strategies as st

import relmodel as rm


def scenarios(*, exponential_only=False, max_gpus=32768):
    """Valid scalar scenarios over typical ranges (durations in hours)."""
    return st.builds(
        rm.Scenario,
        n_gpus=st.integers(1, max_gpus),
        failure_rate=st.floats(1e-4, 2e-2),
        checkpoint_interval=st.floats(5 / 60, 12.0),
        work=st.floats(1.0, 30 * 24.0),
        checkpoint_cost=st.one_of(st.just(0.0), st.floats(1 / 60, 0.5)),
        restart_cost=st.one_of(st.just(0.0), st.floats(1 / 60, 1.0)),
        queue_wait=st.one_of(st.just(0.0), st.floats(1 / 60, 2.0)),
        gpus_per_node=st.sampled_from([1, 4, 8]),
        weibull_shape=st.just(1.0) if exponential_only else st.sampled_from([1.0, 0.7, 1.5]),
        lemon_fraction=st.sampled_from([0.0, 0.0, 0.02]),
        lemon_rate_factor=st.sampled_from([1.0, 10.0]),
        queue_wait_distribution=st.sampled_from(["fixed", "exponential"]),
    )
