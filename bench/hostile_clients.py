"""Hostile web clients against a page's server: event streams and slow connections at once.

Used by ``bench/hostile_load.py`` and ``tests/web/test_hostile_web.py``; runs as its own
process (its own file-descriptor limit, raised to the hard one, and its own CPU),
as the clients of a club's network would:

* ``--streams N``: N clients on ``/events``, each reading what it is sent; one the
  server refuses (503, or a connection closed) tries again after ``--retry-s``;
* ``--slow N``: N connections that send a request's first line and then one header
  byte every ``--trickle-s`` seconds, never finishing it (slowloris); one the server
  closes opens again after ``--retry-s``.

After ``--seconds`` (or SIGTERM) it prints one JSON object: streams that got a
snapshot, refusals by kind, messages read, slow connections closed by the server.

    python bench/hostile_clients.py http://127.0.0.1:8080/ --streams 1000 --slow 200 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import signal
import sys
import time
from collections import Counter
from urllib.parse import urlsplit


class Tally:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.open_streams = 0
        self.most_streams = 0
        self.messages = 0
        self.started = time.monotonic()
        # Set at the end, before the tasks are cancelled: Python 3.11's wait_for can swallow
        # a cancellation (the read finishing as it is cancelled), and a task that kept looping
        # held the gather, and the tally, for ever.
        self.stopping = False


async def stream(host: str, port: int, tally: Tally, retry_s: float) -> None:
    """One page's event stream, opened again whenever the server refuses or drops it."""
    while not tally.stopping:
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            tally.counts["stream connect failed"] += 1
            await asyncio.sleep(retry_s)
            continue
        counted = False
        try:
            writer.write(f"GET /events HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            status = await reader.readline()
            if b" 200 " not in status:
                tally.counts[f"stream refused {status[9:12].decode() or 'closed'}"] += 1
            else:
                while line := await reader.readline():
                    if line.startswith(b"event: snapshot"):
                        tally.counts["stream snapshot"] += 1
                        tally.open_streams += 1
                        tally.most_streams = max(tally.most_streams, tally.open_streams)
                        counted = True
                    elif line.startswith(b"data: "):
                        tally.messages += 1
                tally.counts["stream ended by the server"] += 1
        except OSError:
            tally.counts["stream reset"] += 1
        finally:
            if counted:
                tally.open_streams -= 1
            writer.close()
        await asyncio.sleep(retry_s)


async def slow(host: str, port: int, tally: Tally, trickle_s: float, retry_s: float) -> None:
    """A request that never finishes: a header byte now and then, for ever."""
    while not tally.stopping:
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            tally.counts["slow connect failed"] += 1
            await asyncio.sleep(retry_s)
            continue
        opened = time.monotonic()
        try:
            writer.write(b"GET / HTTP/1.1\r\nX-Slow: ")
            while not reader.at_eof() and not tally.stopping:
                try:
                    answer = await asyncio.wait_for(reader.read(4096), trickle_s)
                except TimeoutError:
                    writer.write(b"a")
                    await writer.drain()
                    continue
                if b" 503 " in answer[:16]:
                    tally.counts["slow refused 503"] += 1
                    break
                if not answer:
                    break
            tally.counts["slow closed by the server"] += 1
            tally.counts["slow seconds held"] += round(time.monotonic() - opened)
        except OSError:
            tally.counts["slow reset"] += 1
        finally:
            writer.close()
        await asyncio.sleep(retry_s)


async def main_async(args: argparse.Namespace) -> Tally:
    parts = urlsplit(args.url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    tally = Tally()
    tasks = [
        asyncio.create_task(stream(host, port, tally, args.retry_s)) for _ in range(args.streams)
    ]
    tasks += [
        asyncio.create_task(slow(host, port, tally, args.trickle_s, args.retry_s))
        for _ in range(args.slow)
    ]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await asyncio.wait_for(stop.wait(), args.seconds)
    except TimeoutError:
        pass
    tally.stopping = True
    for task in tasks:
        task.cancel()
    await asyncio.wait(tasks, timeout=10)
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--slow", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--trickle-s", type=float, default=5.0)
    parser.add_argument("--retry-s", type=float, default=1.0)
    args = parser.parse_args()
    # The clients' own side: one descriptor each, more than the usual 1024.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    sys.stderr.write(f"hostile clients: fd limit {soft} -> {hard}\n")
    tally = asyncio.run(main_async(args))
    summary = {
        "seconds": round(time.monotonic() - tally.started, 1),
        "most_streams_open": tally.most_streams,
        "messages": tally.messages,
        **dict(sorted(tally.counts.items())),
    }
    sys.stdout.write(json.dumps(summary) + "\n")


if __name__ == "__main__":
    main()
