"""What each numba kernel cost to compile on the development machine (own CPU seconds).

The warm-up weighs its progress with these (``warmup.Progress``): the
share of the compile already done, and so the time left, is right on any
machine, even where every kernel takes five times as long.  Made from the
marker of a cold warm-up (``NUMBA_CACHE_DIR=$(mktemp -d) python -m
firmware_host.warmup``, then its ``kernels`` rows: name and own CPU
seconds); a kernel added since weighs the median.
"""

OWN_S: dict[str, float] = {}
