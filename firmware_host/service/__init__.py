"""Running beside a table as a service: systemd's notify protocol and the health status."""
