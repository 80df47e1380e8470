"""Rewrite the README's screenshots of the HTML reports (docs/screenshots/*.png): each report made by
the CLI from a bundled snapshot, opened in Debian's chromium through playwright, the top of the page
captured at 1150×900.

    python scripts/make_screenshots.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from inspector.safeio import write_atomic

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots"
REPORTS = {
    "show": ["llama3-8b"],
    "diff": ["diff", "llama2-7b", "llama3-8b"],
    "compare": ["compare", "llama2-7b", "llama3-8b", "mistral-7b", "qwen2.5-7b"],
    "estimate": ["estimate", "qwen2.5-7b", "--gpu", "L4"],
    "train": ["train", "llama3-8b", "--gpu", "RTX4090"],
    "plan": ["plan", "llama3-70b", "--gpu", "H100,L40S", "--max-gpus", "4"],
}


def main() -> int:
    chromium = shutil.which("chromium")
    if chromium is None:
        print("chromium is not installed: apt-get install chromium", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=[
            "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        page = browser.new_page(viewport={"width": 1150, "height": 900})
        for name, args in REPORTS.items():
            html = Path(tmp) / f"{name}.html"
            subprocess.run([sys.executable, "-m", "inspector", *args, "--format", "html", "-o", str(html)],
                           check=True)
            page.goto(html.as_uri(), wait_until="load")
            written = write_atomic(OUT, f"{name}.png", page.screenshot(), "screenshot")
            print(f"{written} ({written.stat().st_size:,} B)")
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
