"""The club edge: a table's daemon on an MQTT broker (docs/club.md).

It sits above the daemon: the daemon's sinks hand it what the table decided,
and nothing below (protocol, rules, timing, fusion, the daemon) imports it.
"""
