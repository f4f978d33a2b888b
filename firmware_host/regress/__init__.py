"""A season of recordings re-judged on a cluster: which verdicts would change, and why.

``firmware-host hil regress`` (docs/regress.md).  An edge above the cores:
it replays with the same :func:`firmware_host.pipeline.replay` as every
other command and draws with :mod:`firmware_host.pictures`; nothing below
imports it.

* :mod:`.corpus` — the captures, grouped into recordings (rotated parts in order)
* :mod:`.replaying` — one part through the pipeline on a worker, streamed in windows
* :mod:`.baseline`, :mod:`.against` — what the verdicts are compared with
* :mod:`.compare` — one row per shot, the kind of change
* :mod:`.cluster`, :mod:`.run`, :mod:`.progress` — Dask: workers, tasks, results as they finish
* :mod:`.results` — Parquet batches, ``--resume``
* :mod:`.report` — the summary and the HTML report before/after
"""
