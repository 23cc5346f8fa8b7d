"""Where a path lies: the one containment test of the walk, the git sandbox, the configuration
reader and the fix run's created files (it compares the text of the paths: a caller that must not
be fooled by links passes their real paths)."""

from __future__ import annotations

import os


def inside(path: str, folder: str) -> bool:
    """`path` is `folder` or lies below it. A sibling that only starts with the same letters
    (`/repo-other` beside `/repo`) is not inside."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)
