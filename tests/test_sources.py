"""Every kind of source: a file, folders with and without an index, the HF cache, snapshots."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import save_real, tiny_llama, write_layout

from inspector import errors
from inspector.analysis.facts.report import other_weight_files
from inspector.analysis.facts.stats import summarize
from inspector.sources.resolve import open_checkpoint, open_local


def tiny_folder(root: Path, shards: int = 1, index: bool = True, tied: bool = False) -> tuple[Path, int]:
    config, entries = tiny_llama(tied=tied)
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps(config))
    chunks = [entries[i::shards] for i in range(shards)]
    weight_map = {}
    total = 0
    for i, chunk in enumerate(chunks):
        name = "model.safetensors" if shards == 1 else f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        save_real(root / name, {n: (d, s) for n, d, s in chunk})
        weight_map.update({n: name for n, _, _ in chunk})
    params = sum(int(__import__("math").prod(s)) for _, _, s in entries)
    total = params * 4
    if index and shards > 1:
        (root / "model.safetensors.index.json").write_text(
            json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    return root, params


def test_single_file(tmp_path: Path) -> None:
    folder, params = tiny_folder(tmp_path / "m")
    c = open_checkpoint(str(folder / "model.safetensors"))
    assert c.provenance.origin == "file"
    assert summarize(c).parameters == params
    assert c.config is not None and c.config["hidden_size"] == 8  # the sibling config.json


def test_folder_with_one_file(tmp_path: Path) -> None:
    folder, params = tiny_folder(tmp_path / "m")
    c = open_checkpoint(str(folder))
    assert (c.provenance.origin, len(c.headers), summarize(c).parameters) == ("folder", 1, params)


def test_sharded_folder_with_index(tmp_path: Path) -> None:
    folder, params = tiny_folder(tmp_path / "m", shards=3)
    c = open_checkpoint(str(folder))
    assert len(c.headers) == 3 and c.index is not None
    assert summarize(c).parameters == params


def test_shards_without_index_are_read_in_natural_order(tmp_path: Path) -> None:
    folder, params = tiny_folder(tmp_path / "m", shards=3, index=False)
    c = open_checkpoint(str(folder))
    assert [h.file for h in c.headers] == sorted(h.file for h in c.headers)
    assert c.index is None and summarize(c).parameters == params
    # names whose text order differs from their natural order: part-2 before part-10
    other = tmp_path / "n"
    for i in (10, 2, 1):
        save_real(other / f"part-{i}.safetensors", {f"t{i}": ("F32", (i,))})
    c = open_checkpoint(str(other))
    assert [h.file for h in c.headers] == ["part-1.safetensors", "part-2.safetensors", "part-10.safetensors"]
    assert sorted(h.file for h in c.headers) != [h.file for h in c.headers]  # plain text order would differ


def test_index_naming_a_missing_shard_is_an_invalid_checkpoint(tmp_path: Path) -> None:
    folder, _ = tiny_folder(tmp_path / "m", shards=2)
    (folder / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(errors.InvalidCheckpointError, match=r"the index names 1 shard\(s\) it does not have"):
        open_checkpoint(str(folder))


def test_hf_cache_layout(tmp_path: Path) -> None:
    """models--org--name/{blobs,refs,snapshots/<sha>} with symlinks into blobs, as the Hub cache."""
    repo = tmp_path / "hub" / "models--acme--tiny"
    sha = "0123456789abcdef0123456789abcdef01234567"
    src, params = tiny_folder(tmp_path / "src", shards=2)
    snap = repo / "snapshots" / sha
    snap.mkdir(parents=True)
    (repo / "blobs").mkdir()
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(sha)
    for f in src.iterdir():
        blob = repo / "blobs" / f"blob-{f.name}"
        blob.write_bytes(f.read_bytes())
        os.symlink(os.path.relpath(blob, snap), snap / f.name)
    for target in (snap, repo):
        c = open_local(target)
        assert (c.provenance.origin, c.provenance.repo_id, c.provenance.revision) == ("hf-cache", "acme/tiny", sha)
        assert summarize(c).parameters == params


def test_files_in_subfolders_are_reported_not_counted(tmp_path: Path) -> None:
    folder, params = tiny_folder(tmp_path / "m")
    (folder / "original").mkdir()
    (folder / "original" / "consolidated.00.pth").write_bytes(b"\0" * 100)
    save_real(folder / "original" / "extra.safetensors", {"x": ("F32", (1000,))})
    c = open_checkpoint(str(folder))
    assert summarize(c).parameters == params
    assert {f.path for f in other_weight_files(c)} == {"original/consolidated.00.pth", "original/extra.safetensors"}


def test_full_size_sparse_files(tmp_path: Path) -> None:
    _, entries = tiny_llama(hidden=4096, inter=14336, vocab=128256, heads=32, kv=8, layers=1, dtype="BF16")
    write_layout(tmp_path / "m" / "model.safetensors", entries)
    c = open_checkpoint(str(tmp_path / "m"))
    assert c.headers[0].file_size == c.headers[0].expected_file_size > 1_000_000_000


@pytest.mark.parametrize(("setup", "error", "text"), [
    (lambda p: None, errors.NotFoundError, "no such file or folder"),
    (lambda p: p.mkdir(), errors.NotFoundError, "no weight files"),
    (lambda p: (p.mkdir(), (p / "pytorch_model.bin").write_bytes(b"PK")), errors.InvalidCheckpointError,
     "pytorch_model.bin"),
])
def test_bad_folders(tmp_path: Path, setup, error, text: str) -> None:
    target = tmp_path / "x"
    setup(target)
    with pytest.raises(error, match=text):
        open_checkpoint(str(target))


def test_snapshot_manifest_cannot_point_outside(tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    snap.mkdir()
    (snap / "inspector-snapshot.json").write_text(json.dumps({
        "format": "inspector-header-snapshot", "version": 1, "repo_id": None, "revision": None,
        "files": [{"path": "a.safetensors", "size": 10, "header": "../../etc/passwd"}]}))
    with pytest.raises(errors.InvalidCheckpointError, match=r"files\[0\]\.header: .*refusing it"):
        open_checkpoint(str(snap))


@pytest.mark.parametrize("compress_over", [None, 10])
def test_a_packed_snapshot_reads_as_the_same_headers_one_file_each(tmp_path: Path, compress_over) -> None:
    """``write_snapshot(pack=True)`` (the header cache's layout) against the per-file layout of the same
    headers: the same records and bytes, the headers in one file (raw, or gzip-compressed whole)."""
    from inspector.sources.snapshot import write_snapshot

    folder, params = tiny_folder(tmp_path / "m", shards=3)
    headers = {}
    for f in sorted(folder.glob("*.safetensors")):
        data = f.read_bytes()
        headers[f.name] = data[: 8 + int.from_bytes(data[:8], "little")]
    files = [(f.name, f.stat().st_size) for f in sorted(folder.iterdir())]
    stored = {n: (folder / n).read_bytes() for n in ("config.json", "model.safetensors.index.json")}
    for name, pack in (("apart", False), ("packed", True)):
        write_snapshot(tmp_path / name, repo_id="acme/tiny", revision=None, files=files, headers=headers,
                       stored=stored, provenance="test", compress_over=compress_over, pack=pack)
    pack_name = "headers.pack" if compress_over is None else "headers.pack.gz"
    assert sorted(p.name for p in (tmp_path / "packed").iterdir()) == sorted(
        ["inspector-snapshot.json", "config.json", "model.safetensors.index.json", pack_name])
    apart, packed = open_checkpoint(str(tmp_path / "apart")), open_checkpoint(str(tmp_path / "packed"))
    assert {h.file: h.head for h in packed.headers} == headers  # the bytes the files begin with
    assert [h.tensors for h in packed.headers] == [h.tensors for h in apart.headers]
    assert summarize(packed).parameters == params


def _packed(tmp_path: Path, spans: list[object], pack: bytes, name: str = "headers.pack") -> Path:
    snap = tmp_path / "snap"
    snap.mkdir()
    (snap / name).write_bytes(pack)
    (snap / "inspector-snapshot.json").write_text(json.dumps({
        "format": "inspector-header-snapshot", "version": 3, "repo_id": None, "revision": None,
        "files": [{"path": f"m-{i}.safetensors", "size": 1 << 20, "header": name, "span": span}
                  for i, span in enumerate(spans)]}))
    return snap


def _header(n: int) -> bytes:
    body = json.dumps({"w": {"dtype": "F32", "shape": [n], "data_offsets": [0, 4 * n]}}).encode()
    return len(body).to_bytes(8, "little") + body


@pytest.mark.parametrize(("spans", "text"), [
    ([[0, 10**6]], r"ends before the span \[0, 1,000,000\]"),  # past the pack's end
    ([[0, "12"]], r"span is not \[offset, length\]"),
    ([[5]], r"span is not \[offset, length\]"),
    ([[-1, 4]], r"span is not \[offset, length\]"),
    ([[0, 2**40]], r"a span of 1,099,511,627,776 bytes, more than such a header may be"),
    ([[0, 2**64]], r"span is not \[offset, length\]"),
])
def test_a_packed_snapshot_s_bad_spans_are_refused_by_name(tmp_path: Path, spans, text) -> None:
    snap = _packed(tmp_path, spans, _header(3))
    with pytest.raises(errors.InvalidCheckpointError, match=text):
        open_checkpoint(str(snap))


def test_a_pack_is_read_only_as_far_as_its_spans_reach(tmp_path: Path, monkeypatch) -> None:
    """Two headers in the first 140 bytes of a 64 MiB pack: each is read by its span, not the pack."""
    from inspector import safeio
    from inspector.sources import snapshot

    a, b = _header(3), _header(5)
    snap = _packed(tmp_path, [[0, len(a)], [len(a), len(b)]], a + b + b"\0" * (64 << 20))
    asked: list[int] = []
    real = safeio.read_regular
    monkeypatch.setattr(snapshot, "read_regular", lambda path, limit, offset=0: asked.append(limit) or real(
        path, limit, offset))
    c = open_checkpoint(str(snap))
    assert [h.head for h in c.headers] == [a, b]
    assert asked == [snapshot.MANIFEST_BUDGET, len(a), len(b)]  # the manifest, then each header's span


def test_a_gzip_bomb_pack_is_refused(tmp_path: Path) -> None:
    """A member of the compressed pack that inflates past what a safetensors header may be (100,000,000
    bytes, the Rust reference's limit) is refused as a header file's would be; a span that does not start
    at a member is refused too."""
    import zlib

    head = _header(3)
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)  # a gzip member
    member = packer.compress(head) + b"".join(packer.compress(bytes(1 << 20)) for _ in range(100)) + packer.flush()
    assert len(member) < 1 << 20
    for where, span, text in (("off", [0, len(member)], "corrupt compressed data"),
                              ("bomb", [7, len(member)], "compression bomb")):
        (tmp_path / where).mkdir()
        snap = _packed(tmp_path / where, [span], b"\x00" * 7 + member, "headers.pack.gz")
        with pytest.raises(errors.InvalidCheckpointError, match=text):
            open_checkpoint(str(snap))


def test_snapshot_save_round_trip(tmp_path: Path) -> None:
    from inspector.sources.snapshot import write_snapshot

    folder, params = tiny_folder(tmp_path / "m", shards=2)
    headers = {}
    for f in sorted(folder.glob("*.safetensors")):
        data = f.read_bytes()
        n = int.from_bytes(data[:8], "little")
        headers[f.name] = data[: 8 + n]
    files = [(f.name, f.stat().st_size) for f in sorted(folder.iterdir())]
    stored = {n: (folder / n).read_bytes() for n in ("config.json", "model.safetensors.index.json")}
    write_snapshot(tmp_path / "snap", repo_id="acme/tiny", revision=None, files=files, headers=headers,
                   stored=stored, provenance="test", compress_over=10)
    a, b = summarize(open_checkpoint(str(folder))), summarize(open_checkpoint(str(tmp_path / "snap")))
    assert a.parameters == b.parameters == params
    assert [s.size for s in a.shards] == [s.size for s in b.shards]
    # refuses to overwrite a folder that is not a snapshot
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "mine.txt").write_text("user data")
    with pytest.raises(errors.UsageError):
        write_snapshot(tmp_path / "keep", repo_id=None, revision=None, files=[], headers={}, stored={},
                       provenance="")
    assert (tmp_path / "keep" / "mine.txt").read_text() == "user data"
