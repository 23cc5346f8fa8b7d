"""What the cached results depend on besides the files: a settings key (tool version, rule
selection, catalogue, the auditor's own code, installed plugins, size limit, the project's
catalogue additions and torch floor) names the results file; a content digest identifies a file's
bytes."""

from __future__ import annotations

import hashlib
import json
import os
import sys

from auditor import __version__
from auditor.catalogue import catalogue_fingerprint

FORMAT = 6  # 5: a fix keeps the reason it is only shown; 6: a finding keeps its guard kinds


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


_PRESENTATION = ("cli.py", "score.py", "progress.py", "__main__.py")


def _code_fingerprint() -> list:
    """Sizes and mtimes of the auditor's own modules (an edited rule invalidates the cache even
    without a version bump) and of the import path folders (installing a plugin touches them).
    The modules that only present results (the reports, the CLI, the score) are left out: the
    cache holds findings, which they do not change."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # auditor/, above cache/
    stats: list = []
    stack = [package]
    while stack:
        directory = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and entry.name not in ("__pycache__", "report"):
                stack.append(entry.path)
            elif entry.name.endswith((".py", ".toml")) and entry.name not in _PRESENTATION:
                info = entry.stat()
                stats.append([os.path.relpath(entry.path, package), info.st_size, info.st_mtime_ns])
    for folder in sys.path:
        if not folder.endswith(("site-packages", "dist-packages")):
            continue
        try:
            stats.append([folder, os.stat(folder or ".").st_mtime_ns])
        except OSError:
            continue
    return stats


def settings_key(select: list[str] | None, ignore: list[str] | None, max_bytes: int,
                 extra: dict | None = None) -> str:
    """What the results depend on besides the files: a change to any of it starts a new cache.
    `extra` is the rest of what the results depend on: the project's catalogue additions
    (Settings.cache_extra) and its torch floor, which decides the fixes findings carry."""
    material = json.dumps({
        "format": FORMAT, "version": __version__, "python": sys.version_info[:2],
        "select": select, "ignore": ignore, "max_bytes": max_bytes, "settings": extra,
        "catalogue": catalogue_fingerprint(), "code": _code_fingerprint(),
    }, sort_keys=True)
    return hashlib.blake2b(material.encode(), digest_size=12).hexdigest()
