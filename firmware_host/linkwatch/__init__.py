"""Watching the serial link live: counters fed by the reader, a terminal view drawn from them.

An edge package above the pure cores (protocol, timing): it may import them,
never the reverse.
"""
