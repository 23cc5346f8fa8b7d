"""`audit --fix`, `--unsafe-fixes`, `--diff`, `--show-fixes` and `--torch-version` from the command
line: what is written, what is printed where, and the exit codes."""

from __future__ import annotations

import json

import pytest

from auditor.cli import main

TRAIN = ("import torch\nfrom torch.cuda.amp import autocast\n\n"
         "def step(model, x):\n    with autocast():\n        return model(x)\n")
SAFE = ("import torch\n\n"
        "def step(model, x):\n    with torch.amp.autocast(\"cuda\", dtype=torch.float16):\n        return model(x)\n")
SYNC = "import torch\n\ndef wait():\n    torch.cuda.synchronize()\n"
SYNCED = "import torch\n\ndef wait():\n    if torch.accelerator.is_available():\n        torch.accelerator.synchronize()\n"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # reported paths are relative to the working directory
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    (tmp_path / "sync.py").write_text(SYNC, encoding="utf-8")
    (tmp_path / "requirements.txt").write_text("torch>=2.6\n", encoding="utf-8")
    return tmp_path


@pytest.fixture
def cli(capsys):
    def run(*args: str) -> tuple[int, str, str]:
        code = main([*args, "--no-cache"])
        out, err = capsys.readouterr()
        return code, out, err
    return run


def test_report_marks_fixable_findings_and_counts_the_unsafe_ones(cli, repo):
    code, out, _ = cli(str(repo))
    assert code == 0
    assert "LK209 [minor] [*] cuda-amp-deprecated" in out and "LK204 [major] cuda-synchronize" in out
    assert "[*] 1 fixable with `audit --fix`; 1 more with `--unsafe-fixes`." in out
    _, out, _ = cli(str(repo), "--unsafe-fixes")
    assert "LK204 [major] [*] cuda-synchronize" in out and "[*] 2 fixable with `audit --fix --unsafe-fixes`." in out


DEVICE_TIES = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\nx = torch.zeros(3, device='cuda')\n"


def test_report_says_how_many_device_ties_fix_may_rewrite_to_one_device_choice(cli, repo):
    # a plain scan knows no device owner (only a fix run looks for one or creates it), so the two
    # ties have no [*]; the count line says that --fix may still rewrite them, and --diff agrees
    (repo / "model.py").write_text(DEVICE_TIES, encoding="utf-8")
    _, out, _ = cli(str(repo))
    assert "`audit --fix` may rewrite up to 2 of the device ties to one device choice" in out, out
    _, diff, err = cli(str(repo), "--diff")
    assert "+model = torch.nn.Linear(2, 2).to(get_device())" in diff and "would create device_choice.py" in err


def test_report_counts_no_device_tie_that_fix_leaves_alone(cli, repo):
    # test code is left alone without --fix-tests, and a repository without ties has nothing to count
    _, out, _ = cli(str(repo))
    assert "device ties" not in out
    (repo / "tests").mkdir()
    (repo / "tests" / "test_model.py").write_text(DEVICE_TIES, encoding="utf-8")
    _, out, _ = cli(str(repo))
    assert "device ties" not in out, out


def test_diff_prints_and_writes_nothing_and_exits_1(cli, repo):
    code, out, err = cli(str(repo), "--diff")
    assert code == 1 and (repo / "train.py").read_text(encoding="utf-8") == TRAIN
    assert out.startswith("--- a/train.py\n+++ b/train.py\n") and '+    with torch.amp.autocast("cuda"' in out
    assert "sync.py" not in out
    assert "audit: would fix 1 finding in 1 file" in err
    code, out, _ = cli(str(repo), "--diff", "--unsafe-fixes")
    assert code == 1 and "+        torch.accelerator.synchronize()" in out
    assert (repo / "sync.py").read_text(encoding="utf-8") == SYNC


def test_fix_writes_then_reports_what_remains(cli, repo):
    code, out, err = cli(str(repo), "--fix", "--show-fixes")
    assert code == 0 and (repo / "train.py").read_text(encoding="utf-8") == SAFE
    assert "audit: fixed 1 finding in 1 file (1 more with --unsafe-fixes)" in err
    assert "- train.py:\n    1 × LK209 (cuda-amp-deprecated)" in err
    assert "LK209" not in out and "LK204" in out  # the report is about what remains
    code, out, err = cli(str(repo), "--fix", "--unsafe-fixes", "--format", "json")
    assert code == 0 and (repo / "sync.py").read_text(encoding="utf-8") == SYNCED
    assert "audit: fixed 2 findings in 2 files" in err  # sync.py's swap, and autocast("cuda") to the project's device
    assert json.loads(out)["findings"] == [] and 'autocast(get_device().type' in (repo / "train.py").read_text("utf-8")
    code, out, err = cli(str(repo), "--diff", "--unsafe-fixes")
    assert code == 0 and out == "" and "would fix 0 findings in 0 files" in err


def test_the_gate_is_judged_again_after_the_safe_fixes(cli, tmp_path, monkeypatch):
    """A safe fix can add code the CUDA-clean gate looks at: `"cuda"` as autocast's device does not
    block (AMP only turns off elsewhere), a `torch.zeros(..., device="cuda")` it makes visible does."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN + SYNC.replace("import torch\n", ""), encoding="utf-8")
    _, _, err = cli(str(tmp_path), "--fix", "--unsafe-fixes", "--torch-version", "2.13")
    text = (tmp_path / "train.py").read_text(encoding="utf-8")
    # autocast("cuda") appears only in the second round (from LK209's fix): the device owner is found then, so
    # the same run gives it the project's device type (a second run changes nothing)
    assert 'autocast(get_device().type' in text and "torch.accelerator.synchronize()" in text, text
    assert "audit: created device_choice.py" in err and "audit: train.py: CUDA-clean now" in err, err
    cli(str(tmp_path), "--fix", "--unsafe-fixes", "--torch-version", "2.13")
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == text
    (tmp_path / "device_choice.py").unlink()  # the next run creates it again
    # A "cuda" device argument is rewritten to the project's device (and so opens the gate too); a stated
    # requirement that the tensor is on CUDA is not, and keeps the gate shut.
    (tmp_path / "train.py").write_text(TRAIN.replace("return model(x)", 'return model(torch.zeros(1, device="cuda"))')
                                       + SYNC.replace("import torch\n", ""), encoding="utf-8")
    _, _, err = cli(str(tmp_path), "--fix", "--unsafe-fixes", "--torch-version", "2.13")
    fixed = (tmp_path / "train.py").read_text(encoding="utf-8")
    assert "device=get_device()" in fixed and "torch.accelerator.synchronize()" in fixed
    assert "audit: created device_choice.py: the one place the device is chosen; set " in err
    assert "audit: train.py: CUDA-clean now (LK101 x1, LK106 x1, LK204 x1, LK209 x1)" in err  # LK106: F43
    (tmp_path / "train.py").write_text(TRAIN.replace("return model(x)", 'assert x.device.type == "cuda"')
                                       + SYNC.replace("import torch\n", ""), encoding="utf-8")
    code, out, err = cli(str(tmp_path), "--fix", "--unsafe-fixes", "--torch-version", "2.13")
    assert "torch.cuda.synchronize()" in (tmp_path / "train.py").read_text(encoding="utf-8")
    assert "not fixed: held back until this file is CUDA-clean" in out and "LK101 at 6:33" in out  # below the import
    assert "train.py: not CUDA-clean: LK101 at 6:33, LK204 at 9:5" in err


def test_exit_codes_after_fixing_follow_the_gate_on_what_remains(cli, repo):
    assert cli(str(repo), "--fix", "--fail-on", "minor")[0] == 1  # LK204 remains
    assert cli(str(repo), "--fix", "--unsafe-fixes", "--select", "LK2", "--fail-on", "minor")[0] == 0
    assert cli(str(repo), "--fix", "--unsafe-fixes", "--fail-on", "minor")[0] == 0  # autocast("cuda") rewritten too
    (repo / "more.py").write_text('import torch\nassert torch.ones(1, device="cuda").is_cuda\n', encoding="utf-8")
    assert cli(str(repo), "--fix", "--unsafe-fixes", "--fail-on", "minor")[0] == 0  # the device rewritten
    (repo / "more.py").write_text('import torch\nassert x.device.type == "cuda"\n', encoding="utf-8")
    assert cli(str(repo), "--fix", "--unsafe-fixes", "--fail-on", "minor")[0] == 1  # a stated requirement remains


def test_version_rule_from_the_project_and_the_flag(cli, repo):
    (repo / "requirements.txt").write_text("torch>=2.4\n", encoding="utf-8")
    code, out, _ = cli(str(repo), "--unsafe-fixes")
    assert "not fixed: needs torch >= 2.6; the project supports torch 2.4 (from requirements.txt)" in out
    code, out, _ = cli(str(repo), "--unsafe-fixes", "--torch-version", "2.9")
    assert "not fixed" not in out and "[*] 2 fixable" in out
    code, out, _ = cli(str(repo), "--format", "json", "--torch-version", "2.4")
    fixes = {f["rule"]: f["fix"] for f in json.loads(out)["findings"]}
    assert fixes["LK204"]["applicability"] == "display" and fixes["LK204"]["min_torch"] == "2.6"
    assert set(fixes["LK204"]) == {"applicability", "message", "min_torch", "reason", "edits"}
    assert fixes["LK209"]["applicability"] == "safe" and fixes["LK209"]["reason"] is None


@pytest.mark.parametrize(("args", "mentions"), [
    (["--torch-version", "two"], "--torch-version"),
    (["--show-fixes"], "--fix or --diff"),
])
def test_usage_errors(cli, repo, args, mentions):
    code, out, err = cli(str(repo), *args)
    assert code == 2 and out == "" and mentions in err and len(err.strip().splitlines()) == 1


def test_diff_to_an_output_file(cli, repo, tmp_path):
    target = tmp_path / "fix.diff"
    code, out, _ = cli(str(repo), "--diff", "-o", str(target))
    assert code == 1 and out == "" and target.read_text(encoding="utf-8").startswith("--- a/train.py")


def test_exit_non_zero_on_fix_as_ruff(cli, repo):
    """ruff's --exit-non-zero-on-fix: a commit hook that rewrote files stops the commit (exit 1)
    even though what is left passes; nothing to fix exits 0; without --fix it is a usage error."""
    code, _, _ = cli(str(repo), "--fix", "--exit-non-zero-on-fix")
    assert code == 1 and (repo / "train.py").read_text(encoding="utf-8") == SAFE
    code, _, _ = cli(str(repo), "--fix", "--exit-non-zero-on-fix")
    assert code == 0  # the second run changes nothing
    assert cli(str(repo), "--fix", "--exit-non-zero-on-fix", "--exit-zero")[0] == 0
    code, _, err = cli(str(repo), "--exit-non-zero-on-fix")
    assert code == 2 and err.count("\n") == 1 and "--fix" in err


def test_output_file_is_ruffs_name_for_output(cli, repo):
    code, out, _ = cli(str(repo), "--format", "json", "--output-file", str(repo / "r.json"))
    assert code == 0 and out == "" and json.loads((repo / "r.json").read_text(encoding="utf-8"))["findings"]


def test_unsafe_fixes_from_the_configuration_as_ruffs_key(cli, repo):
    (repo / "lockin-auditor.toml").write_text("unsafe-fixes = true\n", encoding="utf-8")
    _, out, _ = cli(str(repo))
    assert "[*] 2 fixable with `audit --fix --unsafe-fixes`." in out  # marked as the flag marks them
    cli(str(repo), "--fix")
    assert (repo / "sync.py").read_text() == SYNCED  # the unsafe synchronize swap applied, no flag given
    (repo / "lockin-auditor.toml").write_text("unsafe-fixes = 1\n", encoding="utf-8")
    code, _, err = cli(str(repo))
    assert code == 2 and "unsafe-fixes" in err  # a wrong type stops the run, as every key's does
