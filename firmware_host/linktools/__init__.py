"""Tools for the serial link itself: the wire as recorded, link health, a frame sender,
pcapng and a Wireshark dissector (docs/link-debugging.md).

An edge above the pure cores: it reads recordings and ports, and never
defines a wire field (everything comes from :mod:`protocol.catalogue`).
"""
