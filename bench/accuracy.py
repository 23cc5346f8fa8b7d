"""Accuracy against hand labels: recall over the lines reviewers must flag, precision over findings.

    python bench/accuracy.py /work/labels/labels-set1.json [...] --corpus /work/corpus [--show]

A labels file maps a path (relative to --corpus) to {"must": [lines], "optional": [lines]}.
A must line counts as found when a finding starts on it or a finding of at most three lines spans it;
a finding counts as correct when a line it spans is labelled must or optional."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from auditor.engine import ScanOptions, scan  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("labels", nargs="+")
    parser.add_argument("--corpus", default="/work/corpus")
    parser.add_argument("--show", action="store_true", help="print every miss and every extra finding")
    args = parser.parse_args()
    labels: dict[str, dict] = {}
    for name in args.labels:
        labels.update(json.loads(Path(name).read_text()))
    os.chdir(args.corpus)
    result = scan(sorted(labels), ScanOptions())
    by_path: dict[str, list] = {}
    for finding in result.findings:
        by_path.setdefault(finding.path, []).append(finding)
    must_total = must_found = findings_total = findings_ok = 0
    wrong_rules: Counter = Counter()
    missed_lines: list[str] = []
    extra: list[str] = []
    for path, label in sorted(labels.items()):
        must, optional = set(label.get("must", [])), set(label.get("optional", []))
        findings = by_path.get(path, [])
        text = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        for line in sorted(must):
            hit = any(f.line == line or (f.line <= line <= f.end_line and f.end_line - f.line < 3) for f in findings)
            must_found += hit
            if not hit:
                missed_lines.append(f"{path}:{line}: {text[line - 1].strip()[:110] if line <= len(text) else ''}")
        must_total += len(must)
        for f in findings:
            findings_total += 1
            ok = any(line in must or line in optional for line in range(f.line, f.end_line + 1))
            findings_ok += ok
            if not ok:
                wrong_rules[f.rule] += 1
                extra.append(f"{path}:{f.line}: {f.rule} {f.snippet[:100]}")
    print(f"files {len(labels)}, errors {len(result.errors)}")
    print(f"recall    {must_found}/{must_total} = {must_found / max(must_total, 1):.1%} of must-flag lines found")
    print(f"precision {findings_ok}/{findings_total} = {findings_ok / max(findings_total, 1):.1%} of findings on labelled lines")
    print(f"findings off labelled lines by rule: {dict(wrong_rules.most_common())}")
    if args.show:
        print("\nmissed:", *missed_lines, sep="\n  ")
        print("\nnot on labelled lines:", *extra, sep="\n  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
