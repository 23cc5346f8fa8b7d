"""The pre-commit hooks: the manifest as pre-commit itself reads it, the per-file hook's `files`
pattern against what discovery reads, and a real round trip (pre-commit installs the hooks from
this checkout into a temporary git repository, and git commit / git push run them)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.discover.walk import discover

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / ".pre-commit-hooks.yaml"


def hooks() -> dict[str, dict]:
    from pre_commit.clientlib import load_manifest

    return {hook["id"]: hook for hook in load_manifest(str(MANIFEST))}  # validates like pre-commit does


def test_manifest_is_valid_and_staged():
    from pre_commit.clientlib import STAGES

    found = hooks()
    assert set(found) == {"lockin-audit", "lockin-audit-score"}
    per_file, score = found["lockin-audit"], found["lockin-audit-score"]
    assert per_file["stages"] == ["pre-commit", "pre-merge-commit", "manual"]  # not again at push
    assert per_file["pass_filenames"] is True and "--force-exclude" in per_file["entry"]
    assert score["stages"] == ["pre-push", "manual"] and score["pass_filenames"] is False and score["always_run"]
    assert "--fail-under" in score["args"]
    for hook in found.values():
        assert set(hook["stages"]) <= set(STAGES)
        # `pre-commit`/`pre-push` stage names arrived in pre-commit 3.2.0 (3.1.1's STAGES has only
        # commit, push, ...; checked against both releases' sources): the manifest must say so.
        assert hook["minimum_pre_commit_version"] == "3.2.0"
        assert not {"commit", "push", "merge-commit"} & set(hook["stages"])  # the deprecated names


SAMPLES = [
    "train.py", "pkg/types.pyi", "setup.py", "kernels/a.cu", "kernels/a.cuh", "pyproject.toml", "sub/pyproject.toml",
    "setup.cfg", "requirements.txt", "requirements-dev.txt", "dev-requirements.in", "requirements/base.txt",
    "requirements/dev.in", "constraints.txt", "ci/constraints-gpu.txt", "Requirements.TXT", "deps/requirements_x/y.txt",
    # not read
    "README.md", "notes.txt", "dev.in", "MANIFEST.in", "requirements/MANIFEST.in", "Makefile.in", "setup.cfg.bak",
    "tox.ini", "pkg/data.json", "mypyproject.toml", "requirements.md", "x.py.txt",
    # the kinds beyond Python and requirements (auditor.discover.kinds)
    "Dockerfile", "docker/Dockerfile.rocm", "ci/gpu.dockerfile", "compose.yaml", "environment.yml",
    "k8s/job.yaml", "ds_config.json", "conf/train.toml", "scripts/run.sh", "jobs/x.slurm", "nb/demo.ipynb",
    "data/labels.json", "Cargo.toml", "docker/entrypoint",
]


def test_files_pattern_matches_exactly_what_discovery_reads(tmp_path):
    pattern = re.compile(hooks()["lockin-audit"]["files"])
    for name in SAMPLES:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n", encoding="utf-8")
    read = {f.display for f in discover([str(tmp_path)], str(tmp_path), respect_gitignore=False).files}
    matched = {name for name in SAMPLES if pattern.search(name)}
    assert matched == read
    assert {"requirements/base.txt", "constraints.txt", "requirements/dev.in"} <= read


# -- the round trip ----------------------------------------------------------------------------------

OLD = "import torch\nmodel = Net().cuda()\nx = torch.zeros(3, device='cuda')\n"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PRE_COMMIT", "GIT_DIR", "GIT_INDEX_FILE")}
    env.update({"PRE_COMMIT_HOME": str(home), "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "t",
                "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
                "GIT_COMMITTER_EMAIL": "t@example.invalid", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])})
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _hook_repository(tmp: Path, env: dict[str, str]) -> tuple[Path, str]:
    """A git repository holding this checkout as it is now (uncommitted edits included)."""
    listed = _run(["git", "ls-files", "-co", "--exclude-standard", "-z"], ROOT, env)
    if listed.returncode != 0:
        pytest.skip("this checkout is not a git repository")
    repo = tmp / "hooks"
    for name in filter(None, listed.stdout.split("\0")):
        source = ROOT / name
        if source.is_file() and not name.startswith(("fixtures/", ".venv")):
            target = repo / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "hooks"]):
        assert _run(["git", *args], repo, env).returncode == 0
    return repo, _run(["git", "rev-parse", "HEAD"], repo, env).stdout.strip()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_real_pre_commit_round_trip(tmp_path):
    env = _env(tmp_path / "pre-commit-home")
    hook_repo, rev = _hook_repository(tmp_path, env)
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "legacy.py").write_text(OLD, encoding="utf-8")
    (work / "src" / "kernel.cu").write_text("__global__ void k(float* x) { x[0] = 1; }\n", encoding="utf-8")
    (work / "pyproject.toml").write_text('[tool.lockin-auditor]\nbaseline = "lockin-baseline.json"\n', encoding="utf-8")
    (work / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n      - id: lockin-audit\n"
        f"      - id: lockin-audit-score\n", encoding="utf-8")
    git = ["git", "-c", "init.defaultBranch=main"]
    assert _run([*git, "init", "-q"], work, env).returncode == 0
    baseline = _run([sys.executable, "-m", "auditor", ".", "--write-baseline", "lockin-baseline.json", "--no-cache"],
                    work, {**env, "PYTHONPATH": str(ROOT)})
    assert baseline.returncode == 0, baseline.stderr
    (work / ".gitignore").write_text(".lockin_auditor_cache/\n", encoding="utf-8")
    _run(["git", "add", "-A"], work, env)
    assert _run(["git", "commit", "-qm", "base", "--no-verify"], work, env).returncode == 0
    install = _run([sys.executable, "-m", "pre_commit", "install", "--hook-type", "pre-commit", "--hook-type",
                    "pre-push"], work, env)
    assert install.returncode == 0, install.stderr

    # A clean commit passes (the first one also installs the hook's environment from this checkout).
    (work / "src" / "clean.py").write_text("import torch\nx = torch.ones(2).to(device)\n", encoding="utf-8")
    _run(["git", "add", "src/clean.py"], work, env)
    clean = _run(["git", "commit", "-qm", "clean"], work, env)
    assert clean.returncode == 0, clean.stdout + clean.stderr

    # New lock-in fails, naming the file and the line.
    (work / "src" / "new.py").write_text("import torch\nm = M().cuda()\n", encoding="utf-8")
    _run(["git", "add", "src/new.py"], work, env)
    new = _run(["git", "commit", "-qm", "new"], work, env)
    said = new.stdout + new.stderr  # git passes the hook's output on to stderr
    assert new.returncode != 0 and "src/new.py:2:" in said and "LK102" in said, said
    assert "score" not in said.lower()  # a batch prints findings only
    _run(["git", "rm", "-q", "--cached", "src/new.py"], work, env)
    os.remove(work / "src" / "new.py")

    # Editing a file whose lock-in is in the baseline passes.
    (work / "src" / "legacy.py").write_text('"""Now with a docstring."""\n' + OLD, encoding="utf-8")
    _run(["git", "add", "src/legacy.py"], work, env)
    edit = _run(["git", "commit", "-qm", "docstring"], work, env)
    assert edit.returncode == 0, edit.stdout + edit.stderr

    # The score hook runs at push. With a baseline configured it gates on regression: the legacy
    # lock-in (a CUDA kernel costs a third, far below the hook's --fail-under 80) does not block it.
    remote = tmp_path / "remote.git"
    assert _run(["git", "init", "-q", "--bare", str(remote)], tmp_path, env).returncode == 0
    _run(["git", "remote", "add", "origin", str(remote)], work, env)
    push = _run(["git", "push", "-q", "origin", "HEAD:main"], work, env)
    assert push.returncode == 0, push.stdout + push.stderr
    # New lock-in that slipped past the commit hook lowers a score below the baseline's: the push stops.
    (work / "src" / "more.py").write_text("import torch\ntorch.cuda.synchronize()\nm = M().cuda()\n", encoding="utf-8")
    _run(["git", "add", "src/more.py"], work, env)
    assert _run(["git", "commit", "-qm", "more", "--no-verify"], work, env).returncode == 0
    push = _run(["git", "push", "-q", "origin", "HEAD:main"], work, env)
    said = push.stdout + push.stderr
    assert push.returncode != 0 and "below the baseline's" in said and "--fail-under" not in said, said
    manual = _run([sys.executable, "-m", "pre_commit", "run", "lockin-audit-score", "--hook-stage", "manual"], work, env)
    assert manual.returncode != 0 and "Portability score" in manual.stdout

    # Without a baseline the hook's own threshold is the gate.
    (work / "pyproject.toml").write_text("[tool.lockin-auditor]\n", encoding="utf-8")
    _run(["git", "add", "pyproject.toml"], work, env)
    assert _run(["git", "commit", "-qm", "no baseline", "--no-verify"], work, env).returncode == 0
    push = _run(["git", "push", "-q", "origin", "HEAD:main"], work, env)
    assert push.returncode != 0 and "below --fail-under 80" in push.stdout + push.stderr, push.stdout + push.stderr


def test_score_hook_says_it_gates_on_the_baseline():
    score = hooks()["lockin-audit-score"]
    assert "--regression-if-baseline" in score["entry"] and "baseline" in score["description"]
