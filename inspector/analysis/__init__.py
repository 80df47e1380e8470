"""Pure functions over a Checkpoint: no I/O, no printing."""
