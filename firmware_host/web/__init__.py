"""The live page served by the daemon (``run --web``): an edge above the cores."""
