"""The link: bytes in and out of a serial port, commands to the hub, raw captures."""
