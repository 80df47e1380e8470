"""The only layer that writes to the terminal."""
