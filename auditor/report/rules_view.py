"""`audit rules` and `audit explain`: the rule table and one rule's docs."""

from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table

from auditor import targets
from auditor.analysis.apply import apply
from auditor.analysis.guards import on
from auditor.analysis.placement import Where
from auditor.analysis.project import BackendModule
from auditor.catalogue import load_catalogue
from auditor.checks.base import Rule
from auditor.checks.registry import all_rules, full_catalogue


def rule_summary(rule: Rule) -> dict:
    return {
        "code": rule.code, "name": rule.name, "category": rule.category.value,
        "severity": rule.severity.value, "summary": rule.what.strip().splitlines()[0] if rule.what else "",
        "targets": rule.effects(), "min_torch": rule.min_torch, "file_kinds": sorted(rule.file_kinds),
        "fix": fix_column(rule),
    }


def _specs(rule: Rule) -> list:
    return rule.fix_specs(full_catalogue())


def fix_column(rule: Rule) -> str:
    """The fix classes a rule offers, e.g. "safe", "safe, unsafe", "display"; "" when none."""
    classes = {spec.applicability for spec in _specs(rule)}
    return ", ".join(c for c in ("safe", "unsafe", "display") if c in classes)


def print_rules(fmt: str) -> None:
    rules = all_rules()
    if fmt == "json":
        sys.stdout.write(json.dumps([rule_summary(r) for r in rules], indent=2, sort_keys=True) + "\n")
        return
    table = Table(title=f"{len(rules)} rules", title_justify="left")
    every = targets.names()
    for column in ("code", "name", "category", "severity", *every, "fix"):
        table.add_column(column)
    for rule in rules:
        effects = rule.effects()
        table.add_row(rule.code, rule.name, rule.category.value, rule.severity.value,
                      *(_MARK[effects[t]] for t in every), fix_column(rule))
    console = Console(soft_wrap=True)
    if not console.is_terminal:  # piped: no terminal width to respect, never truncate names
        console = Console(soft_wrap=True, width=200)
    console.print(table)


def explanation_markdown(rule: Rule) -> str:
    effects = rule.effects()
    every = targets.names()
    lines = [
        f"# {rule.code} {rule.name}",
        "",
        f"Category: `{rule.category.value}` · severity: `{rule.severity.value}`"
        + (f" · suggested rewrite needs torch >= {rule.min_torch}" if rule.min_torch else ""),
        "",
        "## What it does", "", rule.what.strip(), "",
        "## Why it matters", "", rule.why.strip(), "",
        "| " + " | ".join(every) + " |", "|" + "---|" * len(every),
        "| " + " | ".join(effects[t] for t in every) + " |", "",
    ]
    if rule.INVALID:
        example = rule.INVALID[0]
        lang = "python" if example.path.endswith(".py") else ""
        lines += ["## Example", "", f"`{example.path}`:", "", f"```{lang}", example.code.strip("\n"), "```", ""]
    lines += ["## Use instead", "", rule.instead.strip(), ""]
    lines += context_section(rule)
    lines += _fix_section(rule)
    return "\n".join(lines)


def _fix_section(rule: Rule) -> list[str]:
    """Each rewrite with its class: safe ones `audit --fix` applies, unsafe ones need --unsafe-fixes,
    display ones are only shown."""
    specs = _specs(rule)
    if not specs:
        return ["## Fix", "", "None: the rewrite needs a decision a tool cannot make here; see above.", ""]
    lines = ["## Fix", ""]
    for spec in specs:
        needs = f", torch >= {spec.min_torch}" if spec.min_torch else ""
        gated = ", only in a CUDA-clean file" if spec.gated else ""
        lines.append(f"- {spec.fix_id} ({spec.applicability}{needs}{gated}): {spec.summary}")
    lines += ["", "safe: `audit --fix` applies it (identical behaviour everywhere); unsafe: also needs "
              "`--unsafe-fixes` (behaviour changes somewhere); display: shown, never applied. A fix needing a "
              "newer torch than the project's floor stays a suggestion; fixes marked \"only in a CUDA-clean "
              "file\" make other accelerators selectable and wait until no CUDA-only call would remain in the "
              "file (catalogue 5.5).", ""]
    return lines


def context_section(rule: Rule) -> list[str]:
    """How where a finding stands changes this rule's effects and verdict (rules/contexts.toml)."""
    catalogue = load_catalogue()
    table = catalogue.table("contexts")
    cuda = targets.expand([targets.SOURCE_PLATFORM, "accepts-cuda-calls"])  # where a CUDA check holds
    branched = targets.with_role("chosen-by-torch-accelerator")  # the usual elif branches
    gpus = [t for t in branched if targets.has_role(t, "gpu")]
    sibling = (*gpus[-1:], *targets.with_role("host"))  # a dispatch layer beside platforms/cuda.py
    examples: list[tuple[str, Where]] = [
        ("guarded: `if torch.cuda.is_available():`", Where(condition=on(cuda, certain=True))),
        ("guarded: `if x.is_cuda:` (the other path serves other devices)", Where(condition=on(cuda, certain=False))),
        (f"guarded, with an `elif` branch for {targets.displays(branched)}", Where(condition=on(cuda, certain=True),
                                                                            covered=set(branched))),
        ("optional: try/except ImportError with a fallback", Where(optional="try/except")),
        (f"backend-module: platforms/cuda.py beside {' and '.join(f'{t}.py' for t in sibling)}",
         Where(backend=BackendModule("platforms/cuda.py", frozenset(sibling)))),
        ("own-package: the project's own GPU module", Where(own="pkg")),
        ("display: inside a `print(...)` message", Where(display="a message")),
        ("test: tests/, test_*.py, conftest.py, benchmarks", Where(test=True)),
    ]
    if rule.name in table.get("redundant", {}).get("rules", ()):
        examples.append(("redundant: after `torch.manual_seed(s)` with the same seed",
                         Where(seeder=("torch.manual_seed", "s", None))))
    base = rule.effects()
    every = targets.names()
    lines = ["## In context", "",
             "Every tie is reported, but where it stands changes what it does on each target, its severity "
             "and its weight in the score (rules/contexts.toml, rules/scoring.toml). A target where it raises "
             "fails the verdict (test-only code never does); one where it degrades runs degraded.", "",
             "| where | severity | " + " | ".join(every) + " |", "|---|---|" + "---|" * len(every),
             f"| main path | {rule.severity.value} | " + " | ".join(_MARK[base[t]] for t in every) + " |"]
    for label, where in examples:
        applied = apply(rule, {}, where, base, "", "", catalogue)
        lines.append(f"| {label} | {applied.severity} | " + " | ".join(_MARK[applied.effects[t]] for t in every) + " |")
    lines += ["", *(f"- **{name}**: {table['context'][name]['summary']}" for name in table.get("order", ())
                    if name in table.get("context", {})), ""]
    return lines


_MARK = {"works": "ok", "degrades": "degrades", "raises": "raises"}


def explanation_record(rule: Rule) -> dict:
    """`audit explain --format json`: the rule's row of `audit rules --format json` and its docs."""
    return {**rule_summary(rule), "what": rule.what.strip(), "why": rule.why.strip(),
            "instead": rule.instead.strip(), "markdown": explanation_markdown(rule),
            "fixes": [{"id": spec.fix_id, "applicability": spec.applicability, "min_torch": spec.min_torch,
                       "summary": spec.summary} for spec in _specs(rule)]}


def print_explanations(rules: list[Rule], fmt: str, single: bool = True) -> None:
    """One rule's docs (`single`: a JSON object), or several in order (a JSON list; markdown
    documents one after the other)."""
    if fmt == "json":
        records = [explanation_record(rule) for rule in rules]
        sys.stdout.write(json.dumps(records[0] if single else records, indent=2, sort_keys=True) + "\n")
        return
    text = "\n".join(explanation_markdown(rule) for rule in rules)
    console = Console(soft_wrap=True)
    if console.is_terminal:
        console.print(Markdown(text))
    else:
        sys.stdout.write(text)


def rules_markdown_table() -> str:
    """The README's rule table (kept in sync by tests/test_readme.py)."""
    every = targets.names()
    rows = ["| code | name | category | severity | " + " | ".join(every) + " | fix |",
            "|---|---|---|---|" + "---|" * len(every) + "---|"]
    for rule in all_rules():
        if not rule.__module__.startswith("auditor."):
            continue  # plugins are not part of the README
        effects = rule.effects()
        rows.append(f"| {rule.code} | {rule.name} | {rule.category.value} | {rule.severity.value} | "
                    + " | ".join(_MARK[effects[t]] for t in every) + f" | {fix_column(rule)} |")
    return "\n".join(rows)
