"""mqtts:// on a real Mosquitto TLS listener: the table checks the broker against the club's CA.

The certificates are made here with ``openssl`` (a club CA, the broker's
certificate for 127.0.0.1); a table given another CA never connects, and
what it publishes waits in its spool.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from club_util import Subscriber, wait_for
from outside_parts import require

from firmware_host.mqtt.broker import Mosquitto
from firmware_host.mqtt.publisher import TablePublisher, Tls
from firmware_host.mqtt.spool import Spool
from firmware_host.mqtt.topics import broker_url

EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def openssl(*args: str | Path) -> None:
    subprocess.run([require("openssl"), *map(str, args)], check=True, capture_output=True)


def ca(folder: Path, name: str) -> tuple[Path, Path]:
    crt, key = folder / f"{name}.crt", folder / f"{name}.key"
    openssl("req", "-x509", *EC, "-keyout", key, "-out", crt, "-days", "1", "-subj", f"/CN={name}")
    return crt, key


@pytest.fixture
def tls_broker(tmp_path):
    require("mosquitto")
    club_ca, club_key = ca(tmp_path, "club-ca")
    crt, key, csr = tmp_path / "broker.crt", tmp_path / "broker.key", tmp_path / "broker.csr"
    openssl("req", *EC, "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1")
    (tmp_path / "san").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", csr, "-CA", club_ca, "-CAkey", club_key, "-CAcreateserial",
            "-out", crt, "-days", "1", "-extfile", tmp_path / "san")  # fmt: skip
    broker = Mosquitto(tmp_path / "broker", tls=(crt, key))
    broker.start()
    yield broker, club_ca
    broker.stop()


def verdict(shot: int) -> dict:
    return {"kind": "verdict", "shot": shot, "t_us": shot, "verdict": "legal", "rules": []}


def test_a_table_publishes_over_tls_and_refuses_a_broker_its_ca_did_not_sign(tls_broker, tmp_path):
    broker, club_ca = tls_broker
    url = broker_url(broker.url)
    assert url.tls
    stranger_ca, _ = ca(tmp_path, "other-ca")
    subscriber = Subscriber(broker.url, tls=Tls(ca=str(club_ca)))  # as the club page, over TLS
    good = TablePublisher(url, "t1", Spool(tmp_path / "t1.sqlite"), tls=Tls(ca=str(club_ca)))
    fooled = TablePublisher(url, "t2", Spool(tmp_path / "t2.sqlite"), tls=Tls(ca=str(stranger_ca)))
    try:
        for table in (good.start(), fooled.start()):
            table.line(verdict(1), None, None)
        wait_for(lambda: subscriber.lines("t1"), 10, "t1's verdict over TLS")
        time.sleep(2.0)
        assert subscriber.lines("t1") == [verdict(1)]
        assert not fooled.connected and fooled.queued >= 1 and subscriber.lines("t2") == []
    finally:
        good.close(1.0)
        fooled.close(0.0)
        subscriber.close()
