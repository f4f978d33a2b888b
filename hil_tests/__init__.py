"""Hardware-in-the-loop tests: a corpus of captures replayed in CI, the same suite live on a rig."""
