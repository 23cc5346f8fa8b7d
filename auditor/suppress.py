"""Inline suppressions, on the line where a finding starts:

    x = x.cuda()  # lockin: ignore[LK102]        one rule (codes or names, comma-separated)
    import pynvml  # lockin: ignore               every rule on this line
    torch.cuda.synchronize()  # noqa: LK204      ruff/flake8 style, with our codes

A bare `# noqa` is deliberately not honoured: codebases use it for flake8 and pyflakes, and
treating it as ours would silently hide lock-in."""

from __future__ import annotations

import re

from auditor.model import Finding

_DIRECTIVE = re.compile(
    r"#\s*lockin:\s*ignore(?:\[(?P<names>[^\]]*)\])?|#\s*noqa:\s*(?P<codes>[A-Za-z]+\d+(?:[\s,]+[A-Za-z]+\d+)*)",
    re.IGNORECASE,
)


def _suppressed(finding: Finding, line: str) -> bool:
    if "#" not in line:
        return False
    for match in _DIRECTIVE.finditer(line):
        listed = match.group("names") if match.group("names") is not None else match.group("codes")
        if listed is None:
            return True  # `# lockin: ignore` with no list
        wanted = {item.strip().lower() for item in re.split(r"[\s,]+", listed) if item.strip()}
        if finding.rule.lower() in wanted or finding.name in wanted:
            return True
    return False


def without_suppressed(findings: list[Finding], text: str) -> list[Finding]:
    """The findings whose first line carries no suppression for their rule."""
    if "#" not in text or not findings:
        return findings
    lines = text.splitlines()
    return [f for f in findings if not (0 < f.line <= len(lines) and _suppressed(f, lines[f.line - 1]))]
