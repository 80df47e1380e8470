"""The model of the architecture: stacks of typed layers and the registry of mixer and attention kinds, each
owning its KV, state, FLOPs and activation behaviour."""
