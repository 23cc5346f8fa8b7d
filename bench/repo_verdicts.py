"""Headline verdicts against blind repository labels: does `audit` judge what a repository ships?

    python bench/repo_verdicts.py bench/labels/repos-tuning.toml [...] [--root DIR] [--table] [--reports DIR] [--save DIR]

A labels file holds one [[repo]] table per repository (format at the top of
bench/labels/repos-tuning.toml): its folder (`local_path`, or `name` under --root) and, per
target, the verdict reviewers gave it without seeing the tool's output. Each repository is audited
with the real command line (`--format json`, a throw-away cache) and its headline verdict per target
is compared with the label. Printed: per repository the tool's verdict and score per target beside
the label, then the agreement: exact (same verdict), and "fails or not" (the question a team asks
first: would it run there at all). `--table` prints the README's markdown table instead.
Exit 0 always: this measures, it does not gate."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

SHORT = {"runs": "runs", "runs-degraded": "deg", "fails": "fails", "unknown": "?"}


def audit(folder: Path, cache: Path) -> dict:
    """The JSON report of one repository, audited as a user would (the CLI, not the API)."""
    command = [sys.executable, "-m", "auditor", str(folder), "--format", "json", "--cache-dir", str(cache)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"audit {folder}: exit {done.returncode}: {done.stderr.strip()[:300]}")
    return json.loads(done.stdout)


def headline(report: dict, target: str) -> tuple[str, float | None]:
    verdict = report.get("verdicts", {}).get(target, {})
    return verdict.get("verdict", "?"), report.get("scores", {}).get(target)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("labels", nargs="+", type=Path)
    parser.add_argument("--root", type=Path, default=None, help="folder holding the repositories by name")
    parser.add_argument("--table", action="store_true", help="print the README table")
    parser.add_argument("--reports", type=Path, default=None,
                        help="read saved JSON reports (<name>.json) from this folder instead of auditing")
    parser.add_argument("--save", type=Path, default=None, help="keep each JSON report as <name>.json here")
    args = parser.parse_args()
    repos = [repo for path in args.labels for repo in tomllib.loads(path.read_text())["repo"]]
    exact = fails_agree = total = 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="repo-verdicts-") as cache:
        for repo in repos:
            folder = args.root / repo["name"] if args.root else Path(repo["local_path"])
            report = (json.loads((args.reports / f"{repo['name']}.json").read_text()) if args.reports
                      else audit(folder, Path(cache)))
            if args.save:
                args.save.mkdir(parents=True, exist_ok=True)
                (args.save / f"{repo['name']}.json").write_text(json.dumps(report))
            cells = []
            for target, label in repo["verdicts"].items():
                verdict, score = headline(report, target)
                total += 1
                exact += verdict == label["verdict"]
                fails_agree += (verdict == "fails") == (label["verdict"] == "fails")
                cells.append((target, verdict, score, label["verdict"]))
            rows.append((repo, report, cells))
    if args.table:
        print_table(rows)
    else:
        print_rows(rows)
    print(f"\nexact {exact}/{total} = {100 * exact / max(total, 1):.1f}%; "
          f"fails-or-not {fails_agree}/{total} = {100 * fails_agree / max(total, 1):.1f}%")
    return 0


def print_rows(rows: list) -> None:
    for repo, _report, cells in rows:
        marks = "  ".join(f"{t}:{SHORT.get(v, v)}{'' if s is None else f'({s:.0f})'}"
                          f"{'' if v == want else '≠' + SHORT.get(want, want)}" for t, v, s, want in cells)
        print(f"{repo['name']:<28} {marks}")


def print_table(rows: list) -> None:
    """The README's table: the tool's headline verdict and score per target (a mark where the blind
    label differs, with the label's word), the components it found, and what the repository ships."""
    targets = [target for target, *_ in rows[0][2]] if rows else []
    print("| repository | " + " | ".join(targets) + " | components | what it ships (label) |")
    print("|---" * (len(targets) + 3) + "|")
    for repo, report, cells in rows:
        parts = []
        for _, verdict, score, want in cells:
            text = f"{SHORT.get(verdict, verdict)} {'' if score is None else f'{score:.0f}'}".strip()
            parts.append(text if verdict == want else f"{text} (label: {SHORT.get(want, want)})")
        kinds: dict[str, int] = {}
        for component in report.get("components", []):
            kinds[component.get("kind", "?")] = kinds.get(component.get("kind", "?"), 0) + 1
        components = ", ".join(f"{kind}" + (f" ×{n}" if n > 1 else "") for kind, n in kinds.items())
        ships = " ".join(str(repo.get("headline", "")).split()).replace("|", "\\|")
        print(f"| {repo['name']} | " + " | ".join(parts) + f" | {components or '-'} | {ships} |")


if __name__ == "__main__":
    raise SystemExit(main())
