"""The README promises things the code must keep true."""

from __future__ import annotations

import re
from pathlib import Path

from auditor.report.rules_view import rules_markdown_table

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_first_lines_are_the_two_setup_commands():
    block = re.search(r"```sh\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert len(block) == 2
    assert "pip install ." in block[0] and "audit fixtures/demo-repo" in block[0]
    assert "pip install '.[test]'" in block[1] and "pytest" in block[1]
    assert README.index("```sh") < README.index("\n## ")


def test_ci_runs_the_readme_test_command():
    test_command = re.search(r"```sh\n(.*?)```", README, re.S).group(1).strip().splitlines()[1]
    assert test_command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_demo_repo_exists():
    assert (ROOT / "fixtures" / "demo-repo").is_dir()


def test_rule_table_is_current():
    table = re.search(r"<!-- rules-table:start -->\n(.*?)\n<!-- rules-table:end -->", README, re.S)
    assert table is not None
    assert table.group(1).strip() == rules_markdown_table().strip(), (
        "README rule table is stale: regenerate it with "
        "`python -c 'from auditor.report.rules_view import rules_markdown_table as t; print(t())'`")


def test_yaml_examples_parse_and_use_real_flags():
    """The pre-commit, GitHub Actions and GitLab examples are valid YAML, and every `--flag` an
    `audit` command in the README uses exists."""
    import yaml

    from auditor.cli import app

    for block in re.findall(r"```yaml\n(.*?)```", README, re.S):
        assert yaml.safe_load(block) is not None
    import typer

    command = typer.main.get_command(app)
    known = {opt for cmd in (command, *command.commands.values()) for p in cmd.params
             for opt in (*p.opts, *p.secondary_opts)}  # the group's options too (--install-completion)
    used = set()
    for line in re.findall(r"(?:^|\s|- run: |- )audit (?:scan )?(\S.*)", README, re.M):
        used |= set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", line))
    assert used and used <= known, used - known


def test_kinds_table_is_current():
    from auditor.discover.kinds import markdown_table

    table = re.search(r"<!-- kinds-table:start -->\n(.*?)\n<!-- kinds-table:end -->", README, re.S)
    assert table is not None and table.group(1).strip() == markdown_table().strip(), (
        "README \"What is read\" table is stale: regenerate it with "
        "`python -c 'from auditor.discover.kinds import markdown_table as t; print(t())'`")
