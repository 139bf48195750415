"""The options every private Numba kernel compiles with: cache=True so compiled code survives the
process, error_model="numpy" so 1/0 gives inf, not an exception; no fastmath, so NaN/inf checks stay valid."""

JIT_OPTIONS = dict(cache=True, error_model="numpy", nogil=True)
