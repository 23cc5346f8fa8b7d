"""`--format html`: one self-contained page (no network needed to view it) for people deciding on
a move: verdicts and scores per target as a chart, the components, findings by category and
severity, the files that cost the most points, and every finding with its code, context and
rewrite, filterable by target, component, category, severity and path; with a plan, its steps and
their effort.

    render_html(report_dict, plan_dict=None) -> str

It renders the JSON report's dict (auditor/report/json_report.build_report), so it stays in step
with that contract, and `audit plan` renders its page with the same function. The script and the
style sheet live in html_assets/ and are inlined. The data goes in as JSON inside a
`<script type="application/json">` block with `<`, `>`, `&` and every non-ASCII character
escaped, so no snippet, path or message can close the block, open a comment or break a line of
script; the page's script reads it with JSON.parse and writes it with textContent only. A Content
Security Policy lets nothing load from anywhere and runs only the page's own script (by its hash),
so even markup that got into the page could neither fetch nor run anything."""

from __future__ import annotations

import base64
import hashlib
import html
import json
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, TextIO

from auditor.report.html_data import page_data
from auditor.report.json_report import build_report

if TYPE_CHECKING:
    from auditor.report.model import Report

ASSETS = "html_assets"


@cache
def asset(name: str) -> str:
    """A file of auditor/report/html_assets/ (shipped in the wheel with the package)."""
    return files("auditor.report").joinpath(ASSETS, name).read_text(encoding="utf-8")


def script_json(value: object) -> str:
    """JSON that is inert inside a `<script>` block: no `</script>`, `<!--` or `]]>` can form (the
    characters are \\u escapes, which JSON.parse reads back), and ensure_ascii escapes U+2028,
    U+2029 and lone surrogates too, so the page is plain ASCII whatever the data holds."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii") + "'"


def _inline(name: str, closing: str) -> str:
    source = asset(name)
    if closing in source.lower():  # an asset is ours; this only guards a careless edit of one
        raise ValueError(f"{ASSETS}/{name} holds {closing!r}, which would end its block early")
    return source


def render_html(report: dict, plan: dict | None = None) -> str:
    """The page for a JSON report dict (and, for `audit plan`, its plan: `{"target", "headline",
    "steps": [{"title", "effort", "reason", "items": [{"text", "path", "line", "effort", "components",
    "optional"}]}], "after_fixes", "unseen", "questions"}`, or its ranking: `{"ranking": [{"rank",
    "target", "verdict", "score", "dependencies", "points", "why"}], "tools", "workload", "edge",
    "unseen", "questions"}`: auditor/plan/build.py)."""
    script = _inline("report.js", "</script")
    style = _inline("report.css", "</style")
    tool = report.get("tool") or {}
    name = str(tool.get("name") or "lockin-auditor")
    where = str(report.get("scan_root") or report.get("root") or "")
    subject = "NVIDIA lock-in" if not plan else "which target first" if "ranking" in plan else f"plan for {plan.get('target')}"
    title = f"{name}: {subject}" + (f" in {where}" if where else "")
    # our own words and base64 digests: nothing in it needs escaping in the attribute
    policy = (f"default-src 'none'; script-src {_hash(script)}; style-src {_hash(style)}; img-src data:; "
              "base-uri 'none'; form-action 'none'")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>{html.escape(title)}</title>\n"
        f"<style>{style}</style>\n"
        "</head>\n<body>\n"
        '<noscript><p>This report is drawn by its script: allow JavaScript for this file, or read the JSON '
        "report (<code>--format json</code>).</p></noscript>\n"
        '<main id="app"></main>\n'
        f'<script type="application/json" id="audit-data">{script_json(page_data(report, plan))}</script>\n'
        f"<script>{script}</script>\n"
        "</body>\n</html>\n"
    )


def render(report: Report, out: TextIO) -> None:
    out.write(render_html(build_report(report.result, report.scores, report=report)))
