"""`audit plan`: a scan's findings, verdicts and scores turned into a migration plan for one target
(seven steps, in the order a careful team works) or a ranking of the targets. Every per-target
text comes from the catalogue (rules/plan/*.toml, the target registry, rules/packages.toml); this
module only orders and counts. The result is a dict: the JSON contract (PLAN_FORMAT_VERSION,
tests/test_plan_contract.py) that the markdown and HTML renderers read.

The plan is per component (auditor/analysis/components.py): the headline gives each component's
verdict and score for T and what blocks it, every item names the component(s) its files belong to,
and an item's effort follows its component's kind ([effort.component]: an example or a test is
cheaper and optional, what ships counts fully); a step's effort is its largest item that is not
optional."""

from __future__ import annotations

import os
import posixpath
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from auditor import TOOL_NAME, __version__, targets
from auditor.fix.applicability import fixable
from auditor.model import FileError, Finding, withheld_reason
from auditor.plan.benchmark import benchmark_filename
from auditor.plan.catalogue import ALWAYS, Change, CloudItem, PlanCatalogue
from auditor.plan.effort import Cost, finding_cost, largest_cost
from auditor.plan.packages import replacement
from auditor.plan.parity import parity_filename
from auditor.plan.signals import Signal, of_kind
from auditor.portability.score import compute_scores
from auditor.portability.verdict import Part, verdicts

if TYPE_CHECKING:
    from auditor.fix.device_owner import DeviceOwner
    from auditor.fix.preview import FixPreview
    from auditor.report.model import ComponentJudgement

PLAN_FORMAT_VERSION = 2  # 2: the headline's `components`, each item's `components` and `optional`
DEPENDENCY_FILES = frozenset({"requirements", "pyproject", "setup-py", "setup-cfg", "conda", "dockerfile"})
NOT_A_TIE = frozenset({"unused-suppression"})  # about the audit's own comments, not the code's hardware
NEW_OWNER = "device.py"  # no device helper found: the module the plan proposes (any name will do)
CHOICE_KINDS = ("device", "precision", "compile", "distributed", "visibility")


@dataclass
class Scan:
    """What the plan reads of one scan."""

    root: str
    findings: list[Finding]
    errors: list[FileError]
    signals: list[Signal]
    overall_targets: tuple[str, ...] = ()
    kinds: frozenset[str] | None = None  # the file kinds the scan read (None: not known)
    # what the repository ships (its package(s) or programs: auditor/analysis/components.py), which
    # the headline verdict, score and ranking judge as the report's do; None: every finding
    shipped: tuple[list[Finding], list[FileError]] | None = None
    # each component judged on its own findings (auditor.report.model.judge_components), and the
    # component of a finding's path; none: the plan is not split by component
    components: Sequence[ComponentJudgement] = ()
    component_of: Callable[[str], str | None] | None = None
    # the project's device owner as `audit --fix` finds it (auditor/fix/device_owner.py): a helper or
    # constant, or the module it would create; None when not looked for
    device_owner: DeviceOwner | None = None
    scan_root: str = ""  # the folder the owner's path is relative to
    # a dry `audit --fix` (auditor/fix/preview.py): what its rewrites leave, those to the device owner
    # included; None: judged from the scan's own fixes (`fixable`), which know no owner
    after_fix: FixPreview | None = None
    # the size and install files of what ships, for its verdicts (ties confined to a few files degrade)
    shipped_part: Part = field(default_factory=Part)

    def left_after_fix(self, findings: list[Finding]) -> list[Finding]:
        """`findings` as `audit --fix` leaves them."""
        if self.after_fix is not None:
            return self.after_fix.remaining(findings)
        return [f for f in findings if not fixable(f)]

    def fixed_by_fix(self, findings: list[Finding]) -> int:
        """How many of `findings` `audit --fix` rewrites."""
        if self.after_fix is not None:
            return self.after_fix.fixed_among(findings)
        return sum(1 for f in findings if fixable(f))

    def headline_part(self) -> tuple[list[Finding], list[FileError]]:
        return self.shipped if self.shipped is not None else (self.findings, self.errors)

    @cached_property
    def _kinds(self) -> dict[str, str]:
        return {judged.component.name: judged.component.kind for judged in self.components}

    def parts(self, paths: Iterable[str | None]) -> list[str]:
        """The components the paths belong to, sorted."""
        if self.component_of is None:
            return []
        return sorted({name for name in map(self.component_of, filter(None, paths)) if name})

    def kind_of(self, path: str) -> str | None:
        """The kind of the component `path` belongs to (package, examples, tests, ...); None: not known."""
        name = self.component_of(path) if self.component_of is not None else None
        return self._kinds.get(name) if name else None

    def cost(self, finding: Finding, target: str, catalogue: PlanCatalogue, **extra) -> Cost:
        """`finding_cost` with the kind of the finding's component."""
        return finding_cost(finding, target, catalogue.effort, component_kind=self.kind_of(finding.path),
                            fixed=self.is_fixed(finding), **extra)

    def is_fixed(self, finding: Finding) -> bool:
        """Whether `audit --fix` rewrites `finding`: with a dry run, when it rewrites every finding of
        that rule in that file (a re-check's findings have moved lines, so one of several is not told apart)."""
        if fixable(finding):
            return True
        if self.after_fix is None:
            return False
        return self.after_fix.fixed[(finding.path, finding.rule)] >= self._per_rule[(finding.path, finding.rule)]

    @cached_property
    def _per_rule(self) -> Counter:
        return Counter((f.path, f.rule) for f in self.findings)


def _where(finding: Finding) -> dict:
    return {"path": finding.path, "line": finding.line}


def _item(text: str, cost: Cost | None, path: str | None = None, line: int | None = None,
          components: Sequence[str] = (), **extra) -> dict:
    return {"text": text, "path": path, "line": line, "effort": cost.bucket if cost else None,
            "reason": cost.reason if cost else None, "components": list(components),
            "optional": bool(cost and cost.optional), **extra}


def _step(number: int, key: str, title: str, summary: str, items: list[dict], order: tuple[str, ...],
          **extra) -> dict:
    costs = [Cost(i["effort"], i.get("reason") or "", i["optional"]) for i in items if i.get("effort")]
    chosen = largest_cost(order, costs)
    return {"number": number, "key": key, "title": title, "summary": summary,
            "effort": chosen.bucket if chosen else None, "reason": (chosen.reason or None) if chosen else None,
            "items": items, **extra}


def _combined(costs: list[Cost], order: tuple[str, ...]) -> Cost:
    """One item's cost from its findings': the largest that is not optional; optional when all are
    (none: the smallest bucket)."""
    chosen = largest_cost(order, costs)
    if chosen is None:
        return Cost(order[0], "")
    return Cost(chosen.bucket, chosen.reason, all(c.optional for c in costs))


def _fact(fact) -> dict | None:
    return fact.to_dict() if fact is not None else None


# ---- the headline and the end --------------------------------------------------------------------

def _scores(findings: list[Finding], scan: Scan) -> dict:
    return compute_scores(findings, scan.overall_targets, withheld_reason(scan.errors), scan.shipped_part).score_map()


def headline(scan: Scan, target: str) -> dict:
    shipped, shipped_errors = scan.headline_part()
    verdict = verdicts(shipped, shipped_errors, part=scan.shipped_part)[target]
    ties = [f for f in scan.findings if f.targets.get(target) != "works"]
    if not scan.findings:
        summary = f"No NVIDIA lock-in was found: the move to {target} is its install and the checklist of step 4."
    elif not ties:
        summary = f"Every tie found runs on {target} as it is: the move is its install and the checklist of step 4."
    else:
        summary = f"{len(ties)} finding(s) matter on {target}, in {len({f.path for f in ties})} file(s)"
        if scan.components and scan.shipped is not None:
            own = [f for f in shipped if f.targets.get(target) != "works"]
            names = [j.component.name for j in scan.components if j.component.shipped]
            summary += f"; {len(own)} of them in what the repository ships" + (f" ({', '.join(names)})" if names else "")
        summary += "."
    return {"verdict": verdict.verdict, "score": _scores(shipped, scan)[target], "summary": summary,
            "blockers": [r.to_dict() for r in verdict.reasons], "components": _per_component(scan, target)}


def _per_component(scan: Scan, target: str) -> list[dict]:
    """Each component's verdict and score on `target` and what blocks it there, shipped ones first."""
    return [{"name": j.component.name, "kind": j.component.kind, "shipped": j.component.shipped,
             "paths": list(j.component.paths), "findings": j.findings, "verdict": j.verdicts[target].verdict,
             "score": j.scores.score_map()[target], "blockers": [r.to_dict() for r in j.verdicts[target].reasons]}
            for j in scan.components]


def after_fixes(scan: Scan, target: str) -> dict:
    """The score once `audit --fix` has run (safe fixes): from a dry fix run's re-check of each file
    it changes when the plan has one (Scan.after_fix), else the scan's own fixable findings taken
    away. An estimate either way: the project is not scanned again as a whole (`audit --diff` shows
    the rewrites)."""
    shipped, shipped_errors = scan.headline_part()
    left = scan.left_after_fix(shipped)
    verdict = verdicts(left, shipped_errors, part=scan.shipped_part)[target]
    how = ("each file `audit --fix` changes (safe fixes, its device rewrites included) checked again in memory "
           "and the score recomputed" if scan.after_fix is not None else
           "the findings `audit --fix` rewrites (safe fixes) taken away and the score recomputed")
    return {"score": _scores(left, scan)[target], "verdict": verdict.verdict,
            "fixed": scan.fixed_by_fix(scan.findings), "estimate": True,
            "how": how + "; run `audit --diff` to see the rewrites"}


# ---- step 1 ----------------------------------------------------------------------------------------

def dependencies(scan: Scan, target: str, catalogue: PlanCatalogue) -> dict:
    groups: dict[tuple[str, str], dict] = {}
    for finding in scan.findings:
        if catalogue.kind_of(finding.name) != "dependencies":
            continue
        what, instead = replacement(finding, target)
        cost = scan.cost(finding, target, catalogue, replacement=instead)
        key = (finding.name, what)
        group = groups.get(key)
        if group is None:
            text = f"{what}: {instead}" if instead else f"{what}: the catalogue names no replacement on {target}"
            group = groups[key] = _item(text, cost, finding.path, finding.line, rule=finding.rule, name=finding.name,
                                        package=what, replacement=instead, places=[], works=True, costs=[])
        group["costs"].append(cost)
        group["works"] = group["works"] and finding.targets.get(target) == "works"
        if _where(finding) not in group["places"]:
            group["places"].append(_where(finding))
    items = [_dependency(group, scan, catalogue.effort.order) for group in groups.values()]
    counted = [i for i in items if not i["optional"]] or items
    small = all(i["effort"] == catalogue.effort.order[0] for i in counted)
    if not items:
        summary = "No GPU-only dependency, wheel index or base image was found: on this side the move is a configuration change."
    elif small:
        summary = f"{len(items)} dependency change(s), each minutes: on this side the move is close to a configuration change."
    else:
        summary = f"{len(items)} dependency change(s); the larger ones decide whether this is more than a configuration change."
    return _step(1, "dependencies", "Dependencies first", summary, items, catalogue.effort.order)


def _dependency(group: dict, scan: Scan, order: tuple[str, ...]) -> dict:
    """A step 1 item once all its places are in: its cost from theirs, its components."""
    cost = _combined(group.pop("costs"), order)
    group.update(effort=cost.bucket, reason=cost.reason, optional=cost.optional,
                 components=scan.parts(p["path"] for p in group["places"]))
    return group


# ---- step 2 ----------------------------------------------------------------------------------------

def _owner(scan: Scan) -> str | None:
    """Where the device is chosen today: the helper or constant `audit --fix` would use (path:line of
    its signal when one names that file), else the first device-owner signal; None when none."""
    owners = of_kind(scan.signals, "device-owner")
    found = scan.device_owner
    if found is not None and found.kind != "accelerator" and not found.created:
        path = _shown_path(scan, found.path)
        line = next((s.line for s in owners if s.path == path), None)
        return f"{path}:{line}" if line is not None else path
    if found is not None and found.created:
        return None  # the helpers the signals name hard-code CUDA (or are tests): `audit --fix` owns none of them
    return f"{owners[0].path}:{owners[0].line}" if owners else None


def _shown_path(scan: Scan, path: str) -> str:
    if not scan.scan_root:
        return path
    return os.path.relpath(os.path.join(scan.scan_root, path), scan.root).replace(os.sep, "/")


def _new_owner(scan: Scan) -> str:
    """The module the plan names when no owner exists: the one `audit --fix` creates."""
    found = scan.device_owner
    return _shown_path(scan, found.path) if found is not None and found.created else NEW_OWNER


def hardware_choices(scan: Scan, target: str, catalogue: PlanCatalogue) -> dict:
    owner = _owner(scan)
    registry_target = targets.get(target)
    groups = []
    costs: list[Cost] = []  # per group: its findings' combined cost
    for choice in catalogue.choices:
        found = [f for f in scan.findings if catalogue.kind_of(f.name) == choice.kind]
        compiled = of_kind(scan.signals, "compile") if choice.kind == "compile" else []
        if not found and not compiled:
            continue
        places = sorted({(f.path, f.line) for f in found} | {(s.path, s.line) for s in compiled})
        fixed = scan.fixed_by_fix(found)
        cost = _combined([scan.cost(f, target, catalogue) for f in found], catalogue.effort.order)
        text = choice.owner.format(owner=owner or _new_owner(scan),
                                   backend=registry_target.backend or "its backend",
                                   visibility=", ".join(registry_target.visibility) or "none")
        groups.append({"kind": choice.kind, "title": choice.title, "owner": text, "lines": len(places),
                       "fixed_by_audit_fix": fixed, "files": sorted({p for p, _ in places}),
                       "signals": [s.to_dict() for s in compiled],
                       "effort": cost.bucket})
        costs.append(cost)
    items = [_item(f"{g['title']}: {g['lines']} line(s) in {len(g['files'])} file(s), {g['fixed_by_audit_fix']} by "
                   f"`audit --fix`; owner: {g['owner']}", Cost(g["effort"], cost.reason or g["title"], cost.optional),
                   g["files"][0] if g["files"] else None, components=scan.parts(g["files"]))
             for g, cost in zip(groups, costs, strict=True)]
    total = sum(g["lines"] for g in groups)
    fixed = sum(g["fixed_by_audit_fix"] for g in groups)
    summary = (f"{total} line(s) choose the hardware, {fixed} of them rewritten by `audit --fix`. "
               "Worth doing even if the team never moves: one setting decides the device, precision, compile mode "
               "and backend.") if groups else "No hardware choice is spread through the code: nothing to gather."
    if groups and owner is None and _new_owner(scan) != NEW_OWNER:
        summary += (f" No device helper was found: `audit --fix` creates `{_new_owner(scan)}` (an environment "
                    f"override first, then the accelerator torch finds) and rewrites the device ties to it.")
    elif groups and owner is None:
        summary += f" No device helper was found: create one (`{NEW_OWNER}` below; any name will do)."
    return _step(2, "hardware-choices", "One place for hardware choices", summary, items, catalogue.effort.order,
                 owner=owner, groups=groups)


# ---- step 3 ----------------------------------------------------------------------------------------

def _relevant(changes: Sequence[Change], kinds: set[str]) -> list[dict]:
    return [{"topic": c.topic, **c.fact.to_dict()} for c in changes if ALWAYS in c.when or kinds & set(c.when)]


def changes_for(scan: Scan, target: str, catalogue: PlanCatalogue) -> dict:
    kinds = {catalogue.kind_of(f.name) for f in scan.findings}
    kinds |= {s.kind for s in scan.signals if s.kind == "compile"}
    notes = catalogue.notes_for(target)
    rules = {f.name for f in scan.findings}
    legacy = None
    if notes is not None and notes.legacy is not None:
        path = catalogue.paths[notes.legacy]
        legacy = {"key": path.key, "title": path.title, "source": path.fact.source,
                  "in_use": bool(rules & set(path.when_used)), "changes": _relevant(path.changes, kinds | {ALWAYS})}
    skip = {"dependencies", *CHOICE_KINDS}  # steps 1 and 2 list those
    items = []
    for finding in scan.findings:
        kind = catalogue.kind_of(finding.name)
        if kind in skip or finding.name in NOT_A_TIE or finding.targets.get(target) == "works":
            continue
        items.append(_item(f"{finding.rule} {finding.name}: {finding.message}", scan.cost(finding, target, catalogue),
                           finding.path, finding.line, components=scan.parts([finding.path]), kind=kind))
    step = _step(3, "target-changes", f"What changes for {targets.get(target).display}",
                 (f"{len(items)} other finding(s) to port by hand on {target}." if items
                  else f"No other code needs porting for {target}."),
                 items, catalogue.effort.order,
                 stack=_fact(notes.stack) if notes else None,
                 notes=_relevant(notes.changes, kinds) if notes else [],
                 legacy=legacy, docs=list(notes.docs) if notes else [])
    if notes is None:
        step["summary"] += f" The catalogue has no notes for {target} (rules/plan/targets.toml)."
    return step


# ---- step 4 ----------------------------------------------------------------------------------------

def _checklist(items: Sequence[CloudItem], signals: list[Signal]) -> list[dict]:
    return [{"item": c.item, "text": c.text, "fact": _fact(c.fact),
             "signals": [s.to_dict() for s in of_kind(signals, *c.signals)]} for c in items]


def capacity(scan: Scan, target: str, catalogue: PlanCatalogue) -> dict:
    notes = catalogue.notes_for(target)
    own = list(notes.cloud) if notes else []
    common = [] if target in catalogue.no_cloud else list(catalogue.cloud_common)
    checklist = _checklist([*own, *common], scan.signals)
    items = [_item(f"{c['item']}: {c['text']}", None, *((c["signals"][0]["path"], c["signals"][0]["line"])
                                                        if c["signals"] else ()),
                   components=scan.parts(s["path"] for s in c["signals"])) for c in checklist]
    seen = sorted({s.what for s in scan.signals if s.kind in ("cloud", "bucket", "region", "instance", "k8s")})
    summary = ("Signals found: " + ", ".join(seen) + ".") if seen else "No cloud SDK, bucket, region or instance type was found in the repository."
    return _step(4, "capacity", "Capacity and cloud", summary, items, catalogue.effort.order, checklist=checklist)


# ---- steps 5, 6, 7 ----------------------------------------------------------------------------------

def parity(target: str, written: list[str], catalogue: PlanCatalogue) -> dict:
    name = parity_filename(target)
    return _step(5, "parity", "Numerical parity on a small model",
                 f"`{name}` runs one model (`--entry module:function`, else a tiny stand-in) on the reference and on "
                 f"{target} with the same inputs and seed, with tolerances per dtype at its top; it skips where "
                 f"{target} is absent. Write it with `--write-tests DIR`.",
                 [_item(f"DIR/{name}", Cost(catalogue.effort.order[1], "choose the model and agree the tolerances"))],
                 catalogue.effort.order, file=name, written=[p for p in written if p.endswith(name)])


def benchmark(target: str, written: list[str], catalogue: PlanCatalogue) -> dict:
    name = benchmark_filename(target)
    return _step(6, "benchmark", "Speed and cost under the same conditions",
                 f"`{name}` measures throughput the same way on both devices and prints one line to paste next to "
                 "hourly prices. Hold equal: " + ", ".join(catalogue.conditions) + ".",
                 [_item(f"DIR/{name}", Cost(catalogue.effort.order[1], "runs on both machines with the same conditions"))],
                 catalogue.effort.order, file=name, written=[p for p in written if p.endswith(name)],
                 conditions=list(catalogue.conditions))


def way_back(scan: Scan, catalogue: PlanCatalogue) -> dict:
    keep = sorted({f.path for f in scan.findings if catalogue.kind_of(f.name) in ("dependencies", "visibility",
                                                                                 "environment", "distributed")})
    items = [_item(text, None) for text in catalogue.way_back]
    items += [_item("keep", None, path, components=scan.parts([path])) for path in keep]
    return _step(7, "way-back", "A way back", f"{len(keep)} file(s) to keep as they are for NVIDIA.", items,
                 catalogue.effort.order, keep=keep)


# ---- the plan ----------------------------------------------------------------------------------------

def plan_for(scan: Scan, target: str, catalogue: PlanCatalogue, written: Sequence[str] = ()) -> dict:
    """The plan for one target (its name checked by the caller against the registry)."""
    written = [str(p) for p in written]
    steps = [dependencies(scan, target, catalogue), hardware_choices(scan, target, catalogue),
             changes_for(scan, target, catalogue), capacity(scan, target, catalogue),
             parity(target, written, catalogue), benchmark(target, written, catalogue), way_back(scan, catalogue)]
    return {"plan_format_version": PLAN_FORMAT_VERSION, "tool": {"name": TOOL_NAME, "version": __version__},
            "root": scan.root, "target": target, "display": targets.get(target).display,
            "headline": headline(scan, target), "steps": steps, "after_fixes": after_fixes(scan, target),
            "signals": [s.to_dict() for s in scan.signals], "unseen": _unseen(scan, catalogue),
            "questions": list(catalogue.questions)}


def _unseen(scan: Scan, catalogue: PlanCatalogue) -> list[str]:
    unseen = list(catalogue.unseen)
    if scan.kinds is not None and not scan.kinds & DEPENDENCY_FILES:
        unseen.append("No dependency file (requirements, pyproject.toml, setup.py, conda environment, Dockerfile) was "
                      "found: step 1 cannot see what gets installed, so its list may be short.")
    if scan.errors:
        unseen.append(f"{len(scan.errors)} file(s) could not be read or parsed: their ties are not in this plan.")
    if scan.components and not any(j.component.shipped for j in scan.components):
        unseen.append(catalogue.nothing_shipped)
    return unseen


# ---- which target first -------------------------------------------------------------------------------

def ranking(scan: Scan, catalogue: PlanCatalogue) -> dict:
    """Every target of the registry ranked for this repository, with why, from what the plan can see."""
    weights = catalogue.ranking
    shipped, shipped_errors = scan.headline_part()
    judged = verdicts(shipped, shipped_errors, part=scan.shipped_part)
    scores = _scores(shipped, scan)
    tools = _tools_used(scan, catalogue)
    providers: dict[str, list[str]] = {}  # provider -> what of it was found
    for signal in of_kind(scan.signals, *weights["cloud_kinds"]):
        if signal.provider and signal.what not in providers.setdefault(signal.provider, []):
            providers[signal.provider].append(signal.what)
    rows = []
    for name in targets.names():
        verdict, score = judged[name].verdict, scores[name]
        changes = [item for item in dependencies(scan, name, catalogue)["items"] if not item["works"]]
        deps = sum(1 for item in changes if not item["optional"])  # an example's requirement is not the move's
        points = (score or 0.0) + weights["verdict"].get(verdict, 0)
        optional = len(changes) - deps
        why = [f"{verdict}, score {score}", f"{deps} dependency change(s) (step 1)"
               + (f", and {optional} optional (examples, tests, docs)" if optional else "")]
        for tool in tools:
            support = tool.support.get(name)
            if support is not None:
                points += weights["tool"][support.level]
                why.append(f"{tool.display}: {support.level} ({support.fact.text}; {support.fact.source})")
        for provider in sorted(providers):
            info = catalogue.providers.get(provider)
            if info is not None and name in info.targets:
                points += weights["cloud"]
                why.append(f"{info.display} signals ({', '.join(providers[provider])}): {info.why}")
        rows.append({"target": name, "display": targets.get(name).display, "verdict": verdict, "score": score,
                     "dependencies": deps, "points": round(points, 1), "host": targets.has_role(name, "host"),
                     "why": why})
    rows.sort(key=lambda r: (r["host"], -r["points"], r["dependencies"], r["target"]))
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
    return {"plan_format_version": PLAN_FORMAT_VERSION, "tool": {"name": TOOL_NAME, "version": __version__},
            "root": scan.root, "ranking": rows, "tools": [t.display for t in tools],
            "workload": _workload(scan, catalogue), "edge": _edge(scan, catalogue),
            "signals": [s.to_dict() for s in scan.signals], "unseen": _unseen(scan, catalogue),
            "questions": list(catalogue.questions)}


def _tools_used(scan: Scan, catalogue: PlanCatalogue) -> list:
    """The serving and training tools whose import, package or image the repository has."""
    seen = {s.what for s in scan.signals if s.kind == "tool"}
    return [tool for tool in catalogue.tools if tool.display in seen]


def _workload(scan: Scan, catalogue: PlanCatalogue) -> str:
    training, inference = bool(of_kind(scan.signals, "training")), bool(of_kind(scan.signals, "inference"))
    if inference:
        return catalogue.workload["inference_first"]
    return catalogue.workload["training_only" if training else "unknown"]


def _edge(scan: Scan, catalogue: PlanCatalogue) -> str | None:
    found = sorted({s.what for s in of_kind(scan.signals, "edge")})
    return catalogue.edge.text.format(found=", ".join(found)) if found else None


def short_root(root: str) -> str:
    return posixpath.basename(root.rstrip("/")) or root
