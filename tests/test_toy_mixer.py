"""Adding a kind of mixer (an attention kind) is one module: a ``mixers.Mixing`` registered with
``mixers.register``, nothing else (issue 49). The toy below is a windowed attention whose word in the config's
``layer_types`` is ``toy_window`` and whose window the config gives as ``toy_window``; a layer of it caches
min(context, window) tokens, as a sliding window does. It is seen in the KV cache and FLOPs, the fit, and every
output format of ``estimate``; a config without the window leaves the layers full attention."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import tiny_llama, toy_strategy, write_layout

from inspector.analysis.structure import mixers

TOY_MODULE = '''
from inspector.analysis.structure.mixers import Mixing


def _attended(window, t):
    return min(t, window) if window else t


def _attended_prefix(window, t):
    w = min(t, window) if window else t
    return w * (w + 1) // 2 + (t - w) * w


def _window(config):
    value = config.raw.get("toy_window")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


MIXER = Mixing("toy", caches=True, windowed=True, attended=_attended, attended_prefix=_attended_prefix,
               keeps_words="toy-window layers keep at most", reach_words="min(context, toy window ",
               attends_words="toy-window layers attend to at most", type_words=("toy_window",), window=_window)
'''
LAYERS, HIDDEN, HEADS, KV_HEADS, WINDOW, CONTEXT = 4, 64, 4, 2, 32, 100


@pytest.fixture
def toy(tmp_path: Path):
    with toy_strategy(tmp_path / "toymod", "toymixer", TOY_MODULE, mixers, "MIXER") as folder:
        yield folder


def _model(root: Path, window: int | None) -> Path:
    config, entries = tiny_llama(layers=LAYERS, hidden=HIDDEN, inter=128, vocab=128, heads=HEADS, kv=KV_HEADS,
                                 dtype="BF16")
    config["layer_types"] = ["toy_window_attention", "full_attention"] * (LAYERS // 2)
    config["max_position_embeddings"] = 4096
    if window is not None:
        config["toy_window"] = window
    folder = root / f"model-w{window}"
    write_layout(folder / "model.safetensors", entries)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_a_mixer_registered_from_outside_shows_everywhere(toy: Path, cli, tmp_path: Path) -> None:
    import inspector

    folder = _model(tmp_path, WINDOW)
    per_layer_token = 2 * KV_HEADS * (HIDDEN // HEADS) * 2  # K and V, KV heads × head dim, 2 B (bf16)
    kv = inspector.estimate(str(folder), context=CONTEXT).estimate.kv
    assert kv is not None and kv.bytes is not None
    # two full layers keep every token, two toy layers min(context, window): the kind's own rule, written out
    assert kv.bytes.value == per_layer_token * (2 * CONTEXT + 2 * min(CONTEXT, WINDOW))

    # the stack's layer kinds ("toy 32, full, toy 32, full"), or the attention FLOPs' formula in the kind's words
    shown = {"table": f"toy {WINDOW}", "json": f'"kind": "toy {WINDOW}"', "html": f'"kind":"toy {WINDOW}"',
             "markdown": f"2 toy layers × min(context, toy window {WINDOW})"}
    for fmt, words in shown.items():
        out = tmp_path / f"estimate.{fmt}"
        r = cli("estimate", str(folder), "--context", str(CONTEXT), "--format", fmt,
                *(["-o", str(out)] if fmt == "html" else []))
        assert r.code == 0, (fmt, r.err)
        assert words in (out.read_text() if fmt == "html" else r.out), fmt
    explained = cli("estimate", str(folder), "--context", str(CONTEXT), "--explain").out
    assert f"2 toy-window layers keep at most {WINDOW}" in explained
    assert "sliding" not in explained  # the words are the kind's own, not another kind's


def test_without_its_window_the_layers_are_full_attention(toy: Path, tmp_path: Path) -> None:
    import inspector

    kv = inspector.estimate(str(_model(tmp_path, None)), context=CONTEXT).estimate.kv
    assert kv is not None and kv.bytes is not None
    assert kv.bytes.value == 2 * KV_HEADS * (HIDDEN // HEADS) * 2 * LAYERS * CONTEXT


def test_unregistered_the_word_means_nothing(tmp_path: Path) -> None:
    """Without the toy registered, ``toy_window_attention`` is no kind's word: every layer attends in full."""
    import inspector

    assert "toy" not in mixers.MIXERS
    kv = inspector.estimate(str(_model(tmp_path, WINDOW)), context=CONTEXT).estimate.kv
    assert kv is not None and kv.bytes is not None
    assert kv.bytes.value == 2 * KV_HEADS * (HIDDEN // HEADS) * 2 * LAYERS * CONTEXT


def test_a_built_in_kind_cannot_be_registered_again_or_removed() -> None:
    with pytest.raises(ValueError, match="registered already"):
        mixers.register(mixers.MIXERS["sliding"])
    with pytest.raises(ValueError, match="built-in"):
        mixers.unregister("full")
