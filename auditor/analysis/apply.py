"""How a finding's context changes what it reports: effects per target, severity, message,
suggestion and the `context` name (see rules/contexts.toml for the vocabulary and the rules)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from auditor import targets
from auditor.analysis.placement import Where
from auditor.model import Effect, Severity, cap_effect

if TYPE_CHECKING:
    from auditor.catalogue import Catalogue
    from auditor.checks.base import Rule

WORKS, DEGRADES, RAISES = Effect.WORKS.value, Effect.DEGRADES.value, Effect.RAISES.value
# What makes a finding optional when no test does: an extra's dependency, an integration module,
# a config file's setting (the run picks the config and overrides its values).
_OPTIONAL_KINDS = {"dependency": "extra", "integration": "integration", "setting": "option", "cpu_build": "build"}
# Defaults the run overrides (README "Context"): a parameter default the callers of a function
# replace, a command-line option's default, a config file's value, the fallback of `args.device or
# "cuda"`. The user passes the device (`--device mps`), so the default itself loses nothing there.
_OVERRIDABLE_KINDS = frozenset({"api", "param", "default", "config", "setting", "fallback", "probe"})
_PRIMARY = ("redundant", "own-package", "display", "backend-module", "feature", "optional", "guarded")


@dataclass(frozen=True)
class Applied:
    context: str | None
    effects: dict[str, str]
    severity: str
    message: str
    suggestion: str
    guard: str | None = None  # the kinds of the guards behind `guarded` / `optional` ("option", "build+env")


def render(template: str, fields: dict[str, Any]) -> str | None:
    try:
        return template.format(**fields)
    except (KeyError, IndexError, ValueError, AttributeError):
        return None


join = targets.join  # "a", "a and b", "a, b and c"


def _at(line: int | None, before: str, after: str = "") -> str:
    """", line 3" for a template, or nothing when the line is not known (never "line None")."""
    return f"{before}line {line}{after}" if line else ""


def _another_targets_path(base: dict[str, str]) -> bool:
    """The tie works only on targets that take no CUDA calls (the host aside): torch_xla on TPU and
    Trainium. Code for those targets alone is theirs; the others lose nothing by skipping it."""
    works = [t for t, e in base.items() if e == WORKS]
    return bool(works) and all(not targets.has_role(t, "accepts-cuda-calls") and not targets.has_role(t, "host")
                               for t in works)


def apply(rule: Rule, fields: dict[str, Any], where: Where | None, base: dict[str, str], message: str,
          suggestion: str, catalogue: Catalogue) -> Applied:
    """The finding as its context makes it; `message` and `suggestion` are the rule's, rendered."""
    severity = rule.severity.value
    if where is None:
        return Applied(None, base, severity, message, suggestion)
    every = targets.names()
    hosts = targets.with_role("host")
    effects = dict(base)
    names: list[str] = []
    extra: dict[str, Any] = {}
    if where.test:
        names.append("test")
    if where.demo:
        names.append("demo")
    if where.seeder is not None:
        names.append("redundant")
        effects = dict.fromkeys(every, WORKS)
        seeder, seed, line = where.seeder
        extra.update(seeder=seeder, seed=seed, seed_line=line, seed_at=_at(line, " (", ")"))
    elif where.own is not None:
        names.append("own-package")
        effects = dict.fromkeys(every, WORKS)
        extra.update(package=where.own)
        # Said of the import too (auditor.analysis.crossfile reads it): a module the project imports
        # only under a fallback or a guard is as optional as those imports.
        if where.feature is not None:
            names.append("feature")
        if where.optional is not None:
            names.append("optional")
        if where.served_before or any(not where.condition.may_hold(t) for t in every):
            names.append("guarded")
    else:
        if where.display is not None:
            names.append("display")
            if where.shipped:  # a file name in package_data: nothing runs
                effects = dict.fromkeys(every, WORKS)
            raising = [t for t in every if effects[t] == RAISES]
            extra.update(how=where.display, still=f"; the call still raises on {join(raising)}" if raising else "")
        backend = where.backend
        if backend is not None and (backend.covered or backend.others or backend.default):
            names.append("backend-module")
            falls_back = not backend.covered.isdisjoint(hosts)
            for target in every:
                # its own sibling module serves it, or the default implementation a mirrored
                # alternative (ops/cutedsl/ beside ops/*.py) is chosen over only on request
                if target in backend.covered or backend.default:
                    effects[target] = WORKS
                elif falls_back:
                    effects[target] = cap_effect(effects[target])  # falls back to the host's backend or the default
            extra.update(_backend_fields(backend, catalogue))
        if where.feature is not None:  # the feature still fails where it raises: its own verdict says so
            names.append("feature")
            extra.update(feature=where.feature, feature_line=where.feature_line, runtime=where.runtime)
        if where.optional is not None:
            names.append("optional")
            # A default the run overrides (`parser.add_argument("--device", default="cuda")`, a
            # recipe's `device: cuda`, `load(device="cuda")` its callers replace) works where the user
            # passes that target's device; an optional import of another target's own package (`try:
            # import torch_xla`) loses nothing where it is missing, since that code is for its device.
            overridable = where.optional_kind in _OVERRIDABLE_KINDS
            elsewhere = _another_targets_path(base)
            effects = {t: WORKS if overridable or (elsewhere and e == RAISES) else cap_effect(e)
                       for t, e in effects.items()}
            extra.update(guard=where.optional, guard_line=where.optional_line, guard_at=_at(where.optional_line, ", "))
        skipped = [t for t in every if not where.condition.may_hold(t) or t in where.served_before]
        if skipped:
            names.append("guarded")
            kept = dict(effects)
            for target in skipped:
                # Skipping costs nothing where the code is not wanted: a target served by another
                # branch, the host (which needs no GPU work), every target when the test is about a
                # tensor's device (the other path handles it), or when the code is for another
                # device altogether (an XLA-only block skipped on MPS).
                if (target in where.covered or target in where.served_before or target in hosts
                        or not where.condition.available or not where.condition.may_hold("nvidia")):
                    effects[target] = WORKS
                else:
                    effects[target] = cap_effect(effects[target])
            if where.guard is not None:
                runs = f"runs only where `{where.guard}` holds" + (f" (line {where.guard_line})" if where.guard_line else "")
            else:
                runs = "is the CUDA branch of a per-device dispatch"
            extra.setdefault("guard", where.guard)
            extra.setdefault("guard_line", where.guard_line)
            extra.setdefault("guard_at", _at(where.guard_line, ", "))
            extra.update(runs=runs, outcome=_outcome(skipped, where, kept, effects))
    if not names:
        served = [t for t in every if t in where.siblings and effects[t] != WORKS]
        # `if torch.cuda.is_available():` is the guard itself: its branch, not the main path, is CUDA's
        check = where.check and rule.name in catalogue.table("contexts").get("checks", {}).get("rules", ())
        if not served and not check:
            return Applied(None, base, severity, message, suggestion)
        for target in served:  # the test of a dispatch chain: those targets take their own branch
            effects[target] = WORKS
        noun = f" Here {join(served)} {'have their' if len(served) > 1 else 'has its'} own branch." if served else ""
        return Applied("guarded" if check else None, effects, _severity(rule.severity, base, effects),
                       f"{message}{noun}", suggestion, "availability" if check else None)
    severity = _severity(rule.severity, base, effects)
    order = catalogue.table("contexts").get("order", [])
    names.sort(key=lambda n: order.index(n) if n in order else len(order))
    contexts = catalogue.table("contexts").get("context", {})
    values = {**fields, **extra, "message": message, "suggestion": suggestion}
    values["subject"] = render(getattr(rule, "subject", "`{api}`"), values) or f"This {rule.name} tie"
    primary = next((n for n in _PRIMARY if n in names), None)
    if primary is not None:
        table = contexts.get(primary, {})
        kind = f"{where.optional_kind}_" if primary == "optional" and where.optional_kind != "code" else ""
        if primary == "feature" and where.feature_kind != "function":
            kind = f"{where.feature_kind}_"
        if primary == "optional":
            required, required_line = where.required or ("", None)
            values.update(required=required, required_line=required_line)
            if where.required is not None and where.optional_kind in ("code", "import"):
                kind = "required_"  # `if cupy is None: raise`: where the package is missing this raises, no fallback
        message = render(table.get(f"{kind}message", "{message}"), values) or message
        suggestion = render(table.get(f"{kind}suggestion", table.get("suggestion", "{suggestion}")), values) or suggestion
        values.update(message=message, suggestion=suggestion)
    for name in ("demo", "test"):  # said after the message of the primary context
        if name in names:
            message = render(contexts.get(name, {}).get("message", "{message}"), values) or message
            values["message"] = message
    # "launch" (a launcher's variable) and "mode" are said in the message; JSON `guard` calls them options
    kinds = set(where.kinds) - {"launch", "mode"} if ("guarded" in names or "optional" in names) else set()
    if "optional" in names and where.optional_kind in _OPTIONAL_KINDS:
        kinds.add(_OPTIONAL_KINDS[where.optional_kind])
    return Applied("+".join(names), effects, severity, message, suggestion, "+".join(sorted(kinds)) or None)


def _severity(rule_severity: Severity, base: dict[str, str], effects: dict[str, str]) -> str:
    """Where the context took the failure away: a blocker or major that raised somewhere and no
    longer does is minor; a tie that now works everywhere is info."""
    values = set(effects.values())
    if values == {WORKS} and set(base.values()) != {WORKS}:
        cap = Severity.INFO
    elif RAISES in base.values() and RAISES not in values:
        cap = Severity.MINOR
    else:
        return rule_severity.value
    return (cap if cap.rank < rule_severity.rank else rule_severity).value


def _outcome(skipped: list[str], where: Where, before: dict[str, str], after: dict[str, str]) -> str:
    """"tpu and mps skip it; xpu takes its own branch; the CPU does not need it; it still raises on rocm"."""
    served = where.covered | where.served_before
    hosts = targets.with_role("host")
    own = [t for t in skipped if t in served]
    idle = [t for t in skipped if t in hosts and t not in served]  # the host: no GPU work to skip
    other = [t for t in skipped if t not in served and t not in hosts]
    parts = []
    if other and not where.condition.may_hold("nvidia"):
        parts.append(f"{join(other)} {'do' if len(other) > 1 else 'does'} not need it")
    elif other and not where.condition.available:
        parts.append(f"{join(other)} {'take' if len(other) > 1 else 'takes'} the other path")
    elif other:
        parts.append(f"{join(other)} {'skip' if len(other) > 1 else 'skips'} it")
    if own:
        parts.append(f"{join(own)} {'have their' if len(own) > 1 else 'has its'} own branch")
    if idle:
        phrases = [targets.get(t).phrase for t in idle]
        parts.append(f"{join(phrases)} {'do' if len(idle) > 1 else 'does'} not need it")
    raising = [t for t in targets.names() if after[t] == RAISES]
    if raising:
        parts.append(f"it still raises on {join(raising)}")
    return "; ".join(parts) or "other targets skip it"


def _backend_fields(backend, catalogue: Catalogue) -> dict[str, str]:
    gpu_words = catalogue.table("contexts").get("backend_modules", {}).get("gpu", ())
    if backend.serves:
        kind = targets.get(backend.serves).display
    else:
        kind = "GPU" if any(word in backend.module.lower() for word in gpu_words) else "NVIDIA"
    return {"backend_kind": kind, **_backend_text(backend)}


def _backend_text(backend) -> dict[str, str]:
    if backend.note:
        return {"module": backend.module, "siblings": backend.note, "missing": "", "add": ""}
    if backend.default and not backend.covered and not backend.others:
        return {"module": backend.module,
                "siblings": f"its modules mirror those in `{backend.default}`, the default implementation the other "
                            f"targets run instead",
                "missing": "", "add": ""}
    every = targets.names()
    covered = [t for t in every if t in backend.covered]
    # A target that accepts CUDA calls runs the CUDA backend itself: it needs no sibling.
    missing = [t for t in every if t not in backend.covered and t != backend.serves
               and (backend.serves or not targets.has_role(t, "accepts-cuda-calls"))]
    if covered:
        siblings = f"{join(covered)} {'have' if len(covered) > 1 else 'has'} sibling backend modules"
    else:
        siblings = f"only {join(list(backend.others))} {'have' if len(backend.others) > 1 else 'has'} sibling modules"
    host = next((t for t in every if t in backend.covered and targets.has_role(t, "host")), None)
    fallback = ""
    if host is not None:
        fallback = f" ({'they fall' if len(missing) > 1 else 'it falls'} back to the {targets.get(host).display} backend)"
    return {
        "module": backend.module,
        "siblings": siblings,
        "missing": (f"; {join(missing)} {'have' if len(missing) > 1 else 'has'} none" + fallback) if missing else "",
        "add": f" (a sibling for {join(missing)} would support {'them' if len(missing) > 1 else 'it'})" if missing else "",
    }
