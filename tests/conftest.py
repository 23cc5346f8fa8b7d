from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # test the source tree, even when a wheel is installed too

os.environ.setdefault("NO_COLOR", "1")
os.environ.setdefault("COLUMNS", "200")
# The default report format depends on these (concise under pre-commit and in CI): tests that
# care set them themselves, so the suite reads the same on a laptop and in CI (CI=true).
for _name in ("CI", "GITHUB_ACTIONS", "PRE_COMMIT"):
    os.environ.pop(_name, None)


@pytest.fixture
def scan_source(tmp_path):
    """Write files into a temporary repo, scan it, return the ScanResult."""
    from auditor.config.settings import Settings
    from auditor.pipeline.scan import scan

    def run(files: dict[str, str | bytes], **options) -> object:
        for name, content in files.items():
            path = tmp_path / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
        return scan([str(tmp_path)], Settings(**options))

    return run
