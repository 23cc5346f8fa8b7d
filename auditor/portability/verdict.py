"""Per-target verdicts: would the code run there as it is? The score says how much work a move is;
the verdict answers the first question a team asks (rules/verdicts.toml says how).

- `fails`: a blocker or major finding raises on the target (a tie on the main path, or in a
  context that does not take that target away: a guard that may hold there, a backend module
  without a sibling for it); test-only and demo-block findings never fail a verdict. What is
  installed or built with the part (a dependency, a native source, a CUDA extension build wherever
  a module writes it) fails it wherever it raises; ties that raise only when their modules run fail
  it when they spread over a share of its Python modules (rules/verdicts.toml [breadth]): confined
  to a few, they degrade it instead, named first;
- `runs-degraded`: nothing fails, but the main path silently loses something (AMP off, memory stats
  at 0, a skipped CUDA path, a minor tie that raises such as monitoring); on the CPU, the baseline,
  only what raises there: a GPU acceleration it never had is not lost;
- `runs`: the main path loses nothing. Opt-in features (and extras) that fail there are named in the
  reasons with their own verdicts; slight differences (rules/verdicts.toml [slight]) are scored only;
- `unknown`: nothing fails, but files the auditor failed on (internal errors) may hold what would:
  a run that missed files never says `runs`.

The reasons point at findings: the first one of each rule, most severe first (for `unknown`, at the
files that could not be checked)."""

from __future__ import annotations

from dataclasses import dataclass

from auditor import targets
from auditor.catalogue import load_table
from auditor.model import FileError, Finding, Severity, internal_errors

RUNS, DEGRADED, FAILS, UNKNOWN = "runs", "runs-degraded", "fails", "unknown"
_BLOCKING = frozenset({Severity.BLOCKER.value, Severity.MAJOR.value})
_OPT_IN_GUARDS = frozenset({"extra", "integration", "fallback"})  # what a user installs or enables on purpose, or a fast path the code falls back from


@dataclass(frozen=True)
class Part:
    """What a verdict judges besides its findings: the size of the judged part and which of its
    files are installed or built with it (auditor.report.model.ScanResult.part builds one).

    `files`: how many Python modules the part has (its files installed or built with it aside):
    their ties raise only when a caller runs them; 0 when not known, and then every tie that raises
    fails the part.
    `installed`: the reported paths of its packaging files and native sources, which fail it
    wherever they raise (an install or build that breaks breaks every use)."""

    files: int = 0
    installed: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Reason:
    rule: str | None  # None: a file that could not be checked (verdict `unknown`)
    path: str
    line: int | None
    why: str

    def to_dict(self) -> dict:
        return {"rule": self.rule, "path": self.path, "line": self.line, "why": self.why}


@dataclass(frozen=True)
class Verdict:
    verdict: str  # runs | runs-degraded | fails | unknown
    reasons: tuple[Reason, ...]

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "reasons": [r.to_dict() for r in self.reasons]}


def _counts(finding: Finding, never: frozenset[str]) -> bool:
    """Whether a finding may fail a verdict: not in a context that never does (rules/contexts.toml
    `never_fail`: tests, demo blocks)."""
    return not finding.context or never.isdisjoint(finding.context.split("+"))


def is_feature(finding: Finding) -> bool:
    """An opt-in feature's finding (context `feature`): it fails the feature, never its component.
    An import of the project's own module in a feature's branch (`own-package+feature`) is not one."""
    names = (finding.context or "").split("+")
    return "feature" in names and "own-package" not in names


@dataclass(frozen=True)
class Feature:
    """An opt-in feature: the findings of one NVIDIA-only runtime in one file, only imported inside a
    function; its own verdict per target."""

    name: str  # the runtime's phrase ("the TensorRT runtime")
    rule: str
    path: str
    line: int
    verdicts: dict[str, str]

    def to_dict(self) -> dict:
        return {"name": self.name, "rule": self.rule, "path": self.path, "line": self.line, "verdicts": dict(self.verdicts)}

    @property
    def another_targets_path(self) -> bool:
        """An XLA strategy, an MPS-only helper: a feature that runs only on targets taking no CUDA
        calls (the host aside) is their own path, which no other target loses by skipping it.
        Triton, which also runs on ROCm, is a GPU path the others do lose."""
        runs = [target for target, verdict in self.verdicts.items() if verdict != FAILS]
        return bool(runs) and all(not targets.has_role(t, "accepts-cuda-calls") and not targets.has_role(t, "host")
                                  for t in runs)


def features(findings: list[Finding]) -> list[Feature]:
    """The opt-in features among `findings`, one per (file, rule), in path order."""
    phrases = load_table("verdicts").get("fails", {})
    groups: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        if is_feature(f):
            groups.setdefault((f.path, f.rule), []).append(f)
    out = []
    for (path, rule), group in sorted(groups.items()):
        first = min(group, key=lambda f: f.line)
        effects = {}
        for target in targets.names():
            seen = {f.targets.get(target) for f in group}
            effects[target] = FAILS if "raises" in seen else DEGRADED if "degrades" in seen else RUNS
        # a failing feature is named by what raises ("the TensorRT runtime"), another by its rule
        name = phrases.get(first.name, first.name) if FAILS in effects.values() else first.name
        out.append(Feature(name, rule, path, first.line, effects))
    return out


def _rank(finding: Finding) -> tuple:
    return (-Severity(finding.severity).rank, finding.context is not None, finding.path, finding.line)


def verdicts(findings: list[Finding], errors: list[FileError] | tuple[FileError, ...] = (),
             count_tests: bool = False, part: Part = Part()) -> dict[str, Verdict]:
    """Every target's verdict; `errors` are the run's file errors (internal ones make any verdict
    but `fails` unknown). `count_tests`: test-only findings count too (a tests component's verdict).
    `part`: the judged part's size and install files (ties confined to a few files degrade it)."""
    table = load_table("verdicts")
    limit = int(table.get("max_reasons", 5))
    share, built = _breadth()
    shipped = _judged(findings, count_tests)
    missed = internal_errors(list(errors))
    opt_in = features(shipped)
    result: dict[str, Verdict] = {}
    for target in targets.names():
        failing = _failing(shipped, target)
        confined = _confined(failing, part, share, built)
        if confined is None:
            result[target] = Verdict(FAILS, _reasons(failing, table.get("fails", {}), limit))
            continue
        if missed:
            result[target] = Verdict(UNKNOWN, tuple(
                Reason(None, e.path, None, "not checked (internal error): what it holds is unknown") for e in missed[:limit]))
            continue
        losing = _losing(shipped, target, frozenset(table.get("slight", {}).get("rules", ())))
        lost = [feature for feature in opt_in if feature.verdicts[target] == FAILS and not feature.another_targets_path]
        heads = [reason for reason in (_confined_reason(confined, failing, part, target),
                                       _features_reason(lost, target)) if reason is not None]
        # What raises in the few modules is named as failing; the rest as what the main path loses.
        raised = _reasons(failing, table.get("fails", {}), max(0, limit - len(heads)))
        raising, named = {id(f) for f in failing}, {r.rule for r in raised}
        rest = [f for f in losing if id(f) not in raising and f.rule not in named]
        reasons = (*heads, *raised, *_reasons(rest, _phrases(table, rest, target), max(0, limit - len(heads) - len(raised))))
        # A feature's own verdict says it fails; the part runs as it does by default, degraded only
        # by what its main path loses (or by the few modules that raise).
        result[target] = Verdict(DEGRADED if losing or confined else RUNS, reasons[:limit])
    return result


def _breadth() -> tuple[float, frozenset[str]]:
    """rules/verdicts.toml [breadth]: the share of a part's modules that confines a tie, and the
    rules whose findings are built with the part wherever they are."""
    table = load_table("verdicts").get("breadth", {})
    return float(table.get("share", 1.0)), frozenset(table.get("built", ()))


def _judged(findings: list[Finding], count_tests: bool) -> list[Finding]:
    """The findings a verdict weighs: test-only and demo-block ones only for a tests component."""
    if count_tests:
        return list(findings)
    never = frozenset(load_table("contexts").get("never_fail", ("test",)))
    return [f for f in findings if _counts(f, never)]


def _failing(shipped: list[Finding], target: str) -> list[Finding]:
    """What may fail the part on `target`: the blocker and major ties that raise there, features aside."""
    return [f for f in shipped if f.targets.get(target) == "raises" and f.severity in _BLOCKING and not is_feature(f)]


def confined_ties(findings: list[Finding], part: Part, count_tests: bool = False) -> dict[str, list[Finding]]:
    """Per target, the ties that raise there but only in a few of the part's modules, so that the
    part runs degraded rather than failing (what `verdicts` names first); the score charges them as
    what they are for the part: a loss, not a failure. Targets where nothing is confined are left out."""
    share, built = _breadth()
    shipped = _judged(findings, count_tests)
    out = {}
    for target in targets.names():
        failing = _failing(shipped, target)
        if _confined(failing, part, share, built):
            out[target] = failing
    return out


def _confined(failing: list[Finding], part: Part, share: float, built: frozenset[str] = frozenset()) -> list[str] | None:
    """The files `failing` raises in, when it is confined to them: nothing it holds is installed or
    built with the part (an install file, or a rule of `built`: a native build, wherever it is
    written), and they are fewer than `share` of the part's files (so a one-module package that
    raises fails). None: it fails the part; an empty list: nothing raises."""
    if not failing:
        return []
    if part.files <= 0 or any(f.path in part.installed or f.name in built for f in failing):
        return None
    files = sorted({f.path for f in failing})
    return files if len(files) < share * part.files else None


def _confined_reason(files: list[str], failing: list[Finding], part: Part, target: str) -> Reason | None:
    """"only N of M files raise on X (...): the rest runs there; what calls into them fails"."""
    if not files:
        return None
    names = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    them = "it" if len(files) == 1 else "them"
    raise_ = "raises" if len(files) == 1 else "raise"
    why = (f"only {len(files)} of its {part.files} Python files {raise_} on {targets.get(target).display} ({names}): "
           f"the rest runs there; what calls into {them} fails")
    first = min(failing, key=_rank)
    return Reason(first.rule, first.path, first.line, why)


def _features_reason(lost: list[Feature], target: str) -> Reason | None:
    """"2 features are NVIDIA-only: ...; the main path runs without them" (None: none is lost)."""
    if not lost:
        return None
    first = lost[0]
    names = ", ".join(f"{feature.name} ({feature.path}:{feature.line})" for feature in lost[:3])
    more = f" and {len(lost) - 3} more" if len(lost) > 3 else ""
    # "NVIDIA-only" only when true: a CUDA-stream strategy runs on ROCm, an XLA one on TPU
    nvidia_only = all(set(feature.verdicts.values()) == {FAILS} for feature in lost)
    what = (f"{' is' if len(lost) == 1 else 's are'} NVIDIA-only" if nvidia_only
            else f"{'' if len(lost) == 1 else 's'} fail{'s' if len(lost) == 1 else ''} on {targets.get(target).display}")
    why = f"{len(lost)} feature{what}: {names}{more}; the main path runs without {'it' if len(lost) == 1 else 'them'}"
    return Reason(first.rule, first.path, first.line, why)


def _losing(shipped: list[Finding], target: str, slight: frozenset[str]) -> list[Finding]:
    """What the main path loses on `target`: ties that degrade there, or minor ones that raise. Not
    lost: an opt-in feature's tie (the feature's own verdict says so), an extra's dependency or an
    integration module's tie (the user opts in to those too), an optional fast path the code falls
    back from (`try: import apex except ImportError:`: the fallback is the path the others run), an info tie (nothing to act on), a
    slight difference (rules/verdicts.toml [slight]: an ignored setting, a property that reads
    another value, a package the target's install replaces) and, on the host, whatever only degrades
    (the CPU is the baseline: a GPU acceleration it never had is not lost there)."""
    host = targets.has_role(target, "host")
    out = []
    for f in shipped:
        effect = f.targets.get(target)
        if f.severity == Severity.INFO.value or is_feature(f) or _OPT_IN_GUARDS.intersection((f.guard or "").split("+")):
            continue
        if effect == "degrades" and not host and f.name not in slight or effect == "raises":
            out.append(f)
    return out


def _phrases(table: dict, losing: list[Finding], target: str) -> dict[str, str]:
    phrases = {**table.get("degrades", {})}
    for f in losing:
        if f.targets.get(target) == "raises" and f.name in table.get("raised", {}):
            phrases[f.name] = table["raised"][f.name]  # a minor tie that raises here, though it degrades elsewhere
        elif f.name in table.get("fails", {}) and f.name not in phrases:
            # a minor tie that raises (monitoring): its failure is what is lost; a tie that
            # raises elsewhere but only degrades here (optional code) is named as it is
            phrases[f.name] = table["fails"][f.name] + (" fail" if f.targets.get(target) == "raises" else "")
    return phrases


def _reasons(findings: list[Finding], phrases: dict[str, str], limit: int) -> tuple[Reason, ...]:
    by_rule: dict[str, list[Finding]] = {}
    for f in sorted(findings, key=_rank):
        by_rule.setdefault(f.rule, []).append(f)
    ordered = sorted(by_rule.values(), key=lambda group: _rank(group[0]))[:limit]
    reasons = []
    for group in ordered:
        first = group[0]
        why = phrases.get(first.name, first.name)
        if first.context:
            why += f" ({first.context})"
        if len(group) > 1:
            files = len({f.path for f in group})
            why += f": {len(group)} findings in {files} file{'s' if files > 1 else ''}"
        reasons.append(Reason(first.rule, first.path, first.line, why))
    return tuple(reasons)
