"""The catalogue checked against the loaded rules and the target registry, once per process when the
rules meet the catalogue (auditor.checks.registry.full_catalogue): a mistake in rules/*.toml stops the run
with one line naming the file and the row (exit 2) instead of making findings vanish or count as
raising everywhere. A plugin's rules and rows get the same checks as warnings.

What is checked:
- every rule has an effect for every target (its [effects] row over the family default, or its own
  `targets`), and every effects key is a target, a role or "others", every value an effect;
- every row that names a rule names a loaded one: [[api]], [[package]], [[env_var]],
  [[config_value]], an [effects] row, a verdict phrase, [guards.features], [redundant], [scoring.unit];
- every [[swap]] fix row's API is reported by some [[api]] row;
- a built-in rule that raises somewhere has a `fails` phrase in rules/verdicts.toml, one that
  degrades a `degrades` (or `fails`) phrase (a plugin's verdict reasons use its rule's name: the
  phrases must be known to a warm run, which loads no plugin);
- a message, suggestion or subject template names only fields its reports carry, and a context
  template only what that context fills;
- per-target tables ([package.targets], an env var's `instead`) name only targets (or `all`), and
  the registry's regular expressions compile.

A warm run that loads no catalogue pays nothing: the checks run where the catalogue is built."""

from __future__ import annotations

import string
from typing import TYPE_CHECKING, Any, NamedTuple

from auditor import targets as registry
from auditor.catalogue import DEFAULT, Catalogue
from auditor.checks.base import COMMON_FIELDS, own_effects
from auditor.targets import CatalogueError

if TYPE_CHECKING:
    from auditor.checks.base import Rule

# The registry's regexes the guards compile for every cold run anyway (so checking them here costs
# nothing): `image_pattern` and `dockerfile` are compiled only where a repository has an NVIDIA
# image, and tests/test_catalogue_check.py compiles them for the shipped registry.
GUARD_PATTERNS = ("helpers", "requires")
PLUGINS = "__plugins__"  # the raw table of the rows plugin rules bring (auditor.checks.registry)
_GENERATED = frozenset({PLUGINS, "__project__"})  # rows that are not a file of rules/
ALL = "all"  # the key of a per-target table that stands for every target it does not name
_TEMPLATE_FIELDS = frozenset({"message", "suggestion", "subject"})
# The fields each context's templates (rules/contexts.toml [context.*]) may use, as
# auditor/analysis/apply.py fills them (tests/test_catalogue_check.py holds it to that); every one may
# also use the rendered `message`, `suggestion` and `subject`.
CONTEXT_FIELDS: dict[str, frozenset[str]] = {
    "guarded": frozenset({"runs", "outcome", "guard", "guard_line", "guard_at"}),
    "optional": frozenset({"guard", "guard_line", "guard_at", "required", "required_line"}),
    "backend-module": frozenset({"module", "backend_kind", "siblings", "missing", "add"}),
    "own-package": frozenset({"package"}),
    "redundant": frozenset({"seeder", "seed", "seed_line", "seed_at"}),
    "display": frozenset({"how", "still"}),
    "test": frozenset(),
    "demo": frozenset(),
    "feature": frozenset({"feature", "feature_line", "runtime"}),
}


class Problem(NamedTuple):  # not a dataclass: creating one costs every cold start-up ~1 ms
    file: str  # "rules/cuda_api.toml", or "plugin acme_rules" for a plugin's rows
    row: str  # "[[api]] torch.cuda.is_available"
    text: str
    plugin: bool = False

    def line(self) -> str:
        return f"{self.file} {self.row}: {self.text}"


def enforce(catalogue: Catalogue, rules: tuple[Rule, ...] | list[Rule]) -> list[str]:
    """Stop on the first problem of the built-in catalogue (CatalogueError, one line); a plugin's
    problems come back as warnings."""
    problems = check(catalogue, rules)
    fatal = next((p for p in problems if not p.plugin), None)
    if fatal is not None:
        raise CatalogueError(f"{fatal.line()} (the catalogue must be fixed before the run)")
    return [f"{p.line()} (a plugin's rule)" for p in problems]


def check(catalogue: Catalogue, rules: tuple[Rule, ...] | list[Rule]) -> list[Problem]:
    """Every problem, built-in first then plugins', in a stable order."""
    by_name = {rule.name: rule for rule in rules}
    plugin_names = {rule.name for rule in rules if not _builtin(rule)}
    problems: list[Problem] = []
    for stem, table in catalogue.raw.items():
        where = _file(stem)
        plugin = stem == PLUGINS
        problems += _effect_rows(where, table.get("effects", {}), by_name, plugin)
        problems += _api_rows(where, table.get("api", []), by_name, plugin)
        if stem not in _GENERATED:
            problems += _named_rows(stem, table, by_name)
    problems += _swaps(catalogue)
    for rule in rules:
        plugin = rule.name in plugin_names
        problems += _rule_effects(rule, catalogue, plugin)
        problems += _templates(rule, plugin)
    problems += _phrases(catalogue, rules, plugin_names)
    problems += _context_templates(catalogue)
    for target in registry.registry().targets:
        problems += [Problem(f"rules/{registry.FILE}", f"target {target.name!r}", text)
                     for text in registry.pattern_errors(target, GUARD_PATTERNS)]
    return sorted(problems, key=lambda p: p.plugin)  # stable: built-in problems first


def _builtin(rule: Rule) -> bool:
    return type(rule).__module__.startswith("auditor.")


def _file(stem: str) -> str:
    return "plugin rules" if stem == PLUGINS else f"rules/{stem}.toml"


def _rule_file(rule: Rule, catalogue: Catalogue) -> str:
    stem = catalogue.effect_files.get(rule.name)
    if stem is not None:
        return _file(stem)
    return f"rule {rule.code} ({type(rule).__module__})"


# -- effects ---------------------------------------------------------------------------------------
_ROLE_KEYS = frozenset(registry.ROLES)
_EFFECT_VALUES = frozenset(registry.EFFECTS)


def _selectors(where: str, row: str, effects: Any, plugin: bool) -> list[Problem]:
    """An effects table: keys are targets, roles or "others"; values are effects; no target gets two
    values from two of its roles."""
    if not isinstance(effects, dict):
        return [Problem(where, row, "must be a table of target/role = effect", plugin)]
    every = registry.registry().names
    if (all(key in _ROLE_KEYS or key in every or key == registry.OTHERS for key in effects)
            and all(value in _EFFECT_VALUES for value in effects.values())
            and sum(key in _ROLE_KEYS for key in effects) < 2):
        return []  # the common case, checked cheaply: no key can be wrong, no two roles can clash
    problems = []
    for key, value in effects.items():
        if registry.selector_kind(key) is None:
            problems.append(Problem(where, row, f"{key!r} is neither a target, a role nor {registry.OTHERS!r} "
                                                f"(targets: {', '.join(registry.names())})", plugin))
        if value not in registry.EFFECTS:
            problems.append(Problem(where, row, f"{key} = {value!r} is not an effect ({', '.join(registry.EFFECTS)})",
                                    plugin))
    for target in registry.registry().targets:
        clash = registry.ambiguous(target, effects)
        if clash:
            problems.append(Problem(where, row, f"target {target.name!r} gets different effects from its roles "
                                                f"{' and '.join(clash)}: name it", plugin))
    return problems


def _effect_rows(where: str, rows: Any, by_name: dict[str, Rule], plugin: bool) -> list[Problem]:
    problems = []
    for name, effects in rows.items():
        row = f"[effects] {name}"
        if name != DEFAULT and name not in by_name:
            problems.append(Problem(where, row, f"names no loaded rule{_nearest(name, by_name)}", plugin))
        problems += _selectors(where, row, effects, plugin)
    return problems


def _rule_effects(rule: Rule, catalogue: Catalogue, plugin: bool) -> list[Problem]:
    """The rule has an effect for every target (its row over the family default, or its own)."""
    resolved = catalogue.effects.get(rule.name)
    problems: list[Problem] = []
    if resolved is None:
        if not rule.targets:
            return [Problem(_rule_file(rule, catalogue), rule.name, "has no effects: give it an [effects] row (or "
                                                                   "`targets` on a plugin rule)", plugin)]
        problems += _selectors(_rule_file(rule, catalogue), f"{rule.name} targets", dict(rule.targets), plugin)
        resolved = own_effects(type(rule))
    missing = [t for t in registry.names() if t not in resolved]
    if missing:
        fallback = ": it counts as raising there" if plugin else ""
        problems.append(Problem(_rule_file(rule, catalogue), f"[effects] {rule.name}",
                                f"no effect for {', '.join(missing)} (add it to the row, or a `default`/"
                                f"{registry.OTHERS!r} entry){fallback}", plugin))
    return problems


# -- rows that name rules ----------------------------------------------------------------------------
def _api_rows(where: str, rows: Any, by_name: dict[str, Rule], plugin: bool) -> list[Problem]:
    problems = []
    for item in rows if isinstance(rows, list) else ():
        row = f"[[api]] {item.get('name')!r}"
        rule = item.get("rule")
        if rule not in by_name:
            problems.append(Problem(where, row, f"rule {rule!r} names no loaded rule{_nearest(str(rule), by_name)}: "
                                                f"its findings would vanish", plugin))
        if "effects" in item:
            problems += _selectors(where, row + " effects", item["effects"], plugin)
    return problems


def _named_rows(stem: str, table: dict[str, Any], by_name: dict[str, Rule]) -> list[Problem]:
    """Rows of the other catalogue tables that name a rule, and per-target tables."""
    where = _file(stem)
    problems = []
    named: list[tuple[str, Any]] = []
    for kind in ("package", "env_var", "config_value"):
        for item in table.get(kind, []):
            label = item.get("names", item.get("name", item.get("prefix", item.get("keys", ""))))
            named.append((f"[[{kind}]] {label!r}", item.get("rule")))
            per_target = item.get("targets") if kind == "package" else item.get("instead")
            if isinstance(per_target, dict):
                problems += _per_target(where, f"[[{kind}]] {label!r}", per_target)
            if kind == "package" and "effects" in item:
                problems += _selectors(where, f"[[package]] {label!r} effects", item["effects"], False)
    for verdict in ("fails", "degrades", "raised"):
        named += [(f"[{verdict}] {name}", name) for name in table.get(verdict, {}) if stem == "verdicts"]
    named += [(f"[guards.features] {name}", name) for name in table.get("guards", {}).get("features", {})]
    named += [(f"[redundant] rules {name!r}", name) for name in table.get("redundant", {}).get("rules", ())]
    named += [(f"[scoring.unit] {name}", name) for name in table.get("scoring", {}).get("unit", {})]
    for row, rule in named:
        if rule not in by_name:
            problems.append(Problem(where, row, f"names no loaded rule {rule!r}{_nearest(str(rule), by_name)}"))
    return problems


def _per_target(where: str, row: str, table: dict[str, Any]) -> list[Problem]:
    every = set(registry.names())
    return [Problem(where, row, f"{key!r} is not a target (targets: {', '.join(registry.names())}, or {ALL!r})")
            for key in table if key not in every and key != ALL]


def _swaps(catalogue: Catalogue) -> list[Problem]:
    """A fix row whose API no [[api]] row reports would never apply."""
    problems = []
    for row in catalogue.table("fixes").get("swap", []):
        for api in row.get("api", ()):
            if catalogue.lookup_api(api) is None:
                problems.append(Problem("rules/fixes.toml", f"[[swap]] {api!r}",
                                        "no [[api]] row reports this API: the fix names no loaded rule"))
    return problems


# -- verdict phrases and templates ------------------------------------------------------------------------
def _phrases(catalogue: Catalogue, rules: tuple[Rule, ...] | list[Rule], plugin_names: set[str]) -> list[Problem]:
    """A rule that raises (on its own or through a catalogue row's effects) needs a `fails` phrase, one
    that degrades a `degrades` or `fails` phrase (rules/verdicts.toml)."""
    table = catalogue.table("verdicts")
    fails, degrades = table.get("fails", {}), table.get("degrades", {})
    seen: dict[str, set[str]] = {}
    for entry in [*catalogue.apis.values(), *catalogue.api_prefixes.values()]:
        seen.setdefault(entry.rule, set()).update(effect for _, effect in entry.effects)
    for item in catalogue.table("packages").get("package", []):
        if "effects" in item:
            seen.setdefault(item.get("rule", ""), set()).update(registry.resolve(item["effects"]).values())
    problems = []
    for rule in rules:
        if rule.name in plugin_names:
            continue
        values = set((catalogue.effects.get(rule.name) or own_effects(type(rule))).values()) | seen.get(rule.name, set())
        if "raises" in values and rule.name not in fails:
            problems.append(Problem("rules/verdicts.toml", f"[fails] {rule.name}", "missing: the rule raises on some "
                                    "target, and a failing verdict must say what fails"))
        if "degrades" in values and rule.name not in degrades and rule.name not in fails:
            problems.append(Problem("rules/verdicts.toml", f"[degrades] {rule.name}", "missing: the rule degrades on "
                                    "some target, and the verdict must say what is lost"))
    known = {rule.name for rule in rules}
    for name in table.get("slight", {}).get("rules", ()):
        if name not in known:
            problems.append(Problem("rules/verdicts.toml", f"[slight] {name!r}", "no loaded rule has this name"))
    return problems


_FORMATTER = string.Formatter()


def template_fields(template: str) -> set[str]:
    """The top-level field names a str.format template uses ("{api}", "{x.y}" -> "x")."""
    found = set()
    try:
        for _, name, _, _ in _FORMATTER.parse(template):
            if name:
                found.add(name.split(".", 1)[0].split("[", 1)[0])
    except ValueError:
        found.add("{malformed}")
    return found


def _templates(rule: Rule, plugin: bool) -> list[Problem]:
    allowed = COMMON_FIELDS | rule.fields
    problems = []
    for attribute in ("message", "suggestion", "subject"):
        unknown = sorted(template_fields(getattr(rule, attribute, "") or "") - allowed)
        if unknown:
            problems.append(Problem(f"rule {rule.code}", f"{rule.name} {attribute}",
                                    f"names unknown field(s) {', '.join(unknown)} (its reports carry: "
                                    f"{', '.join(sorted(allowed))}; declare more in `fields`)", plugin))
    return problems


def _context_templates(catalogue: Catalogue) -> list[Problem]:
    problems = []
    common = _TEMPLATE_FIELDS | COMMON_FIELDS
    for name, table in catalogue.table("contexts").get("context", {}).items():
        allowed = common | CONTEXT_FIELDS.get(name, frozenset())
        for key, template in table.items():
            if key == "summary" or not isinstance(template, str):
                continue
            unknown = sorted(template_fields(template) - allowed)
            if unknown:
                problems.append(Problem("rules/contexts.toml", f"[context.{name}] {key}",
                                        f"names unknown field(s) {', '.join(unknown)} (this context fills: "
                                        f"{', '.join(sorted(allowed))})"))
    return problems


def _nearest(name: str, choices: dict[str, Any]) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
