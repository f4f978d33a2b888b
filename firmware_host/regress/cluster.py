"""Dask's side of the run: the cluster, each worker's kernels warmed once, and the check that
every worker runs this very version.

``--scheduler tcp://HOST:8786`` joins a running ``dask scheduler`` (its
``dask worker`` processes on any number of hosts); without it a
:class:`~distributed.LocalCluster` starts here, one single-threaded worker
process per core (or ``--workers N``), each held to ``--memory-limit``
by its nanny: a worker over it is restarted, and only its task is run
again.  One thread per worker: the pipeline holds the GIL most of the
time, so processes, not threads, are what scale.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dask
from distributed import Client, LocalCluster, WorkerPlugin

PACKAGES = ("firmware_host", "protocol", "rules")  # what decides a verdict
WAIT_FOR_WORKERS_S = 120  # a scheduler with no worker yet: how long to wait for the first
#: A worker's event loop wakes up for its own diagnostics: a stack sample every 10 ms, a GIL poll
#: every 1 ms, an event-loop health tick every 20 ms, its memory every 100 ms, the system's every
#: 500 ms.  Each wake-up takes the GIL from the task (the pipeline holds it nearly always), and on
#: a busy machine the loop's thread may wait for a core while holding it: the task stalls with
#: it.  Off, or a second apart, for the workers this run starts (bench/regress.py; a `dask worker`
#: started by hand reads the same keys from its own config, docs/regress.md).
QUIET_WORKERS = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.gil.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    # The nanny sets MALLOC_TRIM_THRESHOLD_ for its workers, and any explicit trim threshold turns
    # off glibc's dynamic mmap threshold: every array of the pipeline over 128 KiB is then mapped
    # and unmapped afresh, page faults and all (2.6x the page faults of a plain `replay`, about a
    # tenth more CPU).  Unset (None), the workers allocate as `firmware-host replay` does.
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
}


class VersionError(RuntimeError):
    """A worker whose firmware-host differs from the client's: its verdicts would be another's."""


def source_digest() -> str:
    """A digest of every source file that decides a verdict (content, not times: hosts differ)."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


SAMPLE_BYTES = 1 << 18  # the start of the corpus's first capture: every kind of frame, ~20 s


def _warm(sample: bytes) -> None:
    """Compile the kernels if this install never has (once per install, minutes), then load
    the replay's kernels from numba's cache by replaying the corpus's first seconds."""
    from ..live.warmup import is_warm, warm_up
    from ..pipeline import replay

    if not is_warm():
        warm_up()
    replay(sample)


class WarmKernels(WorkerPlugin):  # type: ignore[misc]
    """Registered once per run; Dask sets it up on every worker, and on every worker that joins
    or restarts later, so no task pays for numba's compile or cache load."""

    name = "firmware-host-warm-kernels"

    def __init__(self, sample: bytes) -> None:
        self.sample = sample

    async def setup(self, worker: Any) -> None:
        # In a thread: a compile of minutes must not stop the worker's heartbeats.
        await asyncio.get_running_loop().run_in_executor(None, _warm, self.sample)


@contextmanager
def connect(scheduler: str | None, workers: int | None, memory_limit: str) -> Iterator[Client]:
    """A client of ``scheduler``, or of a LocalCluster started here (and stopped after)."""
    if scheduler is not None:
        with Client(scheduler, timeout="30s") as client:
            client.wait_for_workers(1, timeout=WAIT_FOR_WORKERS_S)
            yield client
        return
    with (
        dask.config.set(QUIET_WORKERS),  # the nannies hand the config on to their workers
        LocalCluster(
            n_workers=workers or os.cpu_count() or 1,
            threads_per_worker=1,
            processes=True,
            memory_limit=memory_limit,
            dashboard_address=":0",  # the HTTP server on a free port, never a clash
            host="127.0.0.1",
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def prepare(client: Client, sample: bytes) -> int:
    """Check every worker's version and warm its kernels (``sample``: the start of a capture);
    the number of threads to keep busy."""
    mine = source_digest()
    theirs = client.run(source_digest)
    other = {addr: digest for addr, digest in theirs.items() if digest != mine}
    if other:
        raise VersionError(
            f"{len(other)} of {len(theirs)} workers run another firmware-host (e.g. "
            f"{next(iter(other))}): install this very version on every worker host"
        )
    client.register_plugin(WarmKernels(sample))
    return max(1, sum(client.nthreads().values()))
