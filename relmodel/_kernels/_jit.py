"""The options every private Numba kernel compiles with: cache=True so compiled code survives the
process, error_model="numpy" so 1/0 gives inf, not an exception; no fastmath, so NaN/inf checks stay valid."""

import atexit

from .._feedback import mark_compiled_kernels

JIT_OPTIONS = dict(cache=True, error_model="numpy", nogil=True)

# A run that compiled a kernel leaves a ready marker beside Numba's cache at its end, which
# tells later runs the kernels load rather than compile (`_feedback.kernels_cached`).
atexit.register(mark_compiled_kernels)
