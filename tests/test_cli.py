"""The `audit` command line: commands, options, exit codes, colour and one-line usage errors.

Most cases call `auditor.cli.main([...])` (it returns the exit code); a few run the real
entry point in a subprocess to check what a user's terminal sees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor import TOOL_NAME, __version__, targets
from auditor.cli import main

ROOT = Path(__file__).resolve().parent.parent
CORE = "LK101,LK102,LK103,LK201"
ANSI = "\x1b["
ANSI_COLOUR = "\x1b[3"  # a foreground colour, not just bold


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "train.py").write_text(
        "import torch\nmodel = Net().cuda()\nx = torch.zeros(3, device='cuda')\n"
        "if torch.cuda.is_available():\n    pass\n", encoding="utf-8")
    (tmp_path / "clean.py").write_text("import torch\nx = torch.ones(2).to(device)\n", encoding="utf-8")
    return tmp_path


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run main(args); return (exit code, stdout, stderr)."""
    for name in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)

    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def run_audit(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **(env or {})}
    return subprocess.run([sys.executable, "-m", "auditor", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=120)


def rules_of(out: str) -> list[str]:
    return [f["rule"] for f in json.loads(out)["findings"]]


# -- commands ------------------------------------------------------------------------------------

def test_path_alone_means_scan(cli, repo):
    plain = cli(str(repo), "--select", CORE, "--format", "json", "--no-cache")
    explicit = cli("scan", str(repo), "--select", CORE, "--format", "json", "--no-cache")
    assert plain == explicit
    assert plain[0] == 0 and sorted(rules_of(plain[1])) == ["LK101", "LK102", "LK201"]


def test_no_arguments_scans_the_working_directory(cli, repo, monkeypatch):
    monkeypatch.chdir(repo)
    code, out, _ = cli("--format", "json", "--select", CORE)
    assert code == 0 and {f["path"] for f in json.loads(out)["findings"]} == {"train.py"}


def test_version(cli):
    assert cli("--version") == (0, f"{TOOL_NAME} {__version__}\n", "")
    assert cli("-V")[1] == f"{TOOL_NAME} {__version__}\n"


def test_rules_lists_the_core_rules(cli):
    code, out, _ = cli("rules")
    assert code == 0
    for text in ("LK101", "hardcoded-cuda-device", "LK102", "LK103", "LK201"):
        assert text in out
    code, out, _ = cli("rules", "--format", "json")
    listed = {r["code"]: r for r in json.loads(out)}
    assert code == 0 and listed["LK102"]["name"] == "cuda-method-call"
    assert set(listed["LK102"]["targets"]) == set(targets.names())


@pytest.mark.parametrize("key", ["LK102", "lk102", "cuda-method-call"])
def test_explain_by_code_or_name(cli, key):
    code, out, err = cli("explain", key)
    assert code == 0 and err == ""
    assert "LK102 cuda-method-call" in out and "Use instead" in out


def test_explain_unknown_rule(cli):
    code, out, err = cli("explain", "LK999")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "audit rules" in err


@pytest.mark.parametrize(("typo", "meant"), [("LK12", "LK102"), ("cuda-method-cal", "LK102 cuda-method-call"),
                                             ("hardcoded-cuda-devise", "hardcoded-cuda-device")])
def test_explain_says_did_you_mean(cli, typo, meant):
    code, out, err = cli("explain", typo)
    assert code == 2 and out == "" and err.count("\n") == 1 and "did you mean" in err and meant in err


def test_explain_all_and_json(cli):
    from auditor.checks.registry import all_rules

    codes = [rule.code for rule in all_rules()]
    code, out, _ = cli("explain", "--all")
    assert code == 0 and [line.split()[1] for line in out.splitlines() if line.startswith("# LK")] == codes
    code, out, _ = cli("explain", "LK102", "--format", "json")
    record = json.loads(out)
    assert code == 0 and record["code"] == "LK102" and record["name"] == "cuda-method-call"
    assert record["markdown"].startswith("# LK102 cuda-method-call") and record["why"] and record["instead"]
    assert {"id", "applicability", "min_torch", "summary"} == set(record["fixes"][0]) if record["fixes"] else True
    listed = json.loads(cli("rules", "--format", "json")[1])
    assert {k: record[k] for k in listed[0]} == next(r for r in listed if r["code"] == "LK102")
    code, out, _ = cli("explain", "--all", "-f", "json")
    assert code == 0 and [r["code"] for r in json.loads(out)] == codes
    for args in (["explain", "--all", "LK102"], ["explain"]):
        code, out, err = cli(*args)
        assert code == 2 and out == "" and err.count("\n") == 1 and "--all" in err


def test_help(cli):
    code, out, _ = cli("--help")
    assert code == 0 and "scan" in out and "explain" in out


# -- report destinations ----------------------------------------------------------------------------

def test_json_stdout_is_only_json_and_warnings_go_to_stderr(cli, repo, monkeypatch):
    import auditor.checks.registry as registry

    monkeypatch.setattr(registry, "registry_warnings", lambda: ("plugin 'x' failed to load: boom",))
    code, out, err = cli(str(repo), "--format", "json", "--select", CORE, "--fail-on", "info")
    assert code == 1
    report = json.loads(out)  # the whole of stdout parses
    assert report["warnings"] == ["plugin 'x' failed to load: boom"]
    assert "audit: warning: plugin 'x' failed to load: boom" in err
    assert "--fail-on" in err


def test_output_file(cli, repo, tmp_path):
    target = tmp_path / "out" / "report.json"
    target.parent.mkdir()
    code, out, err = cli(str(repo), "--format", "json", "--select", CORE, "--output", str(target))
    assert code == 0 and out == "" and err == ""
    assert sorted(rules_of(target.read_text(encoding="utf-8"))) == ["LK101", "LK102", "LK201"]
    code, out, _ = cli(str(repo), "--select", CORE, "-o", str(tmp_path / "out" / "report.txt"))
    text = (tmp_path / "out" / "report.txt").read_text(encoding="utf-8")
    assert code == 0 and out == "" and "train.py" in text and ANSI not in text


def test_output_into_missing_folder_is_a_usage_error(cli, repo, tmp_path):
    code, _, err = cli(str(repo), "--output", str(tmp_path / "nope" / "r.json"))
    assert code == 2 and err.count("\n") == 1 and "--output" in err


def test_quiet_and_silent_as_ruff(cli, repo):
    """ruff's -q prints the diagnostics and nothing else, -s nothing at all (the exit code speaks);
    --summary-only is the other way round: everything but the findings."""
    code, out, err = cli(str(repo), "--select", CORE, "-q", "--no-cache", "--format", "concise")
    assert code == 0 and err == "" and out and all(": LK" in line for line in out.splitlines())
    code, out, err = cli(str(repo), "--select", CORE, "--quiet", "--no-cache")
    assert code == 0 and err == "" and "LK102" in out and "fix:" in out
    assert "Portability score" not in out and "Does it run" not in out and "category" not in out
    code, out, err = cli(str(repo), "--select", CORE, "-s", "--no-cache", "--fail-under", "99")
    assert code == 1 and out == "" and err == ""
    code, out, err = cli(str(repo), "--select", CORE, "-q", "--no-cache", "--fail-under", "99")
    assert code == 1 and "below --fail-under 99" in err  # -q still says why it exits 1
    code, out, err = cli(str(repo), "--select", CORE, "--silent", "--no-cache", "-o", str(repo / "r.txt"))
    assert code == 0 and out == err == "" and not (repo / "r.txt").exists()
    code, out, err = cli(str(repo / "nothere"), "-s")
    assert code == 2 and "path not found" in err  # an error that exits 2 still says why
    code, out, _ = cli(str(repo), "--select", CORE, "--summary-only", "--no-cache")
    assert code == 0 and "Portability score" in out and "Does it run" in out and "fix:" not in out


def test_cache_options(cli, repo, tmp_path):
    cli(str(repo), "--select", CORE, "--no-cache")
    assert not (repo / ".lockin_auditor_cache").exists()
    elsewhere = tmp_path / "cache-here"
    first = cli(str(repo), "--select", CORE, "--format", "json", "--cache-dir", str(elsewhere))
    assert first[0] == 0 and elsewhere.is_dir()
    again = cli(str(repo), "--select", CORE, "--format", "json", "--cache-dir", str(elsewhere))
    assert rules_of(again[1]) == rules_of(first[1])


def test_jobs_do_not_change_the_report(cli, repo):
    serial = cli(str(repo), "--select", CORE, "--format", "json", "--no-cache", "--jobs", "1")
    pooled = cli(str(repo), "--select", CORE, "--format", "json", "--no-cache", "-j", "2")
    assert serial == pooled and serial[0] == 0


# -- gates -------------------------------------------------------------------------------------------

def test_fail_under_with_targets(cli, repo):
    # The core rules work on ROCm and raise on CPU, so only the CPU score drops.
    assert cli(str(repo), "--select", CORE, "--fail-under", "99", "--target", "rocm")[0] == 0
    code, _, err = cli(str(repo), "--select", CORE, "--fail-under", "99", "--target", "cpu")
    assert code == 1 and "cpu score" in err and "--fail-under 99" in err
    assert cli(str(repo), "--select", CORE, "--fail-under", "99", "--target", "rocm,cpu")[0] == 1
    assert cli(str(repo), "--select", CORE, "--fail-under", "99", "-t", "rocm", "-t", "CPU")[0] == 1
    assert cli(str(repo), "--select", CORE, "--fail-under", "99")[0] == 1  # overall by default
    assert cli(str(repo), "--select", CORE, "--fail-under", "0", "--target", "cpu")[0] == 0
    assert cli(str(repo / "clean.py"), "--select", CORE, "--fail-under", "100")[0] == 0


def test_fail_on_severity(cli, repo):
    assert cli(str(repo), "--select", CORE, "--fail-on", "major")[0] == 1
    assert cli(str(repo), "--select", CORE, "--fail-on", "BLOCKER")[0] == 0
    assert cli(str(repo), "--select", "LK201", "--fail-on", "blocker")[0] == 0
    assert cli(str(repo / "clean.py"), "--select", CORE, "--fail-on", "info")[0] == 0


def test_select_and_ignore(cli, repo):
    assert rules_of(cli(str(repo), "--select", "LK102", "--format", "json")[1]) == ["LK102"]
    assert rules_of(cli(str(repo), "--select", "cuda-method-call", "--format", "json")[1]) == ["LK102"]
    got = rules_of(cli(str(repo), "--select", CORE, "--ignore", "LK102,LK201", "--format", "json")[1])
    assert got == ["LK101"]
    got = rules_of(cli(str(repo), "--select", "LK1", "--select", "LK201", "--format", "json")[1])
    assert sorted(got) == ["LK101", "LK102", "LK201"]


# -- colour --------------------------------------------------------------------------------------------

def test_colour_follows_flag_and_environment(cli, repo, monkeypatch):
    args = (str(repo), "--select", CORE)
    assert ANSI not in cli(*args)[1]  # not a terminal
    assert ANSI_COLOUR in cli(*args, "--color", "always")[1]
    assert ANSI not in cli(*args, "--color", "never")[1]
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert ANSI_COLOUR in cli(*args)[1]
    assert ANSI not in cli(*args, "--color", "never")[1]
    monkeypatch.delenv("FORCE_COLOR")
    monkeypatch.setenv("NO_COLOR", "1")
    assert ANSI not in cli(*args)[1]
    assert ANSI_COLOUR in cli(*args, "--color", "always")[1]  # the explicit flag wins


def test_colour_never_in_json(cli, repo, monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    out = cli(str(repo), "--select", CORE, "--format", "json", "--color", "always")[1]
    assert ANSI not in out and json.loads(out)


# -- usage errors: exit 2, exactly one line on stderr that says what to do -----------------------------

USAGE_ERRORS = [
    (["--bogus"], "--bogus"),
    (["-x", "."], "-x"),
    (["scan", "--format"], "--format"),
    (["--format", "xml", "."], "xml"),
    (["--fail-under", "abc", "."], "--fail-under"),
    (["--fail-under", "101", "."], "--fail-under"),
    (["--color", "purple", "."], "--color"),
    (["--max-file-size", "0", "."], "--max-file-size"),
    (["--jobs", "-1", "."], "--jobs"),
    (["does/not/exist"], "does/not/exist"),
    ([".", "--target", "moon", "--fail-under", "50"], "moon"),
    ([".", "--fail-on", "critical"], "critical"),
    ([".", "--select", "LK999"], "LK999"),
    ([".", "--ignore", "no-such-rule"], "no-such-rule"),
    (["explain"], "--all"),
    (["explain", "nope"], "nope"),
    (["rules", "--format", "yaml"], "yaml"),
]


@pytest.mark.parametrize(("args", "mentions"), USAGE_ERRORS, ids=[" ".join(a) for a, _ in USAGE_ERRORS])
def test_usage_errors_are_one_line(cli, repo, monkeypatch, args, mentions):
    monkeypatch.chdir(repo)
    code, out, err = cli(*args)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("audit: error: "), err
    assert mentions in err
    assert "audit" in err.split("error: ", 1)[1] or "choose" in err or "give" in err  # says what to do


@pytest.mark.parametrize("args", [["--bogus"], ["missing-dir"], [".", "--target", "moon"], ["--format", "xml"]])
def test_usage_errors_in_a_real_process(repo, args):
    proc = run_audit(*args, cwd=repo)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("audit: error: ")
    assert "Traceback" not in proc.stderr


def test_real_process_scan_and_json(repo):
    proc = run_audit(str(repo), "--format", "json", "--select", CORE)
    assert proc.returncode == 0 and proc.stderr == ""
    assert sorted(rules_of(proc.stdout)) == ["LK101", "LK102", "LK201"]


def test_closed_pipe_is_not_an_error(repo):
    """`audit . | head -1`: the reader goes away early; no traceback, the gate decides the code."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(30):
        (repo / f"m{_}.py").write_text("import torch\n" + "x = y.cuda()\n" * 50, encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "auditor", str(repo), "--select", CORE],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "Exception ignored" not in err


def test_internal_error_is_one_line(cli, repo, monkeypatch):
    import auditor.run

    def boom(*args, **kwargs):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(auditor.run, "scan", boom)
    code, _, err = cli(str(repo))
    assert code == 2 and err.count("\n") == 1 and "internal error" in err and "simulated bug" in err


def test_check_is_scan_as_in_ruff(cli, repo, monkeypatch):
    monkeypatch.chdir(repo)
    def report(*args: str) -> dict:
        code, out, _ = cli(*args, "--select", CORE, "--format", "json", "--no-cache")
        assert code == 0
        return {k: v for k, v in json.loads(out).items() if k != "run"}

    assert report("check", ".") == report(".")
    code, out, _ = cli("check", "--select", CORE, "--format", "json")  # no path: the current directory
    assert code == 0 and sorted(rules_of(out)) == ["LK101", "LK102", "LK201"]
    (repo / "check").mkdir()  # a folder named like the command: as with `rules`, `./check` scans it
    (repo / "check" / "x.py").write_text("import torch\ntorch.cuda.synchronize()\n", encoding="utf-8")
    assert {f["path"] for f in json.loads(cli("./check", "--format", "json")[1])["findings"]} == {"check/x.py"}


def test_shell_completion_is_on(repo):
    # the script the shell sources, asked for as the installed hook asks (`--show-completion` alone
    # detects the shell from the process tree, which a CI runner may not have)
    script = run_audit(cwd=repo, env={"_AUDIT_COMPLETE": "source_bash"})
    assert script.returncode == 0 and "_AUDIT_COMPLETE" in script.stdout and "complete " in script.stdout
    for words, expected in (("audit ex", "explain"), ("audit scan --fail-o", "--fail-on-regression")):
        env = {"_AUDIT_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)}
        proc = run_audit(cwd=repo, env=env)
        assert expected in proc.stdout.split(), (words, proc.stdout, proc.stderr)


@pytest.mark.parametrize("command", [["scan", "--help"], ["--help"], ["explain", "--help"]])
def test_help_piped_at_80_columns_keeps_every_option_name(repo, command):
    """Piped (or on a narrow terminal) the help is click's plain layout: rich's table cut names
    (`--force-excl…`)."""
    proc = run_audit(*command, cwd=repo, env={"COLUMNS": "80"})
    assert proc.returncode == 0 and "…" not in proc.stdout and "╭" not in proc.stdout
    if command[0] == "scan":
        from auditor.config.keys import options

        for key in options():
            for flag in key.flags:
                for name in flag.split("/"):
                    assert name.strip() in proc.stdout, name
        assert "--force-exclude / --no-force-exclude" in proc.stdout


def test_show_files_and_show_settings(cli, repo, monkeypatch):
    monkeypatch.chdir(repo)
    (repo / ".gitignore").write_text("ignored.py\n", encoding="utf-8")
    (repo / ".git").mkdir()
    (repo / "ignored.py").write_text("x = y.cuda()\n", encoding="utf-8")
    (repo / "notes.md").write_text("cuda\n", encoding="utf-8")
    code, out, err = cli("--show-files")
    assert code == 0 and err == "" and out.splitlines() == ["clean.py", "train.py"]
    assert cli("check", "--show-files", "--exclude", "clean.py")[1].splitlines() == ["train.py"]
    (repo / "pyproject.toml").write_text('[tool.lockin-auditor]\nfail-on = "major"\nexclude = ["x/"]\n',
                                         encoding="utf-8")
    code, out, _ = cli("--show-settings", "--target", "tpu")
    lines = out.splitlines()
    assert code == 0 and lines[0].endswith("pyproject.toml")
    assert 'fail-on = "major"' in out and any(line.startswith('fail-on = "major"  # ') and "pyproject.toml" in line
                                             for line in lines)
    assert 'targets = ["tpu"]  # command line' in lines and "respect-gitignore = true  # default" in lines
    assert not (repo / ".lockin_auditor_cache").exists()  # nothing was scanned
