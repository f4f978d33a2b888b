"""The virtual table: physics, sensor model and a real wire peer (pty or capture)."""
