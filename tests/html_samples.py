"""Report and plan dicts for the HTML page's tests, shaped as the JSON report's contract (and the
planned `components` list and plan), with untrusted text where a scanned repository can put it:
paths, snippets, messages, rule names, suggestions, fix contents, component names, plan items."""

from __future__ import annotations

from auditor import targets
from auditor.model import CATEGORIES, SEVERITIES

TARGETS = targets.names()  # every target of the registry (rules/targets.toml), npu included
OVERALL = targets.overall_set().to_dict()  # what `overall` averages: core v1, the six targets of format 4

SCRIPT = "<script>alert(1)</script>"
BREAKOUT = "</script><img src=x onerror=alert(2)>"
COMMENT = "<!-- <script>alert(3)</script>"
SEPARATORS = "one\u2028two\u2029three"
EVIL_PATH = "examples/</script><img src=x onerror=alert(4)>.py"


def finding(path: str, rule: str = "LK102", name: str = "cuda-call", category: str = "device",
            severity: str = "major", raises: tuple[str, ...] = ("tpu", "trainium", "mps", "xpu", "cpu"),
            degrades: tuple[str, ...] = (), **fields) -> dict:
    """One finding dict with every key of the contract."""
    effects = {t: "raises" if t in raises else "degrades" if t in degrades else "works" for t in TARGETS}
    base = {"rule": rule, "name": name, "category": category, "severity": severity, "path": path, "line": 3,
            "column": 5, "end_line": 3, "end_column": 12, "message": "`.cuda()` moves to an NVIDIA GPU.",
            "suggestion": "Use .to(torch.accelerator.current_accelerator()).", "min_torch": "2.6", "targets": effects,
            "snippet": "model = Net().cuda()", "context": None, "cell": None, "fix": None}
    base.update(fields)
    return base


def fix(content: str = "to(torch.accelerator.current_accelerator())", applicability: str = "safe",
        reason: str | None = None) -> dict:
    return {"applicability": applicability, "message": "Move to the current accelerator", "min_torch": "2.6",
            "reason": reason, "edits": [{"line": 3, "column": 15, "end_line": 3, "end_column": 21, "content": content}]}


def verdict(verdict: str, path: str = "pkg/core.py") -> dict:
    reasons = [] if verdict == "runs" else [{"rule": "LK102", "path": path, "line": 3, "why": "`.cuda()` calls"}]
    return {"verdict": verdict, "reasons": reasons}


def report(findings: list[dict], components: list[dict] | None = None, errors: list[dict] | None = None) -> dict:
    """A report dict around `findings` (scores and verdicts are set by hand, not computed)."""
    scores = {"rocm": 92.5, "tpu": 41.0, "trainium": 38.2, "mps": 55.0, "xpu": 60.4, "cpu": 70.0}
    scores = {t: scores.get(t, 50.0) for t in TARGETS}
    overall = round(sum(scores[t] for t in OVERALL["members"]) / len(OVERALL["members"]), 1)
    document = {
        "tool": {"name": "lockin-auditor", "version": "0.0.test"}, "format_version": 5,
        "targets": list(TARGETS), "overall": OVERALL, "incomplete": None, "scores": {"overall": overall, **scores},
        "grades": {"overall": "C", **{t: "C" for t in TARGETS}},
        "verdicts": {t: verdict("runs" if t == "rocm" else "fails", EVIL_PATH if t == "tpu" else "pkg/core.py")
                     for t in TARGETS},
        "costs": {t: ([] if t == "rocm" else [{"rule": "LK102", "name": "cuda-call", "count": 3, "files": 2, "points": 20.0}])
                  for t in TARGETS},
        "summary": {"files": 9, "files_with_findings": len({f["path"] for f in findings}), "findings": len(findings),
                    "errors": len(errors or []), "suppressed": 0,
                    "by_category": {c: sum(f["category"] == c for f in findings) for c in CATEGORIES},
                    "by_severity": {s: sum(f["severity"] == s for f in findings) for s in SEVERITIES},
                    "by_rule": {}, "by_context": {}},
        "run": {"files_parsed": 9, "files_cached": 0}, "errors": errors or [], "warnings": [],
        "root": "/repo", "scan_root": "/repo", "gate": {"passed": True, "exit_code": 0, "reasons": [], "checks": []},
        "baseline": None, "changed_lines": None, "suppressed": [], "findings": findings,
    }
    if components is not None:
        document["components"] = components
    return document


def component(name: str, kind: str, paths: list[str], fails: bool) -> dict:
    return {"name": name, "kind": kind, "paths": paths,
            "verdicts": {t: verdict("fails" if fails and t != "rocm" else "runs") for t in TARGETS},
            "scores": {"overall": 50.0 if fails else 100.0, **{t: (40.0 if fails and t != "rocm" else 100.0) for t in TARGETS}}}


def sample_findings() -> list[dict]:
    return [
        finding("pkg/core.py", fix=fix()),
        finding("pkg/core.py", rule="LK205", name="cuda-memory-stats", category="cuda-api", severity="minor", line=9,
                raises=(), degrades=("mps", "xpu"), context="guarded", snippet="torch.cuda.max_memory_allocated()"),
        finding("pkg/sub/ops.py", rule="LK401", name="cuda-source-file", category="kernel", severity="blocker",
                raises=tuple(TARGETS), line=1),
        finding("examples/demo.py", snippet=SCRIPT, message=f"snippet holds {SCRIPT}", line=7),
        finding(EVIL_PATH, rule="LK999", name="<b>bold</b>", snippet=BREAKOUT, message=f"{COMMENT} and {SEPARATORS}",
                suggestion="<svg onload=alert(5)>", fix=fix(content="<img src=x onerror=alert(6)>", applicability="unsafe")),
        finding("notebooks/explore.ipynb", cell=3, line=2, column=1, snippet="x = torch.zeros(3, device='cuda')",
                rule="LK101", name="cuda-device-string", fix=fix(applicability="display", reason="the torch floor is 2.1")),
        finding("requirements.txt", rule="LK504", name="gpu-only-package", category="dependency", severity="blocker",
                line=1, column=1, snippet="flash-attn==2.5.8", min_torch=None, suggestion=""),
        finding("tests/test_core.py", rule="LK101", name="cuda-device-string", severity="info", raises=(), context="test"),
    ]


def sample_components() -> list[dict]:
    return [component("pkg", "package", ["pkg"], fails=True),
            component("examples <i>x</i>", "examples", ["examples/"], fails=True),
            component("notebooks", "notebooks", ["notebooks"], fails=False)]


def sample_report() -> dict:
    return report(sample_findings(), sample_components(),
                  errors=[{"path": "broken <script>.py", "kind": "parse", "message": f"bad {SCRIPT}"}])


def sample_plan() -> dict:
    return {"target": "tpu", "steps": [
        {"title": "Dependencies first", "effort": "hours", "reason": "flash-attn has no TPU build",
         "items": [{"text": f"replace flash-attn {SCRIPT}", "path": "requirements.txt", "line": 1, "effort": "minutes"},
                   {"text": "custom kernels have no TPU equivalent", "path": None, "line": None, "effort": "no equivalent"}]},
        {"title": "One place for hardware choices", "effort": "days", "reason": "3 files choose a device",
         "items": [{"text": "pkg/core.py picks cuda", "path": "pkg/core.py", "line": 3, "effort": "minutes"}]},
    ]}


WITHHELD = ("1 file(s) failed with an internal error, so their findings are missing (first: pkg/boom.py): no score "
            "is given, and a verdict that does not fail is unknown")


def withheld_report() -> dict:
    """An incomplete run (format 5): a file failed with an internal error, so every score and grade is
    null, and each verdict is `unknown` (a reason with no rule or line: the file not checked) but
    where a finding fails it."""
    findings = sample_findings()
    document = report(findings, errors=[{"path": "pkg/boom.py", "kind": "internal",
                                         "message": "internal error while checking this file: KeyError: 'x'"}])
    missed = {"rule": None, "path": "pkg/boom.py", "line": None, "why": "not checked (internal error): what it holds is unknown"}
    document["incomplete"] = WITHHELD
    document["scores"] = {"overall": None, **dict.fromkeys(TARGETS)}
    document["grades"] = {"overall": None, **dict.fromkeys(TARGETS)}
    document["verdicts"] = {t: ({"verdict": "unknown", "reasons": [missed]} if t == "rocm" else verdict("fails"))
                            for t in TARGETS}
    document["gate"] = {"passed": False, "exit_code": 2, "reasons": [WITHHELD], "checks": ["complete"]}
    return document


def bulk_report(count: int) -> dict:
    return report([finding(f"gen/file_{i:04d}.py", line=i + 1) for i in range(count)])
