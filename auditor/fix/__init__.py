"""Beside the pipeline: the fixes, rewrites carried by findings as plain text edits (ruff's
model), and what applies them.

- `floor.py`: the lowest PyTorch version the scanned project supports (a project-wide fact read
  before any file is checked; part of the cache key), from its dependency files or --torch-version.
- `device_owner.py`: the one place the project chooses its device (`DeviceOwner`: a helper or a
  `DEVICE` constant found, else a module the fix run creates), found once per fix run and carried
  in each file's facts; `Rewriter.device_expr()` writes the expression and imports that reach it.
- `plan.py`: how a rule describes a rewrite in terms of the nodes it saw (`FixPlan`, `NodeEdit`),
  with the helpers rules share (`Rewriter`: names through the file's own imports, added imports,
  guards, argument edits, the project's device), and the step that turns plans into `model.Fix`
  text edits (and the files a fix creates: `CreateFile` -> `model.NewFile`).
- `policy.py`: which fixes stay suggestions: a floor older than the fix needs, the CUDA-clean gate
  (catalogue 5.5), the finding's context.
- `clean.py`: per file, what a fix run made CUDA-clean and what still keeps a file from being so
  (stderr after the fix line, the JSON report's `fixes`).
- `swaps.py`: the catalogue-driven API swaps (`rules/fixes.toml`), the fix of every ApiRule.
- `edits.py`: text edits to offsets, conflicts between fixes, applying them.
- `imports.py`: imports a round of fixes left unused.
- `build.py`: asking the rules for their fixes after the walk (auditor.python.scan.place_findings).
- `layout.py`: the per-target dependency layout the display fixes of LK501/LK502 show.
- `applicability.py`: which fixes a run applies (the fixer and the reports' `[*]` agree);
- `apply.py`: fixing files until stable, validating each round, atomic writes and diffs.
- `run.py`: `audit --fix` / `--diff` end to end (run.py of the package root calls it).
"""
