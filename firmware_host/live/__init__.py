"""The live daemon: the reader, the engine that judges, the numba warm-up and its cache."""
