"""Signed frames (ICD §9, firmware 1.2): the tag, and the host's check of every frame.

A radio node (the cue tip, the keypad) can be imitated by anyone near the
table with a cheap transmitter; a good CRC proves nothing.  Once the host
holds the table's 32-byte key, a node whose bit is set in ``require`` signs
every frame: flags bit 1, then ``sig_ctr`` (u32, per node, never going
back) and the first 8 bytes of HMAC-SHA256(key, header ‖ payload ‖
sig_ctr), with the header's flags bit 0 cleared so a retransmission carries
the same tag.  :class:`SignatureCheck` decides each frame, in the ICD's
order: the tag first (a frame that does not prove the key proves nothing,
not even its counter), then the counter against the highest accepted from
that node.

>>> key = bytes(range(32))
>>> check = SignatureCheck(key, require=1 << 3)
>>> from protocol.framing import build_body
>>> body = build_body("CUE_CONTACT", seq=41, t_us=5, duration_us=1, peak_force_dn=2,
...                   sign_with=(key, 1000))
>>> check.decide(body[:-16], 1000, body[-16:-4])
'accept'
>>> check.decide(body[:-16], 1000, body[-16:-4])   # the same frame again, not a retransmission
'replayed'
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
from pathlib import Path

import numpy as np

from .catalogue import (
    FLAG_RETRANSMISSION,
    FLAG_SIGNED,
    HOST_NODE,
    KEY_SIZE,
    NODE_IDS,
    NODE_NAMES,
    TAG_SIZE,
    crc32,
)

ACCEPT, DUPLICATE = "accept", "duplicate"
UNSIGNED, BAD_TAG, REPLAYED = "unsigned", "bad_tag", "replayed"
REFUSALS = (UNSIGNED, BAD_TAG, REPLAYED)  # the per-node counts, in this order
HOST_BIT = 15  # require bit: host frames must be signed
#: The ICD's default when a key is set (docs/security.md): the two radio nodes.
DEFAULT_REQUIRE = (1 << NODE_IDS["cue"]) | (1 << NODE_IDS["keypad"])
STORE_NAME = "signing-counters.json"
#: SETUP_SIGNING sets the key, over the wired link only: it is never refused as unsigned
#: (the ICD's vector ``setup_signing`` is accepted under a ``require`` with bit 15).
SETUP_SIGNING = 0x83


def tag_of(key: bytes, signed_part: bytes, sig_ctr: int) -> bytes:
    """The 8-byte tag of a frame whose header and payload are ``signed_part`` (ICD §9)."""
    data = bytearray(signed_part)
    data[3] &= ~FLAG_RETRANSMISSION & 0xFF
    data += sig_ctr.to_bytes(4, "little")
    return hmac.new(key, bytes(data), hashlib.sha256).digest()[:TAG_SIZE]


def require_bit(node: int) -> int:
    """The bit of ``require`` that names this node (bit 15 for the host)."""
    return 1 << (HOST_BIT if node == HOST_NODE else node)


def new_key() -> bytes:
    """A fresh table key from the operating system's random source."""
    return secrets.token_bytes(KEY_SIZE)


def fingerprint(key: bytes) -> str:
    """What may be shown of a key (status, logs): 8 hex digits of its SHA-256, never the key."""
    return hashlib.sha256(key).hexdigest()[:8]


class CounterStore:
    """The highest accepted ``sig_ctr`` per node, kept across host restarts (ICD §9).

    One small JSON file in the state directory, replaced atomically (write,
    fsync, rename), so a crash leaves the old or the new file, never half of
    one.  The counters belong to one key: after a new key they start again
    (the file names the key's fingerprint, never the key).
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self, key: bytes) -> dict[int, int]:
        try:
            saved = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        if saved.get("key") != fingerprint(key):
            return {}
        return {int(node): int(ctr) for node, ctr in saved.get("highest", {}).items()}

    def save(self, key: bytes, highest: dict[int, int]) -> None:
        text = json.dumps({"key": fingerprint(key), "highest": highest}, sort_keys=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


class SignatureCheck:
    """The host's rules of ICD §9 for one table key: accept, or refuse and count per node.

    ``require``: bit n, node n must sign (bit 15: the host).  ``store``: where
    the highest counters survive a restart (the daemon's state directory);
    without one (``replay``, ``events``, ``decode``) the counters start empty
    and live as long as this object, so a capture read twice is not "replayed".
    """

    def __init__(self, key: bytes, require: int, store: CounterStore | None = None) -> None:
        if len(key) != KEY_SIZE:
            raise ValueError(f"a table key is {KEY_SIZE} bytes, not {len(key)}")
        self._key = key
        self.require = require
        self.store = store
        saved = store.load(key) if store is not None else {}
        self.highest = np.full(256, -1, np.int64)  # -1: nothing accepted yet
        for node, ctr in saved.items():
            self.highest[node] = ctr
        self._last_tag: dict[int, bytes] = {}
        self.refused = np.zeros((256, len(REFUSALS)), np.int64)
        self.verified = np.zeros(256, np.int64)
        self._unsaved = False
        self._lock = threading.Lock()  # the pipeline thread and the command link's save

    def __getstate__(self) -> dict[str, object]:
        """A pickled check (the daemon's checkpoint, firmware_host/checkpoint.py) holds
        neither the key nor the store: the key stays in its 0600 key file."""
        state = dict(self.__dict__)
        del state["_lock"], state["_key"]
        state["store"] = None
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state, _key=None, _lock=threading.Lock())

    def for_recording(self) -> SignatureCheck:
        """The same key and mask with counters from nothing and no store: a recording read
        again (a restart's resume) was checked once when it came in, and its frames are
        older than the counters this check keeps."""
        return SignatureCheck(self._key, self.require)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self._key)

    def setup_fields(self) -> dict[str, object]:
        """SETUP_SIGNING's payload (ICD §5): the one place the key leaves this object, for
        the wired link to the hub only."""
        return {"key": self._key, "require": self.require}

    def hold_mask(self) -> np.ndarray:
        """Per node what the decoder holds for :meth:`decide` (``StreamAccounts.hold``)."""
        hold = np.full(256, 2, np.int64)  # every signed frame is checked
        for node in (*range(HOST_BIT), HOST_NODE):
            if self.require & require_bit(node):
                hold[node] = 1  # and so is every unsigned one
        return hold

    def decide(self, signed_part: bytes, sig_ctr: int | None, tag: bytes | None) -> str:
        """``accept``, ``duplicate`` (a retransmission of the last accepted), or a refusal.

        ``signed_part``: the frame's header and payload as sent; ``sig_ctr``
        and ``tag`` are None for an unsigned frame.  A refusal is counted here.
        """
        node, flags = signed_part[2], signed_part[3]
        if sig_ctr is None or tag is None:
            if self.require & require_bit(node) and signed_part[1] != SETUP_SIGNING:
                return self._refuse(node, UNSIGNED)
            return ACCEPT
        if not hmac.compare_digest(tag_of(self._key, signed_part, sig_ctr), tag):
            return self._refuse(node, BAD_TAG)
        if sig_ctr <= self.highest[node]:
            retx = flags & FLAG_RETRANSMISSION
            if retx and sig_ctr == self.highest[node] and self._last_tag.get(node) == tag:
                return DUPLICATE
            return self._refuse(node, REPLAYED)
        self.highest[node] = sig_ctr
        self._last_tag[node] = tag
        self.verified[node] += 1
        self._unsaved = True
        return ACCEPT

    def sign_host(self) -> tuple[bytes, int] | None:
        """(key, sig_ctr) for the host's next new frame when ``require`` bit 15 says the hub
        wants them signed (ICD §9), else None.  The host's counter is kept with the nodes'
        and saved before the frame leaves, so it never repeats across restarts.  Called
        from the command link's thread; :meth:`save` is safe from both."""
        if not self.require & require_bit(HOST_NODE):
            return None
        with self._lock:
            ctr = max(int(self.highest[HOST_NODE]) + 1, 1)  # from 1, as the nodes
            self.highest[HOST_NODE] = ctr
            self._unsaved = True
        self.save()
        return self._key, ctr

    def _refuse(self, node: int, reason: str) -> str:
        self.refused[node, REFUSALS.index(reason)] += 1
        return reason

    def save(self) -> None:
        """Persist the counters if any moved; the daemon calls it before it releases events."""
        with self._lock:
            if self.store is not None and self._unsaved:
                self.store.save(self._key, self.highest_by_node())
                self._unsaved = False

    def highest_by_node(self) -> dict[int, int]:
        return {int(n): int(c) for n, c in enumerate(self.highest) if c >= 0}

    def counts(self) -> dict[str, dict[str, int]]:
        """Refusals per node name and reason, the non-zero ones (stats, status)."""
        out: dict[str, dict[str, int]] = {}
        for node in np.flatnonzero(self.refused.sum(axis=1)).tolist():
            name = NODE_NAMES.get(node, f"node {node}")
            out[name] = {r: int(c) for r, c in zip(REFUSALS, self.refused[node]) if c}
        return out


def sign_body(key: bytes, data: bytes, sig_ctr: int) -> bytes:
    """A frame's header and payload (``data``) as a signed body: flags bit 1 set, the
    counter, the tag, the CRC over all of it (what a firmware 1.2 node sends)."""
    signed = bytearray(data)
    signed[3] |= FLAG_SIGNED
    signed += sig_ctr.to_bytes(4, "little") + tag_of(key, bytes(signed), sig_ctr)
    return bytes(signed) + crc32(bytes(signed)).to_bytes(4, "little")
