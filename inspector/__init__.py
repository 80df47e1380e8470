"""inspector: what is inside a Hugging Face checkpoint, from its headers alone."""

__version__ = "0.1.0"
