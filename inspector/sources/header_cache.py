"""The header cache: header snapshots of Hub repos, keyed by endpoint, repo and commit.

Layout, beside huggingface_hub's own cache::

    $HF_HOME/inspector/hub/<endpoint key>/models--org--name/refs/<branch>      a commit id
    $HF_HOME/inspector/hub/<endpoint key>/models--org--name/snapshots/<sha>/   a header snapshot

The endpoint key is the endpoint's host and a hash of its URL without credentials, so a mirror's
content is never served for the Hub and no password reaches the disk. Repo ids, branch names and
commit ids are validated before they become paths (``safeio``); snapshots are written atomically.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from inspector.errors import InspectorError
from inspector.safeio import COMMIT, commit_id, drop_link, inside, read_ref, repo_id, write_atomic
from inspector.sources.transport import public_endpoint


def endpoint_key(endpoint: str) -> str:
    public = public_endpoint(endpoint.rstrip("/"))
    host = re.sub(r"[^A-Za-z0-9.-]", "_", urlsplit(public).hostname or "endpoint")[:64]
    return f"{host}-{hashlib.sha256(public.encode()).hexdigest()[:12]}"


def hf_cache_repo(repo_id: str) -> Path:
    """Where the Hugging Face cache (``HF_HUB_CACHE``) keeps ``repo_id``: huggingface_hub's
    ``file_download.repo_folder_name`` layout (``models--org--name``), without importing that module."""
    # deferred: 1 ms at import (huggingface_hub)
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE) / constants.REPO_ID_SEPARATOR.join(["models", *repo_id.split("/")])


class HeaderCache:
    """Header snapshots keyed by endpoint, repo and commit SHA."""

    def __init__(self, root: Path | None = None, endpoint: str | None = None) -> None:
        # deferred: 1 ms at import (huggingface_hub)
        from huggingface_hub import constants

        if root is None:
            root = Path(constants.HF_HOME) / "inspector" / "hub"
        self.root = root / endpoint_key(endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT)

    def _repo(self, repo: str) -> Path:
        return inside(self.root, "models--" + repo_id(repo).replace("/", "--"), "repo id")

    def path(self, repo: str, sha: str) -> Path:
        return inside(self._repo(repo), f"snapshots/{commit_id(sha, 'commit id')}", "commit id")

    def holds(self, repo: str) -> bool:
        """Whether anything is kept for ``repo`` (a ref or a snapshot, whole or not; an invalid repo id
        counts as kept): a read begun before the program is imported sends its early reads only when
        nothing is (``early.begin``)."""
        try:
            return self._repo(repo).exists()
        except (OSError, InspectorError):
            return True

    def get(self, repo: str, sha: str) -> Path | None:
        # deferred: 14 ms at import (inspector.sources.snapshot)
        from inspector.sources.snapshot import is_snapshot

        if not COMMIT.match(sha):
            return None
        try:
            p = self.path(repo, sha)
        except InspectorError:  # an entry that is a link out of the cache: damaged, as if absent (read again)
            return None
        return p if is_snapshot(p) else None

    def set_ref(self, repo: str, ref: str, sha: str) -> None:
        name = quote(ref, safe="")
        refs = self._repo(repo) / "refs"
        with contextlib.suppress(OSError, InspectorError):
            write_atomic(refs, name, commit_id(sha, "commit id").encode(), "branch name")

    def ref(self, repo: str, ref: str) -> str | None:
        try:
            sha = read_ref(inside(self._repo(repo) / "refs", quote(ref, safe=""), "branch name"), "header cache ref")
        except (OSError, InspectorError):
            return None
        return sha if COMMIT.match(sha) and self.get(repo, sha) else None

    def newest(self, repo: str) -> str | None:
        # deferred: 14 ms at import (inspector.sources.snapshot)
        from inspector.sources.snapshot import is_snapshot

        snaps = [p for p in (self._repo(repo) / "snapshots").glob("*") if COMMIT.match(p.name) and is_snapshot(p)]
        return max(snaps, key=lambda p: p.stat().st_mtime).name if snaps else None

    def put(self, snapshot: dict[str, Any]) -> None:
        """Atomic: write_snapshot builds a temporary folder and renames it into place. When two
        runs race, one rename wins and the other's copy is dropped; both were the same bytes. The
        headers go into a pack (snapshot version 3): at most two files to create, not one a shard."""
        # deferred: 14 ms at import (inspector.sources.snapshot)
        from inspector.sources.snapshot import write_snapshot

        with contextlib.suppress(OSError, InspectorError):
            # an entry that is a link (out of the cache: ``get`` took it as absent) is replaced, not followed
            drop_link(self._repo(snapshot["repo_id"]), f"snapshots/{commit_id(snapshot['revision'], 'commit id')}")
            write_snapshot(self.path(snapshot["repo_id"], snapshot["revision"]), **snapshot, pack=True)
