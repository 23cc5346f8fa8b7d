"""Configuration: where it is found, what each key does, that CLI flags win, that mistakes exit 2
naming the nearest valid spelling, and that a hostile repository's configuration cannot make
audit read outside it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from auditor.cli import main
from auditor.config import ConfigError
from auditor.config.files import find_config
from auditor.config.load import load_settings
from auditor.config.settings import Settings

BAD = "import torch\nm = M().cuda()\nx = torch.zeros(1, device='cuda')\n"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "train.py").write_text(BAD, encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_a.py").write_text(BAD, encoding="utf-8")
    monkeypatch.chdir(root)
    return root


def audit(capsys, *args: str) -> tuple[int, dict | None, str]:
    code = main([*args, "--format", "json", "--no-cache"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def found(report: dict) -> list[tuple[str, str]]:
    return sorted((f["path"], f["rule"]) for f in report["findings"])


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# -- discovery ---------------------------------------------------------------------------------------

def test_found_by_walking_up_and_stopping_at_the_repository_root(repo, tmp_path):
    write(tmp_path / "lockin-auditor.toml", 'select = ["LK101"]\n')  # above the repository: never read
    assert find_config(str(repo / "src" / "pkg")) is None
    write(repo / "pyproject.toml", '[project]\nname = "x"\n')  # no table of ours: skipped
    assert find_config(str(repo / "src" / "pkg")) is None
    pyproject = write(repo / "pyproject.toml", '[project]\nname = "x"\n[tool.lockin-auditor]\nselect = ["LK101"]\n')
    assert find_config(str(repo / "src" / "pkg")) == str(pyproject)
    nearer = write(repo / "src" / ".lockin-auditor.toml", 'select = ["LK102"]\n')
    assert find_config(str(repo / "src" / "pkg" / "train.py")) == str(nearer)
    first = write(repo / "src" / "lockin-auditor.toml", 'select = ["LK102"]\n')
    assert find_config(str(repo / "src")) == str(first)  # lockin-auditor.toml before .lockin-auditor.toml


def test_pyproject_table_is_applied(repo, capsys):
    write(repo / "pyproject.toml", '[tool.lockin-auditor]\nselect = ["LK101"]\n')
    code, report, _ = audit(capsys, ".")
    assert code == 0 and {rule for _, rule in found(report)} == {"LK101"}
    code, report, _ = audit(capsys, "src/pkg/train.py")  # found from a file too
    assert {rule for _, rule in found(report)} == {"LK101"}


def test_config_flag_and_isolated(repo, capsys, tmp_path):
    write(repo / "pyproject.toml", '[tool.lockin-auditor]\nselect = ["LK101"]\n')
    other = write(tmp_path / "elsewhere.toml", 'select = ["LK102"]\n')
    assert {r for _, r in found(audit(capsys, ".", "--config", str(other))[1])} == {"LK102"}
    assert {r for _, r in found(audit(capsys, ".", "--isolated")[1])} >= {"LK101", "LK102"}
    code, _, err = audit(capsys, ".", "--config", str(tmp_path / "missing.toml"))
    assert code == 2 and "--config" in err and err.count("\n") == 1


def test_cli_flags_override_the_file(repo, capsys):
    write(repo / "pyproject.toml", '[tool.lockin-auditor]\nselect = ["LK101"]\nfail-on = "major"\n')
    code, report, _ = audit(capsys, ".", "--select", "LK102")
    assert code == 1 and {r for _, r in found(report)} == {"LK102"}  # fail-on from the file still applies
    code, _, _ = audit(capsys, ".", "--select", "LK102", "--fail-on", "blocker")
    assert code == 0


def test_rules_keys(repo, capsys):
    write(repo / "lockin-auditor.toml",
          'select = ["LK1"]\nignore = ["LK101"]\nextend-select = ["LK204"]\n'
          '[per-file-ignores]\n"tests/**" = ["cuda-method-call"]\n"*.pyi" = ["ALL"]\n'
          '[severity]\nLK102 = "blocker"\n')
    write(repo / "src" / "pkg" / "sync.py", "import torch\ntorch.cuda.synchronize()\n")
    code, report, _ = audit(capsys, ".")
    assert found(report) == [("src/pkg/sync.py", "LK204"), ("src/pkg/train.py", "LK102")]
    assert {f["rule"]: f["severity"] for f in report["findings"]}["LK102"] == "blocker"
    assert report["summary"]["suppressed"] == 1


def test_file_keys_exclude_force_exclude_and_gitignore(repo, capsys):
    write(repo / "lockin-auditor.toml", 'extend-exclude = ["tests/", "legacy_*.py"]\nforce-exclude = true\n')
    write(repo / "src" / "legacy_old.py", BAD)
    write(repo / ".gitignore", "generated/\n")
    write(repo / "generated" / "g.py", BAD)
    code, report, _ = audit(capsys, ".")
    assert {p for p, _ in found(report)} == {"src/pkg/train.py"}
    # Named explicitly (as pre-commit does), the same files stay out with force-exclude ...
    code, report, err = audit(capsys, "tests/test_a.py", "src/legacy_old.py", "generated/g.py", "src/pkg/train.py")
    assert {p for p, _ in found(report)} == {"src/pkg/train.py"} and "skipped" not in err
    # ... and come back without it.
    code, report, _ = audit(capsys, "tests/test_a.py", "generated/g.py", "--no-force-exclude")
    assert {p for p, _ in found(report)} == {"tests/test_a.py", "generated/g.py"}
    code, report, _ = audit(capsys, ".", "--no-respect-gitignore")
    assert "generated/g.py" in {p for p, _ in found(report)}


def test_gate_keys(repo, capsys):
    write(repo / "lockin-auditor.toml", '[fail-under]\noverall = 10\ncpu = 99\n')
    code, report, err = audit(capsys, ".")
    assert code == 1 and report["gate"]["reasons"] == [f"cpu score {report['scores']['cpu']:.1f} is below --fail-under 99"]
    assert audit(capsys, ".", "--fail-under", "5")[0] == 0  # --fail-under replaces the table
    write(repo / "lockin-auditor.toml", 'targets = ["rocm", "tpu"]\nfail-under = 95\n')
    code, report, _ = audit(capsys, ".")
    assert code == 1 and report["gate"]["checks"] == ["fail-under rocm 95", "fail-under tpu 95"]
    assert audit(capsys, ".", "--target", "rocm")[0] == 0  # the file's threshold, re-aimed


def test_torch_version_and_catalogue(repo, capsys):
    write(repo / "lockin-auditor.toml",
          'torch-version = "2.4"\n[catalogue]\ngpu-only-packages = ["acme-cuda-ops", '
          '{ name = "acme_kernels", rule = "gpu-kernel-package", what = "ACME fused kernels" }]\n'
          'gpu-only-modules = ["acme_cuda_ops"]\nportable-modules = ["acme.flash_attn"]\n')
    settings = load_settings(str(repo), {})
    assert settings.torch_version == "2.4" and settings.portable_modules == ("acme.flash_attn",)
    write(repo / "requirements.txt", "Acme_CUDA.ops==1.0\nacme-kernels\nnumpy\n")
    write(repo / "src" / "ops.py", "import acme_cuda_ops\nfrom acme.flash_attn import attention\n"
                                   "from other.flash_attn import attention as a2\nout = acme_cuda_ops.gemm(a, b)\n")
    code, report, _ = audit(capsys, ".", "--select", "LK409,LK504,LK505")
    got = sorted((f["path"], f["line"], f["rule"]) for f in report["findings"])
    assert got == [("requirements.txt", 1, "LK505"), ("requirements.txt", 2, "LK504"),
                   ("src/ops.py", 1, "LK409"), ("src/ops.py", 3, "LK409"), ("src/ops.py", 4, "LK409")]
    # Without the configuration the in-house names are unknown and the wrapper counts as flash_attn.
    code, report, _ = audit(capsys, ".", "--select", "LK409,LK504,LK505", "--isolated")
    assert sorted((f["path"], f["line"]) for f in report["findings"]) == [("src/ops.py", 2), ("src/ops.py", 3)]


def test_catalogue_changes_start_a_new_cache(repo, capsys):
    write(repo / "requirements.txt", "acme-cuda-ops\n")
    assert main([".", "--format", "json", "--select", "LK505"]) == 0
    assert json.loads(capsys.readouterr().out)["findings"] == []
    write(repo / "lockin-auditor.toml", '[catalogue]\ngpu-only-packages = ["acme-cuda-ops"]\n')
    assert main([".", "--format", "json", "--select", "LK505"]) == 0
    assert [f["rule"] for f in json.loads(capsys.readouterr().out)["findings"]] == ["LK505"]


MISTAKES = [
    ('selct = ["LK1"]\n', "'selct'", "'select'"),
    ('select = ["LK1O1"]\n', "'LK1O1'", "'LK101'"),
    ('ignore = ["cuda-metod-call"]\n', "cuda-metod-call", "'cuda-method-call'"),
    ('[per-file-ignores]\n"a/*" = ["LK99"]\n', "'LK99'", "per-file-ignores"),
    ('[severity]\nLK102 = "majr"\n', "'majr'", "'major'"),
    ('[severity]\nLK1022 = "major"\n', "'LK1022'", "'LK102'"),
    ('targets = ["rcom"]\n', "'rcom'", "'rocm'"),
    ('fail-on = "minr"\n', "'minr'", "'minor'"),
    ('fail-under = 120\n', "fail-under", "0 to 100"),
    ('fail-under = "80"\n', "fail-under", "0 to 100"),
    ('torch-version = "latest"\n', "torch-version", "2.4"),
    ('[catalogue]\ngpu-only-package = ["x"]\n', "'gpu-only-package'", "'gpu-only-packages'"),
    ('[catalogue]\ngpu-only-modules = [{ name = "x", rule = "gpu-kernel-libary" }]\n', "gpu-kernel-libary",
     "'gpu-kernel-library'"),
    ('output-format = "sariff"\n', "'sariff'", "'sarif'"),
    ("select = [\n", "not valid TOML", "--isolated"),
]


@pytest.mark.parametrize(("text", "names", "suggests"), MISTAKES, ids=[m[0].split("\n")[0] for m in MISTAKES])
def test_mistakes_exit_2_naming_the_nearest_spelling(repo, capsys, text, names, suggests):
    write(repo / "lockin-auditor.toml", text)
    code, report, err = audit(capsys, ".")
    assert code == 2 and report is None
    assert err.startswith("audit: error: ") and err.count("\n") == 1
    assert names in err and suggests in err
    assert "lockin-auditor.toml" in err or "--" in err


def test_cli_mistakes_suggest_too(repo, capsys):
    code, _, err = audit(capsys, ".", "--select", "LK1O2")
    assert code == 2 and "'LK102'" in err and "--select" in err
    code, _, err = audit(capsys, ".", "--target", "tpuu", "--fail-under", "50")
    assert code == 2 and "'tpu'" in err


# -- a hostile configuration ---------------------------------------------------------------------------

def test_config_linking_out_of_the_repository_is_refused(repo, capsys, tmp_path):
    secret = write(tmp_path / "secret.toml", 'select = ["LK101"]\n')
    os.symlink(secret, repo / "lockin-auditor.toml")
    code, _, err = audit(capsys, ".")
    assert code == 2 and "link out of the repository" in err
    inside = write(repo / "conf" / "real.toml", 'select = ["LK101"]\n')
    os.remove(repo / "lockin-auditor.toml")
    os.symlink(inside, repo / "lockin-auditor.toml")  # a link within the repository is fine
    assert {r for _, r in found(audit(capsys, ".")[1])} == {"LK101"}


def test_baseline_outside_the_repository_is_refused(repo, capsys, tmp_path):
    for target in ("../outside.json", "/etc/passwd"):
        write(repo / "lockin-auditor.toml", f'baseline = "{target}"\n')
        code, _, err = audit(capsys, ".")
        assert code == 2 and "outside the repository" in err, err


def test_settings_are_frozen_and_hashable():
    settings = Settings(select=["LK1"], excludes=["x"])
    assert settings.select == ("LK1",) and hash(settings) == hash(Settings(select=("LK1",), excludes=("x",)))
    with pytest.raises(AttributeError):
        settings.select = ("LK2",)  # type: ignore[misc]
    with pytest.raises(ConfigError):
        load_settings("/", {}, config="/no/such/file.toml")


# -- the key table ------------------------------------------------------------------------------------

def test_settings_fields_are_the_key_tables():
    from dataclasses import fields

    from auditor.config import keys

    declared = [name for name, _, _ in keys.settings_fields()]
    assert len(declared) == len(set(declared))
    assert [f.name for f in fields(Settings)] == [*declared, "progress", "config_path", "origins"]
    for row in keys.KEYS:  # every command-line value goes somewhere that exists
        kind, _, name = row.destination.rpartition(".")
        if kind == "request":
            from auditor.run import Request

            assert name in {f.name for f in fields(Request)}, row.name
        elif kind == "config":
            assert name in ("config", "isolated"), row.name
        elif name:
            assert name in declared or name == "fail_under_number", row.name
        assert row.flags or row.file is not None, f"{row.name} can be set nowhere"
    flags = [flag for row in keys.options() for decl in row.flags for flag in decl.split("/")]
    assert len(flags) == len(set(flags))
    assert set(keys.file_keys()) <= {row.name for row in keys.KEYS}


ONE_ROW = """
import json, sys
from auditor.config import keys
keys.KEYS = (*keys.KEYS, keys.Key(
    "sample-key", "A key added as one row.", field="sample_key", type=bool, default=False, file=keys._boolean,
    flags=("--sample-key/--no-sample-key",), option=bool | None, panel=keys.OUTPUT, extra={"show_default": False}))
from auditor.cli import main
from auditor.config import ConfigError
from auditor.config.load import settings_from_table
from auditor.config.settings import Settings
import auditor.run

seen = []
auditor.run.execute = lambda given, settings, request: seen.append(settings.sample_key) or 0
main(["scan", sys.argv[1], "--isolated", "--sample-key"])
main(["scan", sys.argv[1], "--isolated"])
try:
    settings_from_table({"sample-key": "yes"}, "lockin-auditor.toml")
    refused = ""
except ConfigError as exc:
    refused = str(exc)
print(json.dumps({"default": Settings().sample_key, "cli": seen,
                  "file": settings_from_table({"sample-key": True}, "lockin-auditor.toml")["sample_key"],
                  "refused": refused}))
"""


def test_a_new_key_is_one_row(tmp_path):
    """A row added to the table alone is a Settings field with its default, a configuration key
    read and checked as its row says, and an option of `audit scan` with its help."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-c", ONE_ROW, str(tmp_path)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got == {"default": False, "cli": [True, False], "file": True,
                   "refused": "lockin-auditor.toml: 'sample-key' must be true or false"}
    helped = subprocess.run([sys.executable, "-c", ONE_ROW.split("from auditor.cli import main")[0]
                             + "from auditor.cli import main\nmain(['scan', '--help'])\n"],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert "--sample-key" in helped.stdout and "A key added as one row." in helped.stdout
