"""firmware-host: referee a sensor-equipped Russian billiards table over a serial link."""

from . import numba_cache as _numba_cache

__version__ = "0.1.0"

# Before any module with a cached numba kernel is imported (they all import lazily).
_numba_cache.ensure()
