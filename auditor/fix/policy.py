"""Which fixes a file's findings keep, and which stay suggestions (`display` with a reason).

Decided per file, when its findings are placed (so the cache keeps the answer):

1. the torch floor: of a finding's candidate fixes (best first), the first the project's floor
   allows; when none, the first, shown only, naming the version it needs;
2. context: a finding in a context listed under `[context] hold_unsafe` in rules/fixes.toml (a
   module that implements the CUDA backend beside sibling backends) keeps its unsafe fixes as
   suggestions: calling CUDA is right there; except that a display takes a rewrite whose value on
   NVIDIA is the CUDA call's (a swap row's `display_same`: the printed text is unchanged there);
3. the CUDA-clean gate (catalogue 5.5): a gated fix (a swap that makes another accelerator
   selectable: `torch.cuda.is_available()` -> `torch.accelerator.is_available()`, `.cuda()` ->
   `.to(current_accelerator())`, NCCL -> the device's backend) is applied only when, after every
   fix, no finding would remain in the file whose rule raises on a target `torch.accelerator`
   would now select (role `chosen-by-torch-accelerator` in rules/targets.toml). Otherwise a program that ran on the CPU there would start on the
   accelerator and crash at the CUDA-only call. The reason names the findings that block. The
   rewrites of the raising ties to the project's device (auditor/fix/device_owner.py) are fixes like
   any other: a file whose ties they all rewrite is CUDA-clean, and its gated swaps apply in the
   same run;
4. a rewrite to the project's device stays a suggestion in the contexts `[context] hold_device`
   names (and in test code unless --fix-tests).

Findings of rules left out by --select/--ignore still block (they run hidden; see `gate_rules`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from auditor.checks.registry import all_rules, rule_by_code
from auditor.fix.floor import version_tuple
from auditor.model import Applicability, Finding
from auditor.read.text import split_lines
from auditor.targets import with_role

GATE_ROLE = "chosen-by-torch-accelerator"  # the targets the CUDA-clean gate protects

if TYPE_CHECKING:
    from auditor.catalogue import Catalogue
    from auditor.checks.base import Rule
    from auditor.fix.floor import TorchFloor
    from auditor.fix.plan import PlannedFix

_MAX_NAMED_BLOCKERS = 3


def _gate_table(catalogue: Catalogue) -> dict:
    return catalogue.table("fixes").get("cuda-clean", {})


def blocking_rule(rule: Rule, catalogue: Catalogue) -> bool:
    """Whether this rule's findings can keep a file from being CUDA-clean: it raises on a target
    that the accelerator swaps would newly select."""
    targets = with_role(GATE_ROLE)
    effects = rule.effects()
    return any(effects.get(target) == "raises" for target in targets)


def gate_rules(selected: list[Rule], catalogue: Catalogue) -> list[Rule]:
    """Blocking Python rules that the selection leaves out: they still run, to hold gated fixes
    back, and their findings are dropped afterwards. None when nothing selected has a gated fix."""
    if not any(rule.has_gated_fixes(catalogue) for rule in selected):
        return []
    chosen = {rule.code for rule in selected}
    return [rule for rule in all_rules() if rule.code not in chosen and "python" in rule.file_kinds
            and blocking_rule(rule, catalogue)]


def finalize(findings: list[Finding], planned: dict[int, PlannedFix], floor: TorchFloor,
             catalogue: Catalogue, text: str = "") -> list[Finding]:
    """The findings with their fix chosen and, where it must stay a suggestion, demoted. `text`
    is the file's source: a file that already dispatches per backend keeps its CUDA branches."""
    if not planned:
        return findings
    chosen: dict[int, tuple[Finding, bool]] = {}
    hold = set(catalogue.table("fixes").get("context", {}).get("hold_unsafe", ()))
    out = list(findings)
    per_backend: list[str | None] = []  # the file's per-backend dispatch, looked for once, by a device rewrite
    for index, finding in enumerate(out):
        plan = planned.get(id(finding))
        if plan is None or not plan.fixes:
            continue
        oldest = min(plan.fixes, key=lambda item: version_tuple(item[0].min_torch or "0"))  # names the lowest need
        fix, gated = next(((f, g) for f, g in plan.fixes if floor.allows(f.min_torch)), oldest)
        if not floor.allows(fix.min_torch):
            fix = _demote(fix, f"needs torch >= {fix.min_torch}; the project supports {floor.describe()}")
        elif fix.applicability == Applicability.UNSAFE and _in_context(finding, hold - _displayed_alike(plan)):
            fix = _demote(fix, f"left as it is in a {finding.context} context: calling CUDA is right there")
        elif plan.device_contexts and fix.applicability != "display" and _in_context(finding, plan.device_contexts):
            fix = _demote(fix, f"left as it is in a {finding.context} context: the device there is CUDA on purpose"
                               + (" (`--fix-tests` rewrites test code)" if "test" in finding.context.split("+") else ""))
        elif plan.device_contexts and fix.applicability != "display" and _dispatch_once(per_backend, text, catalogue):
            fix = _demote(fix, f"left as it is: this file already chooses per backend (`{per_backend[0]}`); its "
                               f"\"cuda\" is the CUDA branch's, which the project's device would send elsewhere")
        out[index] = replace(finding, fix=fix)
        chosen[index] = (out[index], gated)
    gated_indexes = [i for i, (f, gated) in chosen.items() if gated and f.fix.applicability != "display"]
    if gated_indexes:
        dispatch = _dispatches(text, catalogue)
        blockers = _blockers(out, planned, findings, catalogue, text) if dispatch is None else []
        if dispatch is not None:
            reason = (f"held back: this file already chooses per backend (`{dispatch}`); turned into an accelerator "
                      f"check, its CUDA branch would also run on other accelerators, ahead of theirs")
            for index in gated_indexes:
                out[index] = replace(out[index], fix=_demote(out[index].fix, reason))
        elif blockers:
            named = ", ".join(f"{f.rule} at {f.line}:{f.column}" for f in blockers[:_MAX_NAMED_BLOCKERS])
            more = len(blockers) - _MAX_NAMED_BLOCKERS
            named += f" and {more} more" if more > 0 else ""
            reason = (f"held back until this file is CUDA-clean (catalogue 5.5): {named} would still raise "
                      f"on MPS/XPU, where the accelerator swaps would send the program")
            for index in gated_indexes:
                out[index] = replace(out[index], fix=_demote(out[index].fix, reason))
    return out


def _displayed_alike(plan: PlannedFix) -> set[str]:
    """`display` when the rewrite gives on NVIDIA the value the CUDA call gave (`display_same` swap rows):
    a message showing it reads the same there, and no longer raises elsewhere. Other display rewrites
    would change what is shown, and stay held."""
    return {"display"} if plan.display_same else set()


def _dispatch_once(found: list[str | None], text: str, catalogue: Catalogue) -> bool:
    if not found:
        found.append(_dispatches(text, catalogue))
    return found[0] is not None


def _in_context(finding: Finding, names: set[str]) -> bool:
    """Whether one of the finding's contexts (`test+guarded` is two) is among `names`."""
    return bool(finding.context) and not names.isdisjoint(finding.context.split("+"))


def _dispatches(text: str, catalogue: Catalogue) -> str | None:
    """What shows that the file already dispatches per backend (`is_xpu_available`), or None."""
    import re

    pattern = catalogue.table("fixes").get("dispatch", {}).get("pattern")
    found = re.search(pattern, text) if pattern and text else None
    return found.group(0) if found else None


def _demote(fix, reason: str):
    return replace(fix, applicability=Applicability.DISPLAY.value, reason=reason)


def _blockers(current: list[Finding], planned: dict[int, PlannedFix], original: list[Finding],
              catalogue: Catalogue, text: str = "") -> list[Finding]:
    """Findings that would remain after every fix and raise where the accelerator swaps lead."""
    view = _GateView(catalogue, text)
    found = []
    for finding, before in zip(current, original, strict=True):
        if finding.fix is not None and finding.fix.applicability != "display":
            continue  # fixed away
        plan = planned.get(id(before))
        if plan is not None and plan.import_only and finding.category in view.import_ok:
            continue  # an import alone does nothing; its uses are judged (and fixed) themselves
        if view.raises(finding):
            found.append(finding)
    return found


def raising_ties(findings: list[Finding], catalogue: Catalogue, text: str) -> list[Finding]:
    """The findings that keep a file from being CUDA-clean as it stands (whatever fixes they carry):
    what `audit --fix` reports per file after its rounds (auditor/fix/clean.py)."""
    view = _GateView(catalogue, text)
    return [f for f in findings
            if not (f.category in view.import_ok and f.snippet.lstrip().startswith(("import ", "from ")))
            and view.raises(f)]


class _GateView:
    """What the gate reads from rules/fixes.toml `[cuda-clean]`, and the file's lines."""

    def __init__(self, catalogue: Catalogue, text: str) -> None:
        import re

        table = _gate_table(catalogue)
        self.harmless = [re.compile(p) for p in table.get("not_raising_before", ())]
        self.lines = split_lines(text) if self.harmless else []  # the lines findings count (auditor.read.text)
        self.quiet_contexts = set(table.get("not_blocking_contexts", ()))
        self.guard_contexts = set(table.get("guard_contexts", ()))
        self.swapped_kinds = set(table.get("swapped_guard_kinds", ()))
        self.targets = with_role(GATE_ROLE)
        self.import_ok = set(table.get("import_not_blocking", ()))

    def raises(self, finding: Finding) -> bool:
        """Whether the finding raises where the accelerator swaps lead (outside the quiet contexts)."""
        if _in_context(finding, self.quiet_contexts):
            return False
        rule = rule_by_code(finding.rule)
        if rule is None:
            return False
        # The finding's own effects (a device string in `autocast("cuda")` only turns AMP off), except
        # where they come from a guard a gated fix can change: a CUDA availability check it turns into an
        # accelerator check.
        swappable = finding.guard is None or not self.swapped_kinds.isdisjoint(finding.guard.split("+"))
        effects = rule.effects() if _in_context(finding, self.guard_contexts) and swappable else finding.targets
        if not any(effects.get(target) == "raises" for target in self.targets):
            return False
        lines = self.lines
        before = lines[finding.line - 1][:finding.column - 1] if 0 < finding.line <= len(lines) else ""
        return not any(p.search(before) for p in self.harmless)
