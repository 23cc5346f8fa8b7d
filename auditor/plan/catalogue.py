"""The plan's catalogue: rules/plan/*.toml, read and checked once per process (only `audit plan`
reads it; a scan never parses that folder).

    targets.toml  per target: the stack, step 3's notes ("what changes for T"), step 4's checklist,
                  the legacy paths (torch_xla, the XLA-based torch-neuronx)
    tools.toml    serving and training tools, how to tell they are used, their support per target
    signals.toml  what the plan reads besides findings: clouds, buckets, regions, instance types,
                  training or inference, on-device export, torch.compile, the device's owner
    plan.toml     the kind of each rule's finding, step 2's choices, effort buckets, ranking weights,
                  the reader's questions, what a plan cannot see, the generated files' extras

Every fact is `{text, status, source}` with status verified, inferred or unverified (a verified or
inferred fact names its source). A broken file stops the run: CatalogueError, one line naming the
file and the row (exit 2), like the rest of the catalogue."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from auditor import targets as registry
from auditor.analysis.components import kinds as component_kinds
from auditor.catalogue import load_table
from auditor.targets import CatalogueError, catalogue_dir, read_catalogue_file

FOLDER = "plan"
STATUSES = ("verified", "inferred", "unverified")
LEVELS = ("supported", "partial", "unsupported")
SIGNAL_KINDS = ("cloud", "bucket", "region", "instance", "k8s", "training", "inference", "edge", "compile",
                "device-owner")
TOPICS = ("device", "accelerator", "precision", "compile", "distributed", "visibility", "install", "image",
          "kernels", "monitoring", "memory", "streams", "environment", "other")
ALWAYS = "always"
OTHER = "other"  # the kind of a rule [kinds] does not name


@dataclass(frozen=True)
class Fact:
    text: str
    status: str
    source: str

    def to_dict(self) -> dict:
        return {"text": self.text, "status": self.status, "source": self.source}


@dataclass(frozen=True)
class Change:
    """One note of step 3: shown when a kind in `when` was found (or always)."""

    topic: str
    when: tuple[str, ...]
    fact: Fact


@dataclass(frozen=True)
class CloudItem:
    """One checklist item of step 4; `fact` is None for advice that is no vendor fact."""

    item: str
    text: str
    fact: Fact | None
    signals: tuple[str, ...]


@dataclass(frozen=True)
class TargetNotes:
    target: str
    stack: Fact | None
    legacy: str | None
    docs: tuple[str, ...]
    changes: tuple[Change, ...]
    cloud: tuple[CloudItem, ...]


@dataclass(frozen=True)
class LegacyPath:
    key: str
    target: str
    title: str
    fact: Fact
    when_used: tuple[str, ...]
    changes: tuple[Change, ...]


@dataclass(frozen=True)
class Support:
    level: str
    fact: Fact


@dataclass(frozen=True)
class Tool:
    name: str
    display: str
    role: str
    imports: tuple[str, ...]
    packages: tuple[str, ...]
    images: tuple[re.Pattern, ...]
    note: Fact | None
    support: dict[str, Support]


@dataclass(frozen=True)
class SignalDef:
    kind: str
    what: str
    provider: str | None
    imports: tuple[str, ...]
    packages: tuple[str, ...]
    pattern: re.Pattern | None
    files: frozenset[str] | None  # None: every kind


@dataclass(frozen=True)
class Choice:
    kind: str
    title: str
    owner: str


@dataclass(frozen=True)
class Provider:
    name: str
    display: str
    targets: tuple[str, ...]
    why: str
    fact: Fact | None


@dataclass(frozen=True)
class Shift:
    shift: int
    reason: str
    optional: bool = False  # [effort.component] only: the item is optional (not what ships)


@dataclass(frozen=True)
class Effort:
    order: tuple[str, ...]
    default: tuple[str, str]  # (bucket, reason)
    rules: dict[str, tuple[str, str]]
    works: str
    fixed: str
    nothing_replaces: tuple[re.Pattern, ...]
    context: dict[str, Shift]
    component: dict[str, Shift]
    no_equivalent: dict[str, tuple[frozenset[str], Fact]]


@dataclass(frozen=True)
class PlanCatalogue:
    kinds: dict[str, str]  # rule name -> kind
    choices: tuple[Choice, ...]
    effort: Effort
    notes: dict[str, TargetNotes]
    paths: dict[str, LegacyPath]
    cloud_common: tuple[CloudItem, ...]
    no_cloud: frozenset[str]
    tools: tuple[Tool, ...]
    signals: tuple[SignalDef, ...]
    ranking: dict[str, Any]
    providers: dict[str, Provider]
    workload: dict[str, str]
    edge: Fact
    questions: tuple[str, ...]
    unseen: tuple[str, ...]
    nothing_shipped: str  # said when no component is a package or a program
    other_backends: dict[str, tuple[str, ...]]
    conditions: tuple[str, ...]
    way_back: tuple[str, ...]
    rules_named: frozenset[str] = field(default=frozenset())  # every rule name the files use

    def kind_of(self, rule_name: str) -> str:
        return self.kinds.get(rule_name, OTHER)

    def notes_for(self, target: str) -> TargetNotes | None:
        return self.notes.get(target)


def _read(stem: str) -> dict[str, Any]:
    return read_catalogue_file(f"{FOLDER}/{stem}.toml", CatalogueError, "`audit plan` needs it", catalogue_dir())


class _Where:
    """Errors that name the file and the row."""

    def __init__(self, stem: str) -> None:
        self.stem = stem

    def fail(self, row: str, message: str) -> CatalogueError:
        return CatalogueError(f"rules/{FOLDER}/{self.stem}.toml {row}: {message}")

    def text(self, table: dict, key: str, row: str, required: bool = True) -> str:
        value = table.get(key, "")
        if not isinstance(value, str) or (required and not value):
            raise self.fail(row, f"`{key}` must be a non-empty string")
        return value

    def strings(self, table: dict, key: str, row: str) -> tuple[str, ...]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(row, f"`{key}` must be a list of strings")
        return tuple(value)

    def fact(self, table: Any, row: str) -> Fact:
        if not isinstance(table, dict):
            raise self.fail(row, "a fact is a table {text, status, source}")
        status = table.get("status")
        if status not in STATUSES:
            raise self.fail(row, f"`status` must be one of {', '.join(STATUSES)} (got {status!r})")
        source = table.get("source", "")
        if not isinstance(source, str) or (status != "unverified" and not source.strip()):
            raise self.fail(row, f"a {status} fact needs its `source`")
        return Fact(self.text(table, "text", row), status, source)

    def target(self, name: str, row: str) -> str:
        if registry.registry().get(name) is None:
            raise self.fail(row, f"{name!r} is not a target of the registry (rules/targets.toml): "
                                 f"{', '.join(registry.names())}")
        return name

    def pattern(self, value: Any, row: str) -> re.Pattern:
        if not isinstance(value, str) or not value:
            raise self.fail(row, "a pattern must be a non-empty string")
        try:
            return re.compile(value)
        except re.error as exc:
            raise self.fail(row, f"{value!r} is not a regular expression ({exc})") from None


@cache
def plan_catalogue() -> PlanCatalogue:
    """rules/plan/*.toml, checked (CatalogueError on the first problem)."""
    plan = _read("plan")
    where = _Where("plan")
    kinds, named = _kinds(plan, where)
    effort, effort_rules = _effort(plan.get("effort"), where)
    notes, paths = _notes(_read("targets"), _Where("targets"))
    cloud_common = tuple(_cloud_item(row, f"[[cloud_common]] #{i}", where)
                         for i, row in enumerate(plan.get("cloud_common", []), start=1))
    no_cloud = frozenset(where.target(t, "[cloud] no_cloud") for t in where.strings(plan.get("cloud", {}), "no_cloud",
                                                                                    "[cloud]"))
    reader = plan.get("reader", {})
    generated = plan.get("generated", {})
    others = generated.get("other_backends", {})
    if not isinstance(others, dict):
        raise where.fail("[generated.other_backends]", "must be a table of device type -> module list")
    catalogue = PlanCatalogue(
        kinds=kinds, choices=_choices(plan, where), effort=effort, notes=notes, paths=paths,
        cloud_common=cloud_common, no_cloud=no_cloud, tools=_tools(_read("tools"), _Where("tools")),
        signals=_signals(_read("signals"), _Where("signals")), ranking=_ranking(plan.get("ranking"), where),
        providers=_providers(plan.get("providers"), where),
        workload={k: where.text(plan.get("workload", {}), k, "[workload]")
                  for k in ("inference_first", "training_only", "unknown")},
        edge=where.fact(plan.get("edge"), "[edge]"),
        questions=where.strings(reader, "questions", "[reader]"), unseen=where.strings(reader, "unseen", "[reader]"),
        nothing_shipped=where.text(reader, "nothing_shipped", "[reader]"),
        other_backends={k: where.strings(others, k, "[generated.other_backends]") for k in others},
        conditions=where.strings(generated, "conditions", "[generated]"),
        way_back=where.strings(generated, "way_back", "[generated]"),
        rules_named=frozenset(named | effort_rules | {r for p in paths.values() for r in p.when_used}),
    )
    return catalogue


def check_rules(catalogue: PlanCatalogue, known: set[str] | frozenset[str]) -> None:
    """Every rule the plan's files name is a loaded rule (`known`: the rules' names)."""
    unknown = sorted(catalogue.rules_named - set(known))
    if unknown:
        raise CatalogueError(f"rules/{FOLDER}/plan.toml: {unknown[0]!r} names no rule (see `audit rules`)")


def _kinds(plan: dict, where: _Where) -> tuple[dict[str, str], set[str]]:
    table = plan.get("kinds")
    if not isinstance(table, dict):
        raise where.fail("[kinds]", "is required: the kind of each rule's finding")
    kinds: dict[str, str] = {}
    for kind in table:
        for rule in where.strings(table, kind, f"[kinds] {kind}"):
            if rule in kinds:
                raise where.fail(f"[kinds] {kind}", f"{rule!r} is already of kind {kinds[rule]!r}")
            kinds[rule] = kind
    return kinds, set(kinds)


def _choices(plan: dict, where: _Where) -> tuple[Choice, ...]:
    rows = plan.get("choice", [])
    found = []
    for index, row in enumerate(rows, start=1):
        name = f"[[choice]] #{index}"
        found.append(Choice(where.text(row, "kind", name), where.text(row, "title", name), where.text(row, "owner", name)))
    return tuple(found)


def _shifts(table: Any, row: str, where: _Where) -> dict[str, Shift]:
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise where.fail(row, "must be a table")
    found = {}
    for key, value in table.items():
        shift = value.get("shift") if isinstance(value, dict) else None
        if not isinstance(shift, int) or isinstance(shift, bool) or shift > 0:
            raise where.fail(f"{row} {key}", "`shift` must be an integer, 0 or less (it makes an item smaller)")
        optional = value.get("optional", False)
        if not isinstance(optional, bool):
            raise where.fail(f"{row} {key}", "`optional` must be true or false")
        found[key] = Shift(shift, where.text(value, "reason", f"{row} {key}"), optional)
    return found


def _effort(table: Any, where: _Where) -> tuple[Effort, set[str]]:
    if not isinstance(table, dict):
        raise where.fail("[effort]", "is required")
    order = where.strings(table, "order", "[effort]")
    if len(order) < 2:
        raise where.fail("[effort]", "`order` names the buckets from the smallest")

    def bucket(value: Any, row: str) -> tuple[str, str]:
        if not isinstance(value, dict) or value.get("bucket") not in order:
            raise where.fail(row, f"`bucket` must be one of {', '.join(order)}")
        return value["bucket"], where.text(value, "reason", row)

    rules = {name: bucket(value, f"[effort.rules] {name}") for name, value in table.get("rules", {}).items()}
    none = {}
    for name, value in table.get("no_equivalent", {}).items():
        row = f"[effort.no_equivalent] {name}"
        chosen = frozenset(where.target(t, row) for t in where.strings(value, "targets", row))
        none[name] = (chosen, where.fact({"text": value.get("reason"), **value}, row))
    effort = Effort(
        order=order, default=bucket(table.get("default"), "[effort] default"), rules=rules,
        works=where.text(table, "works", "[effort]"), fixed=where.text(table, "fixed", "[effort]"),
        nothing_replaces=tuple(where.pattern(p, "[effort] nothing_replaces")
                               for p in where.strings(table, "nothing_replaces", "[effort]")),
        context=_named(_shifts(table.get("context"), "[effort.context]", where), _context_names(), "[effort.context]",
                       "rules/contexts.toml `order`", where),
        component=_named(_shifts(table.get("component"), "[effort.component]", where), component_kinds(),
                         "[effort.component]", "rules/components.toml `kinds`", where),
        no_equivalent=none)
    return effort, set(rules) | set(none)


def _named(shifts: dict[str, Shift], known: tuple[str, ...], row: str, where_known: str,
           where: _Where) -> dict[str, Shift]:
    """`shifts`, each keyed by a name `known` lists (a context, a component kind)."""
    unknown = sorted(set(shifts) - set(known))
    if unknown:
        raise where.fail(f"{row} {unknown[0]}", f"names nothing in {where_known}: {', '.join(known)}")
    return shifts


def _context_names() -> tuple[str, ...]:
    return tuple(load_table("contexts").get("order", ()))


def _changes(rows: Any, row: str, where: _Where) -> tuple[Change, ...]:
    if not isinstance(rows, list):
        raise where.fail(row, "must be an array of tables")
    found = []
    for index, change in enumerate(rows, start=1):
        name = f"{row} #{index}"
        topic = where.text(change, "topic", name)
        if topic not in TOPICS:
            raise where.fail(name, f"unknown topic {topic!r}; topics: {', '.join(TOPICS)}")
        when = where.strings(change, "when", name)
        if not when:
            raise where.fail(name, '`when` names the kinds that make it relevant, or "always"')
        found.append(Change(topic, when, where.fact(change, name)))
    return tuple(found)


def _cloud_item(row: Any, name: str, where: _Where) -> CloudItem:
    signals = where.strings(row, "signals", name)
    bad = next((s for s in signals if s not in SIGNAL_KINDS and s not in ("aws", "gcp", "azure")), None)
    if bad is not None:
        raise where.fail(name, f"unknown signal kind {bad!r}; kinds: {', '.join(SIGNAL_KINDS)}")
    text = where.text(row, "text", name)
    fact = where.fact(row, name) if "status" in row else None
    return CloudItem(where.text(row, "item", name), text, fact, signals)


def _notes(data: dict, where: _Where) -> tuple[dict[str, TargetNotes], dict[str, LegacyPath]]:
    paths: dict[str, LegacyPath] = {}
    for key, block in (data.get("path") or {}).items():
        row = f"[path.{key}]"
        paths[key] = LegacyPath(
            key, where.target(where.text(block, "target", row), row), where.text(block, "title", row),
            where.fact({"text": block.get("title"), **block}, row), where.strings(block, "when_used", row),
            _changes(block.get("change", []), f"[[path.{key}.change]]", where))
    notes: dict[str, TargetNotes] = {}
    for name, block in (data.get("target") or {}).items():
        row = f"[target.{name}]"
        where.target(name, row)
        legacy = block.get("legacy")
        if legacy is not None and legacy not in paths:
            raise where.fail(row, f"`legacy` {legacy!r} names no [path.*] block")
        notes[name] = TargetNotes(
            name, where.fact(block["stack"], f"{row} stack") if "stack" in block else None, legacy,
            where.strings(block, "docs", row), _changes(block.get("change", []), f"[[target.{name}.change]]", where),
            tuple(_cloud_item(item, f"[[target.{name}.cloud]] #{i}", where)
                  for i, item in enumerate(block.get("cloud", []), start=1)))
    return notes, paths


def _tools(data: dict, where: _Where) -> tuple[Tool, ...]:
    found = []
    for name, block in (data.get("tool") or {}).items():
        row = f"[tool.{name}]"
        support: dict[str, Support] = {}
        for target, value in (block.get("support") or {}).items():
            place = f"[tool.{name}.support] {target}"
            where.target(target, place)
            if not isinstance(value, dict) or value.get("level") not in LEVELS:
                raise where.fail(place, f"`level` must be one of {', '.join(LEVELS)}")
            support[target] = Support(value["level"], where.fact(value, place))
        found.append(Tool(
            name, where.text(block, "display", row), where.text(block, "role", row), where.strings(block, "imports", row),
            where.strings(block, "packages", row),
            tuple(where.pattern(p, f"{row} images") for p in where.strings(block, "images", row)),
            where.fact(block["note"], f"{row} note") if "note" in block else None, support))
    return tuple(found)


def _signals(data: dict, where: _Where) -> tuple[SignalDef, ...]:
    found = []
    for index, row in enumerate(data.get("signal", []), start=1):
        name = f"[[signal]] #{index}"
        kind = where.text(row, "kind", name)
        if kind not in SIGNAL_KINDS:
            raise where.fail(name, f"unknown kind {kind!r}; kinds: {', '.join(SIGNAL_KINDS)}")
        imports, packages = where.strings(row, "imports", name), where.strings(row, "packages", name)
        pattern = where.pattern(row["pattern"], name) if "pattern" in row else None
        if pattern is None and not imports and not packages:
            raise where.fail(name, "needs `imports`, `packages` or a `pattern`")
        files = where.strings(row, "files", name)
        found.append(SignalDef(kind, where.text(row, "what", name), row.get("provider"), imports, packages, pattern,
                               frozenset(files) if files else None))
    return tuple(found)


def _ranking(table: Any, where: _Where) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise where.fail("[ranking]", "is required")
    verdict, tool = table.get("verdict"), table.get("tool")
    numbers = [*(verdict or {}).values(), *(tool or {}).values(), table.get("cloud")]
    if not isinstance(verdict, dict) or not isinstance(tool, dict) or not all(
            isinstance(n, int | float) and not isinstance(n, bool) for n in numbers):
        raise where.fail("[ranking]", "`verdict`, `tool` (tables of numbers) and `cloud` (a number) are required")
    bad = next((level for level in tool if level not in LEVELS), None)
    if bad is not None:
        raise where.fail("[ranking] tool", f"unknown level {bad!r}; levels: {', '.join(LEVELS)}")
    kinds = where.strings(table, "cloud_kinds", "[ranking]")
    bad = next((kind for kind in kinds if kind not in SIGNAL_KINDS), None)
    if bad is not None or not kinds:
        raise where.fail("[ranking] cloud_kinds", f"names the signal kinds that point to a provider ({', '.join(SIGNAL_KINDS)})"
                         + (f"; not {bad!r}" if bad else ""))
    return {"verdict": dict(verdict), "tool": dict(tool), "cloud": table["cloud"], "cloud_kinds": kinds}


def _providers(table: Any, where: _Where) -> dict[str, Provider]:
    if not isinstance(table, dict):
        raise where.fail("[providers]", "is required")
    found = {}
    for name, block in table.items():
        row = f"[providers.{name}]"
        fact = where.fact({"text": block.get("why"), **block}, row) if "status" in block else None
        found[name] = Provider(name, where.text(block, "display", row),
                               tuple(where.target(t, row) for t in where.strings(block, "targets", row)),
                               where.text(block, "why", row), fact)
    return found
