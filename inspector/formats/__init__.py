"""Weight-file formats: bytes in, records out."""
