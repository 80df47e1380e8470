"""What it takes to fine-tune a model: the training step's terms and peak, its options, and the registries of
methods, optimizers, precisions, loss kernels and stages; LoRA, MoE experts and activations."""
