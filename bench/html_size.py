"""Size of the HTML report (`audit PATH --format html`), to check it stays small enough to attach
to a CI run.

    python bench/html_size.py                          # the demo repository
    python bench/html_size.py /work/corpus fixtures/demo-repo
    python bench/html_size.py --json sizes.json DIR...

Each path is audited as its own process, the way a CI job runs it (`--isolated`, a fresh
`--cache-dir`, so the tree is never written to), from the path's parent folder so the page's paths
start with the folder's name. Prints, per path: files audited, findings, the page's bytes, the
bytes gzip -9 makes of it (what an artifact upload stores), and bytes per finding."""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = re.compile(r'<script type="application/json" id="audit-data">(.*?)</script>', re.S)


def audit_command() -> list[str]:
    installed = Path(sys.executable).parent / "audit"
    return [str(installed)] if installed.exists() else [sys.executable, "-m", "auditor"]


def measure(path: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="html-size-") as scratch:
        page_path = Path(scratch) / "report.html"
        command = [*audit_command(), path.name, "--format", "html", "--isolated", "--cache-dir",
                   str(Path(scratch) / "cache"), "-o", str(page_path)]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        start = time.perf_counter()
        done = subprocess.run(command, cwd=path.parent, env=env, capture_output=True, text=True)
        took = time.perf_counter() - start
        if done.returncode not in (0, 1):
            raise SystemExit(f"audit failed on {path} ({done.returncode}): {done.stderr.strip()}")
        page = page_path.read_bytes()
    data = json.loads(DATA.search(page.decode("utf-8")).group(1))
    findings = len(data["findings"])
    return {"path": str(path), "files": data["summary"].get("files"), "findings": findings, "bytes": len(page),
            "gzip_bytes": len(gzip.compress(page, 9)), "bytes_per_finding": round(len(page) / findings, 1) if findings else None,
            "seconds": round(took, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[str(REPO / "fixtures" / "demo-repo")])
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    rows = [measure(Path(p).resolve()) for p in args.paths]
    print(f"{'path':40} {'files':>7} {'findings':>9} {'bytes':>11} {'gzip -9':>10} {'B/finding':>10} {'s':>6}")
    for row in rows:
        print(f"{row['path'][-40:]:40} {row['files']:>7} {row['findings']:>9} {row['bytes']:>11,} {row['gzip_bytes']:>10,} "
              f"{row['bytes_per_finding'] or '-':>10} {row['seconds']:>6}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
