"""The live page's latency: a verdict's release in the daemon to its arrival in a browser.

``firmware-host run --web`` on the virtual table at real time, with the page
open in headless Chromium (Debian's, through selenium) and, beside it,
``--clients N`` more pages on the event stream (plain readers, as fast as a
browser reads).  The daemon stamps each message as it leaves the feed
(``sent_unix``); the page notes ``Date.now()`` when it arrives; both clocks
are this machine's.  Printed: p50, p99 and max over the match's verdicts,
and the daemon's own release lag (its run summary), so that the two are
read together.

    python bench/web_latency.py [--minutes 2] [--seed 1] [--clients 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _reader(url: str) -> None:
    try:
        with urllib.request.urlopen(url + "events", timeout=600) as stream:
            for _ in stream:
                pass
    except OSError:
        pass


def start_page(
    options: list[str], entry: list[str] | None = None
) -> tuple[subprocess.Popen[str], str, list[str], threading.Thread]:
    """``run --web`` on any free port with ``options``: the process, its page's address, its
    stderr's lines as they come, and the thread that reads them (also bench/hostile_load.py);
    ``entry``: what to run instead of ``-m firmware_host``."""
    entry = entry or ["-m", "firmware_host"]
    command = [sys.executable, *entry, "run", "--web", "127.0.0.1:0", *options]
    proc = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    url = None
    for line in proc.stderr:
        if "live page: " in line:
            url = line.split("live page: ")[1].split()[0]
            break
    if url is None:
        raise SystemExit("the daemon did not start its page")
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True)
    reader.start()
    return proc, url, err, reader


def measure(minutes: float, seed: int, clients: int) -> dict:
    sys.path.insert(0, str(ROOT / "tests"))
    from test_report import chromium  # Debian's chromium, driven the way the tests drive it

    options = ["--speed", "1", "--minutes", str(minutes), "--seed", str(seed), "--json"]
    proc, url, err, _ = start_page(options)
    for _ in range(clients):
        threading.Thread(target=_reader, args=(url,), daemon=True).start()
    browser = chromium()
    try:
        browser.get(url)
        started = time.monotonic()
        while proc.poll() is None:
            time.sleep(1.0)
            n = browser.execute_script("return window.latencies.length")
            print(f"  {time.monotonic() - started:5.0f} s: {n} verdicts seen", file=sys.stderr)
        latencies = browser.execute_script("return window.latencies")
    finally:
        browser.quit()
        proc.wait(60)
    ms = sorted(x * 1000 for x in latencies)
    summary = next((line for line in err if "end of match" in line), "")
    lag = re.search(r"p99 ([\d.]+) ms, max ([\d.]+) ms", summary)
    return {
        "verdicts": len(ms),
        "clients": clients + 1,
        "p50_ms": round(statistics.median(ms), 1) if ms else None,
        "p99_ms": round(ms[min(len(ms) - 1, int(0.99 * len(ms)))], 1) if ms else None,
        "max_ms": round(ms[-1], 1) if ms else None,
        "release_p99_ms": float(lag.group(1)) if lag else None,
        "release_max_ms": float(lag.group(2)) if lag else None,
        "daemon_summary": summary.strip(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--clients", type=int, default=20, help="event-stream readers beside it")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = measure(args.minutes, args.seed, args.clients)
    if args.json:
        print(json.dumps(figures))
        return
    print(
        f"page latency over {figures['verdicts']} verdicts with {figures['clients']} pages open: "
        f"p50 {figures['p50_ms']} ms, p99 {figures['p99_ms']} ms, max {figures['max_ms']} ms; "
        f"the daemon's release lag meanwhile p99 {figures['release_p99_ms']} ms, "
        f"max {figures['release_max_ms']} ms"
    )
    print(figures["daemon_summary"])


if __name__ == "__main__":
    main()
