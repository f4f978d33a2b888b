"""Pictures of shots for the people at the table (matplotlib): an edge above the cores."""
