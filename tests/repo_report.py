"""Shared by the verdict tests: write a small repository and read `audit`'s JSON report of it, as a
user runs it (the CLI in the repository's folder, no cache, no configuration but the repository's)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from auditor.cli import main


def report(root: Path, files: dict[str, str], capsys) -> dict:
    """Write `files` (path -> text) under `root`, audit it and return the JSON report."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    here = os.getcwd()
    os.chdir(root)
    try:
        main([".", "--format", "json", "--no-cache", "--exit-zero", "--isolated"])
    finally:
        os.chdir(here)
    return json.loads(capsys.readouterr().out)


def judged(document: dict) -> dict[str, str]:
    """The headline verdict per target."""
    return {target: verdict["verdict"] for target, verdict in document["verdicts"].items()}
