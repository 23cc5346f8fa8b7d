"""How a rule is declared: identity, metadata, message, docs and examples side by side (as in
Fixit and TorchFix), plus the hooks the scanners call. A new rule is one small module in
`auditor/checks/` (or a plugin) and the examples it carries are its tests.

Part of the plugin API (README, Extending: plugins): plugins import `Rule`, `ApiRule`, `Valid` and
`Invalid` from `auditor.checks.base`; keep them importable from here, with the hooks' signatures
(tests/test_plugin.py checks it)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, ClassVar

from auditor import targets as registry
from auditor.catalogue import ApiEntry, load_catalogue
from auditor.fix.swaps import swap_fix, swaps_of_rule
from auditor.model import Category, Effect, Severity

if TYPE_CHECKING:
    from auditor.catalogue import Catalogue
    from auditor.context import FileContext, PythonContext, Reference
    from auditor.fix.plan import FixPlan, Reported, Rewriter

UNCHANGED = "<unchanged>"  # Invalid(..., fixed=UNCHANGED): the rule must leave this code as it is


@dataclass(frozen=True)
class Example:
    """Source that a rule must (Invalid) or must not (Valid) report.

    `path` picks the reader (a requirements file, a pyproject.toml, ...); `line`, when given,
    is where an Invalid example's finding must start; `context`, when given, the context that
    finding must have ("main" for none: see rules/contexts.toml). `fixed` (as Fixit's
    expected_replacement) is the code after this rule's fixes, safe and unsafe, ran until stable
    (UNCHANGED: none applies); `fix_class` the applicability of the fix of the finding on `line`.
    """

    code: str
    path: str = "example.py"
    line: int | None = None
    fixed: str | None = None
    fix_class: str | None = None
    context: str | None = None


def notebook_example(*cells: tuple[str, str]) -> str:
    """A notebook's JSON from (cell type, source) pairs, for examples with `path="x.ipynb"` (their
    `line` is then the line in its cell)."""
    import json

    return json.dumps({"cells": [{"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True)}
                                 for kind, source in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                      indent=1)


class Valid(Example):
    pass


class Invalid(Example):
    pass


@dataclass(frozen=True)
class FixSpec:
    """A rewrite a rule offers, for `audit explain` and the fix column of `audit rules`."""

    fix_id: str  # the catalogue's number (5.3), e.g. "F01"
    applicability: str  # safe | unsafe | display
    summary: str  # before -> after, in one line
    min_torch: str | None = None
    gated: bool = False  # applied only in a CUDA-clean file (catalogue 5.5)
    # Written through the project's device owner (Rewriter.device_expr): only `audit --fix` knows it,
    # so a plain scan shows the finding without this fix and the fix run checks its files again.
    device_owner: bool = False


def shared_visit(func):
    """Mark a `visit_*` method that does work for a whole family of rules (it records shared
    state or reports for whichever rule owns what it finds): the walker calls it once per node,
    not once per rule that inherits it."""
    func.__lockin_shared__ = True
    return func


class Rule:
    """Base of every rule. Subclasses set the class attributes and override a hook."""

    code: ClassVar[str]  # stable, e.g. "LK101"; the family digit follows the category
    name: ClassVar[str]  # kebab-case, e.g. "hardcoded-cuda-device"
    category: ClassVar[Category]
    severity: ClassVar[Severity]
    message: ClassVar[str]  # str.format template, filled from report(..., **fields)
    # What the finding is about, as a noun phrase from the same fields: messages for a finding in
    # context (guarded, optional, ...) are built around it (rules/contexts.toml).
    subject: ClassVar[str] = "`{api}`"
    suggestion: ClassVar[str]  # the portable rewrite, same template rules
    min_torch: ClassVar[str | None] = None  # PyTorch version the suggestion needs

    # Docs, rendered by `audit explain` in the what / why / example / use-instead form.
    what: ClassVar[str]
    why: ClassVar[str]
    instead: ClassVar[str]

    VALID: ClassVar[list[Valid]] = []
    INVALID: ClassVar[list[Invalid]] = []

    # Which file kinds the rule looks at: python, requirements, pyproject, setup-cfg, setup-py, cuda.
    file_kinds: ClassVar[frozenset[str]] = frozenset({"python"})
    # Lower-case byte strings; a Python file containing none of them is never parsed for this rule.
    tokens: ClassVar[tuple[str, ...]] = ()
    # Codes of findings this rule's findings make redundant when they lie inside them.
    supersedes: ClassVar[tuple[str, ...]] = ()
    # Per-target effect, when the catalogue has no [effects] row for this rule (plugins): keys are
    # target names, roles or "others", as in the catalogue ({"others": "raises", "host": "works"}).
    targets: ClassVar[dict[str, str]] = {}
    # The fields this rule's reports carry for its templates, beyond the ones every finding has
    # (COMMON_FIELDS): `message` naming anything else stops the catalogue load (catalogue_check).
    fields: ClassVar[frozenset[str]] = frozenset()
    # Catalogue-style entries a plugin brings along.
    apis: ClassVar[list[ApiEntry]] = []
    # The rewrites `fix` can produce (documentation; the examples' `fixed` are the tests).
    FIXES: ClassVar[tuple[FixSpec, ...]] = ()

    def effects(self) -> dict[str, str]:
        """The effect on every target: the catalogue's row, else the rule's own `targets`. A gap
        stops the catalogue load for a built-in rule and warns for a plugin, which then counts as
        raising there."""
        table = load_catalogue().effects.get(self.name)
        if table is None:
            table = own_effects(type(self))
        return {target: table.get(target, RAISES) for target in registry.names()}

    # Hooks for Python files: `visit_<LibcstNodeType>(node, ctx)` methods, plus these.
    def begin(self, ctx: PythonContext) -> None:
        """Called before the walk of each Python file."""

    def on_reference(self, ref: Reference, ctx: PythonContext) -> None:
        """A use or import of a catalogue name that belongs to this rule."""
        ctx.report(self, ref.report_node, **entry_fields(ref), __ref=ref)

    def finish(self, ctx: PythonContext) -> None:
        """Called after the walk of each Python file."""

    # Fixes (auditor/fix/): called after the walk, for each of this rule's reports in a Python file.
    def fix(self, report: Reported, rewriter: Rewriter) -> FixPlan | list[FixPlan] | None:
        """The rewrite(s) of one report, best first (the first the project's torch allows is used)."""
        return None

    def fix_specs(self, catalogue: Catalogue) -> list[FixSpec]:
        return list(self.FIXES)

    def has_fixes(self) -> bool:
        return type(self).fix is not Rule.fix

    def uses_device_owner(self) -> bool:
        """Whether a fix of this rule goes through the project's device owner (auditor/fix/device_owner.py)."""
        return any(spec.device_owner for spec in self.FIXES)

    def has_gated_fixes(self, catalogue: Catalogue) -> bool:
        return any(spec.gated for spec in self.fix_specs(catalogue))

    # Hook for other file kinds (requirements, pyproject, CUDA sources, ...).
    def check_file(self, ctx: FileContext) -> None:
        """Called once per non-Python file of a kind in `file_kinds`."""


RAISES = Effect.RAISES.value
# Fields every finding's templates may use: the line, the targets its effects put in each class
# ("TPU, Trainium and MPS") and each target's facts from the registry ("ROCm: `HIP_VISIBLE_DEVICES`;
# ..."), so no message or suggestion lists targets by hand.
COMMON_FIELDS = frozenset({"snippet", "raising_targets", "degrading_targets", "working_targets",
                           "nvidia_and_working_targets", *registry.FACT_FIELDS})


@cache
def own_effects(rule: type[Rule]) -> dict[str, str]:
    """A rule's own `targets`, resolved per target (what it leaves out is missing)."""
    return registry.resolve(dict(rule.targets)) if rule.targets else {}


def entry_fields(ref: Reference) -> dict:
    """What a catalogue row gives a finding: the API, its replacement and torch version, and the
    library's own per-target effects and note when the row has them."""
    entry = ref.entry
    fields: dict = {"api": ref.qualified, "replacement": entry.replacement, "min_torch": entry.since,
                    "library": entry.name}
    if entry.effects:
        fields["__effects"] = dict(entry.effects)
    if entry.note:
        fields["note"] = entry.note
    return fields


class ApiRule(Rule):
    """A rule whose matches are listed in the catalogue (`[[api]]` rows naming this rule).

    It needs no code: the scanner resolves every dotted name through imports and aliases and
    hands this rule the references whose qualified name the catalogue gives to it."""

    tokens = ()  # derived from the catalogue rows, see registry.build_prefilter
    fields = frozenset({"api", "replacement", "min_torch", "library", "note"})  # entry_fields

    def fix(self, report: Reported, rewriter: Rewriter) -> FixPlan | list[FixPlan] | None:
        """The catalogue's swap for the reference (rules/fixes.toml), when its row fits this use."""
        return swap_fix(report, rewriter)

    def fix_specs(self, catalogue: Catalogue) -> list[FixSpec]:
        swaps = [FixSpec(s.fix_id, s.applicability, f"`{s.api[0]}` -> `{s.to}`", s.since, s.gated)
                 for s in swaps_of_rule(catalogue, self.name)]
        return [*self.FIXES, *swaps]
