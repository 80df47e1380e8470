"""What it takes to run a model: the estimate (weights, KV cache, FLOPs), quantisation-aware counts, the budgets a
user types, the fit, the parallel plan, the files listing, and the serving engines (one module each)."""
