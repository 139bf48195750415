"""Tools for testing reliability models, for relmodel's users and for itself.

- `relmodel.testing.strategies`: hypothesis strategies for scenarios,
  durations, failure models, job logs, pipeline configurations and elastic jobs
  (needs hypothesis, which `import relmodel` never loads).
- `relmodel.testing.invariants`: checks that any ETTR or MTTF model must pass
  (range, monotonicity, the failure-free limit, agreement with the simulation),
  each one line in a user's own test.

Neither is imported by `import relmodel` or by `import relmodel.testing`.
"""
