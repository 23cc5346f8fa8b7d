"""What `audit plan` reads besides findings (auditor/plan/signals.py): imports, packages, patterns,
the tools in use, and the traps (a mention in a comment, a name inside another name)."""

from __future__ import annotations

import os
from pathlib import Path

from auditor.discover.files import SourceFile
from auditor.plan.catalogue import plan_catalogue
from auditor.plan.signals import MAX_PER_SIGNAL, find_signals, normal


def signals_of(tmp_path: Path, files: dict[str, tuple[str, str]]) -> list:
    sources = []
    for name, (kind, content) in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        sources.append(SourceFile(str(path), name, kind))
    return find_signals(sources, plan_catalogue())


def whats(found: list) -> set[str]:
    return {s.what for s in found}


def test_imports_packages_and_patterns_are_signals(tmp_path):
    found = signals_of(tmp_path, {
        "a.py": ("python", "import boto3\nfrom google.cloud import storage\nURL = 'gs://bucket/data'\n"),
        "requirements.txt": ("requirements", "sagemaker==2.1\nvllm>=0.6\n"),
        "Dockerfile": ("dockerfile", "FROM lmsysorg/sglang:latest\n"),
    })
    assert {"AWS SDK", "Google Cloud SDK", "SageMaker", "vLLM", "SGLang"} <= whats(found)
    assert any(s.kind == "bucket" and s.path == "a.py" and s.line == 3 for s in found)
    assert {s.kind for s in found if s.what in ("vLLM", "SGLang")} == {"tool"}


def test_a_comment_or_a_longer_name_is_no_signal(tmp_path):
    found = signals_of(tmp_path, {
        "a.py": ("python", "# import boto3 once we move to AWS\nimport boto3_stubs_helper\nimport torch\n"),
        "requirements.txt": ("requirements", "# sagemaker\nmy-sagemaker-tools\n"),
    })
    assert "AWS SDK" not in whats(found) and "SageMaker" not in whats(found)


def test_a_package_name_is_compared_as_pypi_does(tmp_path):
    assert normal("Google_Cloud.Storage") == "google-cloud-storage"
    found = signals_of(tmp_path, {"requirements.txt": ("requirements", "Google_Cloud.Storage>=2\n")})
    assert "Google Cloud SDK" in whats(found)


def test_places_per_signal_are_capped_and_a_link_is_not_followed(tmp_path):
    lines = "".join("import boto3\n" for _ in range(20))
    found = signals_of(tmp_path, {"a.py": ("python", lines)})
    assert sum(1 for s in found if s.what == "AWS SDK") == MAX_PER_SIGNAL
    outside = tmp_path / "outside.py"
    outside.write_text("import boto3\n", encoding="utf-8")
    os.symlink(outside, tmp_path / "link.py")
    assert find_signals([SourceFile(str(tmp_path / "link.py"), "link.py", "python")], plan_catalogue()) == []
