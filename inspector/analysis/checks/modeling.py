"""Audit against the modeling code (the ``torch`` extra): what would ``from_pretrained`` say?

Builds the model class named in config.json on PyTorch's meta device (no memory, no weights),
takes its expected state dict, and brings the checkpoint's names to it the way transformers'
loader does: its registered renamings (``block_sparse_moe`` → ``mlp``) and weight converters (per-
expert ``w1``/``w3`` stacked and concatenated into a fused ``gate_up_proj``), run on meta tensors of
the checkpoint's shapes with transformers' own conversion ops; a missing or extra base-model
prefix; tied weights. Then it lists missing keys, unexpected keys and shape mismatches.

This leans on transformers' loading internals (``conversion_mapping``, ``core_model_loading``),
which change between releases: where they are not there, converted tensors are reported as not
checked instead of guessed.
"""

from __future__ import annotations

import re
from collections import defaultdict
from types import ModuleType
from typing import TYPE_CHECKING

from inspector.analysis.checks.audit import AuditInput, Finding
from inspector.analysis.facts.config import quiet_transformers, transformers_installed
from inspector.errors import UsageError

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedModel


def modeling_check(inp: AuditInput) -> list[Finding]:
    try:
        # deferred: 1071 ms at import (torch)
        import torch
    except ImportError:
        raise UsageError("⟨modeling⟩ builds the model on PyTorch's meta device and needs torch",
                         hint="pip install 'hf-inspector[torch]' (torch==2.13.0 installs a CPU build)") from None
    if not transformers_installed():
        raise UsageError("⟨modeling⟩ builds the model with transformers, which is not installed",
                         hint="pip install 'hf-inspector[torch]' (transformers and torch; torch==2.13.0 installs "
                              "a CPU build)")
    if not inp.config:
        return [Finding("model.unavailable", "warning", "no config.json: the model class is unknown")]
    with quiet_transformers():
        # deferred: 2091 ms at import (transformers)
        import transformers
        from transformers import AutoConfig

        try:
            model_type = inp.config.get("model_type")
            if not isinstance(model_type, str):
                raise ValueError("config.json names no model_type")
            config = AutoConfig.for_model(model_type, **{k: v for k, v in inp.config.items() if k != "model_type"})
            arch = next((getattr(transformers, a) for a in (config.architectures or []) if hasattr(transformers, a)),
                        None)
            if arch is None:
                # deferred: 2131 ms at import (transformers)
                from transformers import AutoModel

                with torch.device("meta"):
                    model = AutoModel.from_config(config)  # type: ignore[no-untyped-call]
            else:
                with torch.device("meta"):
                    model = arch(config)
        except Exception as exc:
            return [Finding("model.unavailable", "warning",
                            f"transformers cannot build this model ({type(exc).__name__}: {str(exc)[:120]})")]
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    declared = {n for n, _ in model.named_buffers()}
    tensors = {t.name: t for h in inp.headers.values() for t in h.tensors}
    shapes = {name: t.shape for name, t in tensors.items()}
    files = {name: t.file for name, t in tensors.items()}
    origin = {name: name for name in shapes}

    renamed, converted, unchecked = _convert(model, shapes, origin, torch)
    prefix = getattr(model, "base_model_prefix", "") or ""
    renamed = _align_prefix(renamed, expected, prefix)
    tied = _tied_targets(model, config)

    findings: list[Finding] = []
    for key, shape in sorted(renamed.items()):
        source = origin.get(key, key)
        if key in expected:
            if tuple(shape) != expected[key]:
                findings.append(Finding("model.shape-mismatch", "error",
                                        f"the model expects {list(expected[key])}, the checkpoint has {list(shape)}",
                                        files.get(source), source))
            continue
        leaf = key.rsplit(".", 1)[-1]
        ignored = [p for p in getattr(model, "_keys_to_ignore_on_load_unexpected", None) or [] if isinstance(p, str)]
        if key in declared or any(b.endswith("." + leaf) or b == leaf for b in declared):
            findings.append(Finding("model.undeclared-buffer", "info",
                                    "a buffer the modeling code recomputes and does not load (non-persistent)",
                                    files.get(source), source))
        elif any(re.search(p, key) for p in ignored):
            findings.append(Finding("model.ignored-key", "info",
                                    f"{type(model).__name__} ignores this key on load by design",
                                    files.get(source), source))
        else:
            findings.append(Finding("model.unexpected-key", "warning",
                                    f"{type(model).__name__} has no such key; from_pretrained would ignore it",
                                    files.get(source), source))
    for key in sorted(set(expected) - set(renamed) - tied - converted):
        findings.append(Finding("model.missing-key", "error",
                                f"{type(model).__name__} expects {list(expected[key])}: it would be randomly "
                                "initialised on load", None, key))
    for name in sorted(unchecked):
        findings.append(Finding("model.not-checked", "info", "converted by a transformers operation this "
                                                             "inspector does not simulate", files.get(name), name))
    return findings


def _pattern(text: str) -> re.Pattern[str]:
    if "\\" in text or text.startswith("^") or "(" in text:
        return re.compile(text)
    return re.compile(re.escape(text).replace(r"\*", r"(\d+)"))


def _convert(model: PreTrainedModel, shapes: dict[str, tuple[int, ...]], origin: dict[str, str],  # noqa: C901
             torch: ModuleType) -> tuple[dict[str, tuple[int, ...]], set[str], set[str]]:
    """Apply transformers' renamings and converters to the checkpoint's names and shapes."""
    try:
        # deferred: 2468 ms at import (transformers.conversion_mapping, transformers.core_model_loading)
        from transformers.conversion_mapping import get_model_conversion_mapping
        from transformers.core_model_loading import WeightConverter, WeightRenaming
    except ImportError:
        return dict(shapes), set(), set()
    try:
        transforms = get_model_conversion_mapping(model)
    except Exception:
        return dict(shapes), set(), set()
    current = dict(shapes)
    converted_targets: set[str] = set()
    unchecked: set[str] = set()
    for transform in transforms:
        sources = list(transform.source_patterns)
        targets = list(transform.target_patterns)
        if isinstance(transform, WeightRenaming) and len(sources) >= 1 and len(targets) == 1:
            renamed: dict[str, tuple[int, ...]] = {}
            for key, shape in current.items():
                new = key
                for src in sources:
                    new = _pattern(src).sub(targets[0].replace("\\", ""), new)
                renamed[new] = shape
                if new != key:
                    origin[new] = origin.pop(key, key)
            current = renamed
        elif isinstance(transform, WeightConverter) and len(targets) == 1:
            Items = list[tuple[int, str, tuple[int, ...]]]
            groups: dict[str, dict[str, Items]] = defaultdict(lambda: defaultdict(list))
            for key in list(current):
                for src in sources:
                    m = _pattern(src).search(key)
                    if m:
                        index = int(m.group(1)) if m.groups() else 0
                        target = key[: m.start()] + targets[0]
                        groups[target][src].append((index, key, current[key]))
                        break
            for target, per_source in groups.items():
                members = [k for items in per_source.values() for _, k, _ in items]
                try:
                    data = {src: [torch.empty(s, device="meta") for _, _, s in sorted(items)]
                            for src, items in per_source.items()}
                    out = data
                    for op in transform.operations:
                        out = op.convert(out, sources, targets)
                    (result,) = out.values()
                    for k in members:
                        current.pop(k, None)
                    current[target] = _shape_of(result)
                    origin[target] = members[0]
                    converted_targets.add(target)
                except Exception:
                    unchecked.update(origin.get(k, k) for k in members)
                    for k in members:
                        current.pop(k, None)
                    converted_targets.add(target)
    return current, converted_targets, unchecked


def _shape_of(value: object) -> tuple[int, ...]:
    """A converted tensor's shape (transformers' converters give meta tensors)."""
    shape = getattr(value, "shape", None)
    if shape is None:
        raise TypeError(f"a converter gave {type(value).__name__}, not a tensor")
    return tuple(int(d) for d in shape)


def _align_prefix(keys: dict[str, tuple[int, ...]], expected: dict[str, tuple[int, ...]],
                  prefix: str) -> dict[str, tuple[int, ...]]:
    """A checkpoint of the base model loaded into a task model, or the other way round."""
    if not prefix:
        return keys
    hits = sum(k in expected for k in keys)
    added = {f"{prefix}.{k}": v for k, v in keys.items()}
    stripped = {k.removeprefix(prefix + "."): v for k, v in keys.items()}
    best = max((keys, added, stripped), key=lambda d: sum(k in expected for k in d))
    return best if sum(k in expected for k in best) > hits else keys


def _tied_targets(model: PreTrainedModel, config: PretrainedConfig) -> set[str]:
    tied = getattr(model, "_tied_weights_keys", None) or {}
    if not getattr(config, "tie_word_embeddings", False) and not getattr(
            getattr(config, "get_text_config", lambda: config)(), "tie_word_embeddings", False):
        return set()
    return set(tied if isinstance(tied, (list, set, tuple)) else tied.keys())
