"""Write the JSON Schemas of every ``--json`` document to inspector/schemas/ (JSON Schema 2020-12).

    python scripts/make_schemas.py [--out inspector/schemas]

Each schema is written from its document's type (``inspector/results/``: a ``TypedDict`` per
document, ``results/schema.py`` turns it into a schema): every key always present (``required``), no
other key (``additionalProperties: false``), raw integers, ``null`` only where the type allows it, the
words a field may take from the analysis' own tables and registries. tests/test_schemas.py validates
real output of every command against them, checks that a document with a required field removed is
rejected, and that re-running this script reproduces the files.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from inspector.results.documents import schemas

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=ROOT / "inspector" / "schemas")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, schema in schemas().items():
        (args.out / f"{name}.schema.json").write_text(json.dumps(schema, indent=1) + "\n")


if __name__ == "__main__":
    main()
