"""Accuracy against hand labels: recall over the lines reviewers must flag, precision over findings.

    python bench/accuracy.py /work/labels/labels-set1.json [...] --corpus /work/corpus [--show]

A labels file maps a path (relative to --corpus) to {"must": [lines], "optional": [lines]} and,
optionally, "context": {"line": [contexts]} (main, guarded, optional, backend-module, own-package,
test, redundant, display: see rules/contexts.toml).
A must line counts as found when a finding starts on it or a finding of at most three lines spans it;
a finding counts as correct when a line it spans is labelled must or optional. For a found must line
with labelled contexts, the context agrees when a finding on it shares one of them (a finding's
"test+guarded" shares "test" and "guarded"; no context is "main")."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from auditor.config.settings import Settings  # noqa: E402
from auditor.pipeline.scan import scan  # noqa: E402


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
    result = scan(sorted(labels), Settings(cache=False))  # the corpus is read-only: no cache folder there
    by_path: dict[str, list] = {}
    for finding in result.findings:
        by_path.setdefault(finding.path, []).append(finding)
    must_total = must_found = findings_total = findings_ok = 0
    context_total = context_agree = 0
    confusion: Counter = Counter()  # (labelled, reported) for disagreements
    disagreements: list[str] = []
    wrong_rules: Counter = Counter()
    missed_lines: list[str] = []
    extra: list[str] = []
    for path, label in sorted(labels.items()):
        must, optional = set(label.get("must", [])), set(label.get("optional", []))
        findings = by_path.get(path, [])
        text = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        contexts = {int(k): set(v) for k, v in label.get("context", {}).items()}
        for line in sorted(must):
            on_line = [f for f in findings if f.line == line or (f.line <= line <= f.end_line and f.end_line - f.line < 3)]
            hit = bool(on_line)
            must_found += hit
            if not hit:
                missed_lines.append(f"{path}:{line}: {text[line - 1].strip()[:110] if line <= len(text) else ''}")
            elif contexts.get(line):
                reported = {name for f in on_line for name in (f.context or "main").split("+")}
                context_total += 1
                if reported & contexts[line]:
                    context_agree += 1
                else:
                    confusion[("+".join(sorted(contexts[line])), "+".join(sorted(reported)))] += 1
                    disagreements.append(f"{path}:{line}: labelled {sorted(contexts[line])}, reported "
                                         f"{sorted(reported)}: {text[line - 1].strip()[:90] if line <= len(text) else ''}")
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
    print(f"context   {context_agree}/{context_total} = {context_agree / max(context_total, 1):.1%} of found must lines "
          f"with a labelled context agree")
    if confusion:
        print("context disagreements (labelled -> reported): "
              + ", ".join(f"{a} -> {b}: {n}" for (a, b), n in confusion.most_common()))
    if args.show:
        print("\nmissed:", *missed_lines, sep="\n  ")
        print("\nnot on labelled lines:", *extra, sep="\n  ")
        print("\ncontext disagreements:", *disagreements, sep="\n  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
