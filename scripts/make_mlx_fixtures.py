"""Write the MLX fixtures (fixtures/mlx/): a tiny random Llama quantised by mlx-lm at every bit width
and group size it writes, kept as header snapshots.

Needs mlx and mlx-lm (``pip install "mlx[cpu]" mlx-lm``; not a project dependency: the tests read the
committed snapshots). Run from the repository root with that environment's Python, then with the
project's ``inspect`` on PATH for ``inspect save``:

    python scripts/make_mlx_fixtures.py /tmp/mlx-work

The source model is written with the safetensors library (hidden 128, MLP 256, 2 layers, 4 heads,
2 KV heads, vocabulary 256, untied): 361,088 parameters, the sum of its tensors' element counts.
Each quantised copy's bits per weight is mlx-lm's own ``compute_bits_per_weight``, the figure
``mlx_lm.convert`` prints ("Quantized model with N bits per weight."); the script prints it and
fixtures/mlx/SOURCE.txt records it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
#: (folder, bits, group size): the widths and groups of this round's fixtures
VARIANTS = (("tiny-llama-2bit-g32", 2, 32), ("tiny-llama-3bit", 3, 64), ("tiny-llama-5bit", 5, 64),
            ("tiny-llama-6bit-g128", 6, 128))


def source_model(folder: Path) -> None:
    from safetensors.numpy import save_file

    hidden, inter, layers, heads, kv, vocab = 128, 256, 2, 4, 2, 256
    hd = hidden // heads
    rng = np.random.default_rng(0)
    shapes = {"model.embed_tokens.weight": (vocab, hidden), "model.norm.weight": (hidden,),
              "lm_head.weight": (vocab, hidden)}
    for i in range(layers):
        p = f"model.layers.{i}."
        shapes |= {p + "self_attn.q_proj.weight": (heads * hd, hidden),
                   p + "self_attn.k_proj.weight": (kv * hd, hidden),
                   p + "self_attn.v_proj.weight": (kv * hd, hidden),
                   p + "self_attn.o_proj.weight": (hidden, heads * hd),
                   p + "mlp.gate_proj.weight": (inter, hidden), p + "mlp.up_proj.weight": (inter, hidden),
                   p + "mlp.down_proj.weight": (hidden, inter), p + "input_layernorm.weight": (hidden,),
                   p + "post_attention_layernorm.weight": (hidden,)}
    folder.mkdir(parents=True, exist_ok=True)
    save_file({n: (rng.standard_normal(s) * 0.02).astype(np.float16) for n, s in shapes.items()},
              str(folder / "model.safetensors"))
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
              "intermediate_size": inter, "num_hidden_layers": layers, "num_attention_heads": heads,
              "num_key_value_heads": kv, "vocab_size": vocab, "max_position_embeddings": 512,
              "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "torch_dtype": "float16"}
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    print("source parameters:", sum(int(np.prod(s)) for s in shapes.values()))


def main(work: Path) -> None:
    import mlx_lm.utils as u

    source = work / "source"
    source_model(source)
    for name, bits, group in VARIANTS:
        model, config = u.load_model(source)
        model, config = u.quantize_model(model, config, group_size=group, bits=bits)
        out = work / name
        out.mkdir(parents=True, exist_ok=True)
        u.save_model(out, model)
        u.save_config(config, out / "config.json")
        print(f"{name}: Quantized model with {u.compute_bits_per_weight(model):.3f} bits per weight.")
        target = ROOT / "fixtures" / "mlx" / name
        subprocess.run(["inspect", "save", str(out), "-o", str(target), "--force"], check=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
