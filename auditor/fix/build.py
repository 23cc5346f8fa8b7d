"""Asking the rules for their fixes once a file's walk is done (auditor.python.scan.place_findings).

Only rules that offer fixes are asked, only about their own reports, and the per-file helper
(`Rewriter`) computes the tree facts a fix needs on first use: a file without fixable findings
costs nothing more than before."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from auditor.fix.plan import FixPlan, Placer, PlannedFix, Reported, Rewriter, anchor_nodes

if TYPE_CHECKING:
    import libcst as cst

    from auditor.context import PythonContext


@dataclass
class Plans:
    """Each pending report's fix plans (by its index in ctx.pending) and the nodes they anchor on."""

    by_report: dict[int, tuple[list[FixPlan], bool]] = field(default_factory=dict)  # (plans, import only)
    anchors: list[cst.CSTNode] = field(default_factory=list)
    device_contexts: frozenset[str] = frozenset()  # where rewrites to the project's device stay suggestions

    def placer(self, text: str, spans: dict[int, tuple[int, int]]) -> Placer:
        return Placer(text, spans)

    def finish(self, number: int, placer: Placer | None) -> PlannedFix | None:
        entry = self.by_report.get(number)
        if entry is None or placer is None:
            return None
        plans, import_only = entry
        fixes = []
        for plan in plans:
            fix = placer.fix(plan)
            if fix is not None and (fix.edits or fix.reason):  # no edits: a reason why it is not fixed
                fixes.append((fix, plan.gated))
        device = self.device_contexts if any(plan.device for plan in plans) else frozenset()
        rewrites = [plan for plan in plans if plan.edits]
        return PlannedFix(fixes, import_only, device, bool(rewrites) and all(plan.display_same for plan in rewrites))


_QUOTES = ('"', "'")


def fit_quotes(plan: FixPlan, rewriter: Rewriter) -> FixPlan:
    """Text inserted inside an f-string's replacement field must not reuse its quotes (nor hold a
    backslash): only Python 3.12 accepts that, whatever the interpreter running this tool takes.
    `"cuda"` written into `f"{...}"` becomes `'cuda'`; where no quote is free the fix is held."""
    if not plan.edits or "{" not in rewriter.ctx.text:
        return plan
    edits = []
    for edit in plan.edits:
        used = _enclosing_quotes(edit.start.node, rewriter)
        content = edit.content
        if used and isinstance(content, str):
            if "\\" in content:
                return FixPlan.held("not rewritten: the rewrite would put a backslash inside an f-string "
                                    "(valid only on Python 3.12+)", plan.fix_id)
            clashing = [q for q in _QUOTES if q in content and q in used]
            if clashing:
                free = [q for q in _QUOTES if q not in used and q not in content]
                if len(clashing) > 1 or not free:
                    return FixPlan.held("not rewritten: the rewrite would nest the quotes of the f-string around it "
                                        "(valid only on Python 3.12+)", plan.fix_id)
                content = content.replace(clashing[0], free[0])
        edits.append(replace(edit, content=content))
    return replace(plan, edits=edits)


def _enclosing_quotes(node: cst.CSTNode | None, rewriter: Rewriter) -> set[str]:
    """The quote characters of every f-string around `node`."""
    import libcst as cst

    quotes: set[str] = set()
    current = rewriter.parent(node) if node is not None else None
    while current is not None:
        if isinstance(current, cst.FormattedString):
            quotes.add(current.quote[0])
        current = rewriter.parent(current)
    return quotes


def plan_fixes(ctx: PythonContext, hidden: frozenset[str] = frozenset()) -> Plans:
    """The fixes of every report; rules run only to hold fixes back (`hidden`) get none: they are
    not applied, so what they report stays."""
    plans = Plans()
    rewriter: Rewriter | None = None
    for number, (rule, node, fields) in enumerate(ctx.pending):
        ref = fields.get("__ref")
        import_only = ref is not None and ref.kind == "import"
        found: list[FixPlan] = []
        if rule.has_fixes() and rule.code not in hidden:
            if rewriter is None:
                rewriter = Rewriter(ctx)
            try:
                result = rule.fix(Reported(node, fields, ref), rewriter)
            except Exception as exc:  # a bug in one fix must not lose the file's findings
                ctx.error("internal", f"internal error while building a fix for {rule.code}: "
                                      f"{type(exc).__name__}: {exc}")
                result = None
            found = [result] if isinstance(result, FixPlan) else list(result or ())
            found = [fit_quotes(plan, rewriter) for plan in found]
        if found or import_only:
            if not plans.device_contexts and any(plan.device for plan in found):
                plans.device_contexts = device_contexts(ctx)
            plans.by_report[number] = (found, import_only)
            plans.anchors.extend(anchor_nodes(found))
    return plans


def device_contexts(ctx: PythonContext) -> frozenset[str]:
    """The contexts where a rewrite to the project's device stays a suggestion (rules/fixes.toml
    `[context] hold_device`): the CUDA module of a dispatch layer, a guarded CUDA-only branch, an
    opt-in NVIDIA feature, code that only displays; test code unless --fix-tests."""
    names = set(ctx.catalogue.table("fixes").get("context", {}).get("hold_device", ()))
    owner = ctx.facts.device_owner if ctx.facts is not None else None
    if owner is None or not owner.fix_tests:
        names.add("test")
    return frozenset(names)
