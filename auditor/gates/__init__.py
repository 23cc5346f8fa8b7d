"""Beside the pipeline: what a run reports and whether it passes (the CI side).

- `suppress.py`: suppression comments (`# lockin: ignore[...]`, `# noqa: LK...`) and
  per-file-ignores, matched to findings in each kind's comment syntax;
- `add_noqa.py`: `--add-noqa`, writing those comments;
- `baseline.py`: `--write-baseline` / `--baseline`, fingerprints that survive code moving;
- `changed_lines.py`: `--diff-base`, the lines a change touches (git run with every way its
  configuration can start a program turned off);
- `judge.py`: the gate itself (`fail-under`, `fail-on`, `fail-on-regression`) and the exit code.
"""
