"""The typer commands, the one error boundary and the launch tricks."""
