"""Fusion: hub-ordered frames into EVENTS.md events (shots, contacts, attribution).

Entry points: :class:`stream.EventStream` (live) and
:func:`stream.events_from_capture` (batch).
"""
