"""How two checkpoints relate: the diff and its causes, tensor alignment, compare, values read side by side,
lineage and its samples, and adapters against their base."""
