"""The file-kind registry: discovery, the pre-commit hook's `files` pattern and suppressions all
follow it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from auditor.discover.files import file_kind
from auditor.discover.kinds import KINDS, comment_prefix, hook_files_pattern

ROOT = Path(__file__).resolve().parent.parent

NAMED = {
    "train.py": "python", "pkg/setup.py": "setup-py", "stubs/x.pyi": "python", "pyproject.toml": "pyproject",
    "setup.cfg": "setup-cfg", "requirements-dev.txt": "requirements", "requirements/base.txt": "requirements",
    "csrc/k.cu": "cuda", "csrc/k.cuh": "cuda", "notebooks/Demo.ipynb": "notebook", "Dockerfile": "dockerfile",
    "docker/Dockerfile.rocm": "dockerfile", "ci/gpu.dockerfile": "dockerfile", "Containerfile": "dockerfile",
    "docker-compose.yml": "compose", "deploy/compose.gpu.yaml": "compose", "environment.yml": "conda",
    "envs/environment-cuda.yaml": "conda", "conda-gpu.yml": "conda", "k8s/job.yaml": "yaml",
    "charts/app/values.yaml": "yaml", "configs/trainer.yaml": "yaml", "ds_config_zero3.json": "json-config",
    "configs/deepspeed.json": "json-config", "accelerate_config.json": "json-config", "zero2.json": "json-config",
    "conf/train.toml": "toml-config", "scripts/train.sh": "shell", "jobs/run.slurm": "shell",
    "jobs/run.sbatch": "shell", "tools/x.bash": "shell",
    # issue 15 item 5: target-named Dockerfiles and config / requirements folders at any depth
    "Dockerfile-cpu": "dockerfile", "docker/Dockerfile_arm64": "dockerfile", "requirements/pytorch/extra.txt": "requirements",
    "configs/autotuning_configs/tune.json": "json-config", "conf/model/small.toml": "toml-config",
}
UNREAD = ["README.md", "notes.txt", "MANIFEST.in", "data/tokenizer.json", "package.json", "ruff.toml",
          "Cargo.toml", "src/main.rs", "kernels/add.hip", "img.png", "Makefile", "docker/entrypoint",
          # traps: a Dockerfile's docs, and a folder whose name only contains "configs"
          "docs/Dockerfile.md", "docker/dockerfile_notes.txt", "src/myconfigs/x.json", "data/sub/tokenizer.json"]


@pytest.mark.parametrize(("path", "kind"), sorted(NAMED.items()))
def test_kind_by_name(path, kind):
    assert file_kind(path) == kind


@pytest.mark.parametrize("path", UNREAD)
def test_files_audit_does_not_read(path):
    assert file_kind(path) is None


def test_explicit_files():
    assert file_kind("notes.txt", explicit=True) == "requirements"
    assert file_kind("my-settings.json", explicit=True) == "json-config"
    assert file_kind("train.toml", explicit=True) == "toml-config"
    assert file_kind("README.md", explicit=True) is None


def test_every_kind_is_reachable_and_described():
    names = [kind.name for kind in KINDS]
    assert len(names) == len(set(names))
    assert set(NAMED.values()) == set(names), "every kind needs a discovery test"
    for kind in KINDS:
        assert kind.files and kind.reads, kind.name
        assert kind.check.count(":") == 1 and (kind.reader is None or kind.reader.count(":") == 1)


def test_hook_files_pattern_is_in_step_with_the_registry():
    manifest = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    written = re.search(r"^  files: '(.*)'$", manifest, re.M).group(1).replace("''", "'")
    assert written == hook_files_pattern(), (
        "regenerate `files` in .pre-commit-hooks.yaml from auditor.discover.kinds.hook_files_pattern()")


@pytest.mark.parametrize("path", sorted(NAMED))
def test_hook_pattern_matches_what_discovery_reads(path):
    assert re.search(hook_files_pattern(), path), path


@pytest.mark.parametrize("path", ["README.md", "notes.txt", "src/main.rs", "data/tokenizer.json", "Cargo.toml"])
def test_hook_pattern_leaves_other_files_out(path):
    assert re.search(hook_files_pattern(), path) is None


def test_comment_syntax_per_kind():
    assert comment_prefix("cuda") == "//"
    assert comment_prefix("json-config") is None
    for kind in ("python", "dockerfile", "yaml", "shell", "requirements", "pyproject", "conda", "compose"):
        assert comment_prefix(kind) == "#"
