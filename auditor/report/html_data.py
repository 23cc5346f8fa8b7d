"""The HTML page's data: the JSON report's dict (and a plan's), made compact for the page.

A report on a large tree repeats the same paths, messages, suggestions and snippets thousands of
times, so every string a finding carries goes once into a table (`strings`, the most used first,
so the common ones get the shortest indexes) and a finding is a row of numbers laid out as
FINDING_FIELDS says. Strings are indexes into that table and -1 stands for null; a finding's
path is an index into `paths`, each a [folder, file name] pair of strings (a large tree has a
few hundred folders for thousands of files). Everything else in the report is small and goes in
as it is."""

from __future__ import annotations

from collections import Counter
from typing import Any

from auditor.report.file_costs import file_costs

FINDING_FIELDS = ("path", "line", "column", "rule", "name", "category", "severity", "message", "suggestion", "snippet",
                  "context", "cell", "effects", "fix", "min_torch", "component")
FIX_FIELDS = ("applicability", "message", "min_torch", "reason", "edits")
EDIT_FIELDS = ("line", "column", "end_line", "end_column", "content")
# A finding's effect per target, one letter each in the order of `targets`: what the score and
# the verdicts read (a target missing from a finding counts as "raises", as auditor.portability.score has it).
EFFECT_LETTERS = {"works": "w", "degrades": "d", "raises": "r"}
FILES_LISTED = 25  # files that cost the most, per target


class _Str(str):
    """A string bound for the table (other strings in the data stay as they are)."""


def _s(value: object) -> _Str | None:
    return None if value is None else _Str(value)


def targets_of(report: dict) -> list[str]:
    """The report's targets: its `targets` list, else its score keys (never a list of our own)."""
    if report.get("targets"):
        return [str(t) for t in report["targets"]]
    return [t for t in report.get("scores", {}) if t != "overall"]


def overall_members(report: dict, targets: list[str]) -> list[str]:
    """The targets the report's `overall` score averages (its `overall.members`, format 5), else
    every target."""
    overall = report.get("overall")
    members = overall.get("members") if isinstance(overall, dict) else None
    chosen = [str(m) for m in members if str(m) in targets] if isinstance(members, list) else []
    return chosen or list(targets)


def _verdict_of(value: object) -> tuple[str | None, list]:
    if isinstance(value, dict):
        return value.get("verdict"), list(value.get("reasons") or [])
    return (value if isinstance(value, str) else None), []


def components_of(report: dict, targets: list[str]) -> list[dict] | None:
    """The report's `components` (name, kind, paths, verdicts, scores) with each verdict as its
    word and its reasons beside it; None when the report has none."""
    if report.get("components") is None:
        return None
    out = []
    for component in report["components"]:
        verdicts, reasons = {}, {}
        for target in targets:
            verdicts[target], reasons[target] = _verdict_of((component.get("verdicts") or {}).get(target))
        scores = {key: value for key, value in (component.get("scores") or {}).items()
                  if isinstance(value, int | float) and not isinstance(value, bool)}
        out.append({"name": str(component.get("name", "")), "kind": str(component.get("kind", "")),
                    "paths": [str(p) for p in component.get("paths") or []],
                    "verdicts": verdicts, "reasons": reasons, "scores": scores})
    return out


def headline_findings(report: dict) -> list[dict]:
    """The findings the headline scores count: those of the shipped components (format 6), else all."""
    findings = report.get("findings") or []
    shipped = {c.get("name") for c in report.get("components") or [] if isinstance(c, dict) and c.get("shipped")}
    if not shipped:
        return findings
    return [f for f in findings if f.get("component") in shipped]


def component_index(finding: dict, components: list[dict]) -> int:
    """The component a finding belongs to: the one it names (`component`), else the one whose
    path holds it most closely; -1 for none."""
    named = finding.get("component")
    if isinstance(named, str):
        for i, component in enumerate(components):
            if component["name"] == named:
                return i
    best, best_length = -1, -1
    path = finding.get("path", "")
    for i, component in enumerate(components):
        for prefix in component["paths"]:
            prefix = prefix.rstrip("/")
            inside = prefix in ("", ".") or path == prefix or path.startswith(prefix + "/")
            length = 0 if prefix in ("", ".") else len(prefix)
            if inside and length > best_length:
                best, best_length = i, length
    return best


def _fix_row(fix: dict) -> list:
    edits = [[e["line"], e["column"], e["end_line"], e["end_column"], _s(e["content"])] for e in fix.get("edits") or []]
    return [_s(fix.get("applicability")), _s(fix.get("message")), _s(fix.get("min_torch")), _s(fix.get("reason")), edits]


def _finding_row(f: dict, targets: list[str], path: int, fix: int, component: int) -> list:
    effects = f.get("targets") or {}
    letters = "".join(EFFECT_LETTERS.get(effects.get(t, "raises"), "r") for t in targets)
    return [path, f["line"], f["column"], _s(f["rule"]), _s(f["name"]), _s(f["category"]), _s(f["severity"]),
            _s(f["message"]), _s(f.get("suggestion") or ""), _s(f.get("snippet") or ""), _s(f.get("context")),
            f.get("cell") if f.get("cell") is not None else -1, _s(letters), fix, _s(f.get("min_torch")), component]


def _index_strings(rows: list) -> tuple[list[str], list]:
    """Replace every _Str in `rows` by its index in a table ordered by use, None by -1."""
    counts: Counter = Counter()

    def count(value: Any) -> None:
        if isinstance(value, _Str):
            counts[str(value)] += 1
        elif isinstance(value, list):
            for item in value:
                count(item)

    count(rows)
    table = sorted(counts, key=lambda s: (-counts[s], s))
    index = {s: i for i, s in enumerate(table)}

    def encode(value: Any) -> Any:
        if isinstance(value, _Str):
            return index[str(value)]
        if value is None:
            return -1
        if isinstance(value, list):
            return [encode(item) for item in value]
        return value

    return table, encode(rows)


def page_data(report: dict, plan: dict | None = None) -> dict:
    """Everything the page shows, as one JSON-ready dict."""
    targets = targets_of(report)
    components = components_of(report, targets)
    findings = report.get("findings") or []
    fixes: dict[str, int] = {}
    fix_rows: list[list] = []
    paths: dict[str, int] = {}
    path_rows: list[list] = []
    rows = []
    for f in findings:
        path = paths.get(f["path"], -1)
        if path < 0:
            path = paths[f["path"]] = len(path_rows)
            folder, slash, name = f["path"].rpartition("/")
            path_rows.append([_s(folder) if slash else None, _s(name)])
        fix = -1
        if f.get("fix"):
            row = _fix_row(f["fix"])
            key = repr(row)
            fix = fixes.get(key, -1)
            if fix < 0:
                fix = fixes[key] = len(fix_rows)
                fix_rows.append(row)
        rows.append(_finding_row(f, targets, path, fix, component_index(f, components) if components else -1))
    strings, (rows, fix_rows, path_rows) = _index_strings([rows, fix_rows, path_rows])
    return {
        "tool": report.get("tool"),
        "format_version": report.get("format_version"),
        "root": report.get("root"),
        "scan_root": report.get("scan_root"),
        "targets": targets,
        "overall": report.get("overall"),  # the set `overall` averages: {name, version, members}
        "incomplete": report.get("incomplete"),  # why the scores are withheld (null: they are not)
        "scores": report.get("scores", {}),
        "grades": report.get("grades", {}),
        "verdicts": {t: dict(zip(("verdict", "reasons"), _verdict_of(v), strict=True))
                     for t, v in (report.get("verdicts") or {}).items()},
        "costs": report.get("costs", {}),
        "summary": report.get("summary", {}),
        "gate": report.get("gate"),
        "baseline": report.get("baseline"),
        "changed_lines": report.get("changed_lines"),
        "errors": report.get("errors") or [],
        "warnings": report.get("warnings") or [],
        "components": components,
        "file_costs": file_costs(headline_findings(report), targets, FILES_LISTED, overall_members(report, targets),
                                 report.get("costs") or None),
        "finding_fields": list(FINDING_FIELDS),
        "fix_fields": list(FIX_FIELDS),
        "edit_fields": list(EDIT_FIELDS),
        "effect_letters": {letter: effect for effect, letter in EFFECT_LETTERS.items()},
        "strings": strings,
        "paths": path_rows,
        "findings": rows,
        "fixes": fix_rows,
        "plan": plan,
    }
