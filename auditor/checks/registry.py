"""Finding the rules: built-in modules under auditor/checks, plus third-party plugins that
register under the `lockin_auditor.rules` entry-point group (a Rule subclass, or a module whose
Rule subclasses are all taken).

Plugins come only from installed distributions: a `*.dist-info` in the working directory (which
may be the scanned, untrusted checkout) or any relative sys.path entry is never read, so
scanning a repository never runs code it ships."""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import sys
from functools import lru_cache
from types import ModuleType
from typing import TYPE_CHECKING

import auditor.checks as builtin_checks
from auditor.catalogue import Catalogue, build_catalogue, load_catalogue
from auditor.catalogue_check import PLUGINS, enforce
from auditor.checks.base import ApiRule, Rule
from auditor.read.prefilter import Prefilter

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

ENTRY_POINT_GROUP = "lockin_auditor.rules"
_ABSTRACT = {Rule, ApiRule}


class RuleSelectionError(ValueError):
    """An unknown rule code, prefix or name in --select / --ignore."""


def _rules_in(module: ModuleType) -> list[type[Rule]]:
    # vars() sorted by name, as inspect.getmembers gives them, at a quarter of its cost (75 modules
    # on every cold start-up)
    return [
        obj for _, obj in sorted(vars(module).items())
        if isinstance(obj, type) and issubclass(obj, Rule) and obj not in _ABSTRACT
        and obj.__module__ == module.__name__ and getattr(obj, "code", None)
    ]


def _builtin_rule_classes() -> list[type[Rule]]:
    found: list[type[Rule]] = []
    for info in pkgutil.walk_packages(builtin_checks.__path__, builtin_checks.__name__ + "."):
        if info.name.endswith(".base"):
            continue
        found.extend(_rules_in(importlib.import_module(info.name)))
    return found


def plugin_search_path() -> list[str]:
    """sys.path without what the working directory controls: "" and relative entries resolve
    against it, and the directory itself may be the checkout being scanned."""
    cwd = os.path.realpath(os.getcwd())
    return [entry for entry in sys.path if entry and os.path.isabs(entry) and os.path.realpath(entry) != cwd]


def _plugin_entry_points() -> list[EntryPoint]:
    """Entry points of the plugin group, from distributions on plugin_search_path() (the first of
    a name wins, as importlib.metadata.entry_points() decides)."""
    from importlib.metadata import distributions

    points: dict[str, EntryPoint] = {}
    for dist in distributions(path=plugin_search_path()):
        text = dist.read_text("entry_points.txt")
        if not text or ENTRY_POINT_GROUP not in text:
            continue  # parsing every distribution's entry points costs each cold start-up ~2 ms
        for point in dist.entry_points.select(group=ENTRY_POINT_GROUP):
            points.setdefault(point.name, point)
    return list(points.values())


def _plugin_rule_classes() -> tuple[list[type[Rule]], list[str]]:
    """Rules from installed plugins, and a warning per plugin that failed to load."""
    found: list[type[Rule]] = []
    problems: list[str] = []
    for point in sorted(_plugin_entry_points(), key=lambda p: p.name):
        try:
            obj = point.load()
        except Exception as exc:  # a broken plugin must not break the run
            problems.append(f"plugin {point.name!r} failed to load: {exc}")
            continue
        if inspect.isclass(obj) and issubclass(obj, Rule):
            found.append(obj)
        elif inspect.ismodule(obj):
            found.extend(_rules_in(obj))
        else:
            problems.append(f"plugin {point.name!r} is neither a Rule subclass nor a module")
    return found, problems


@lru_cache(maxsize=1)
def _all() -> tuple[tuple[Rule, ...], tuple[str, ...]]:
    plugins, problems = _plugin_rule_classes()
    rules: dict[str, Rule] = {}
    warnings = list(problems)
    for cls in [*_builtin_rule_classes(), *plugins]:
        if cls.code in rules:
            warnings.append(f"rule code {cls.code} is declared twice ({cls.__module__}); the first one is kept")
            continue
        rules[cls.code] = cls()
    ordered = tuple(sorted(rules.values(), key=lambda r: r.code))
    return ordered, tuple(warnings)


def all_rules() -> tuple[Rule, ...]:
    return _all()[0]


def registry_warnings() -> tuple[str, ...]:
    """Plugins that failed to load, duplicate codes, and what the catalogue check found in plugins."""
    return _all()[1] + _checked()[1]


def rule_by_code(code: str) -> Rule | None:
    return _by_code().get(code)


@lru_cache(maxsize=1)
def _by_code() -> dict[str, Rule]:
    return {rule.code: rule for rule in all_rules()}


def find_rule(code_or_name: str) -> Rule | None:
    key = code_or_name.strip()
    for rule in all_rules():
        if rule.code.lower() == key.lower() or rule.name == key.lower():
            return rule
    return None


def close_rules(code_or_name: str, limit: int = 3) -> list[str]:
    """`CODE name` of the rules whose code or name is closest to a mistyped one (for "did you mean")."""
    import difflib

    key = code_or_name.strip().lower()
    rules = all_rules()
    by_key = {**{r.code.lower(): r for r in rules}, **{r.name: r for r in rules}}
    out: list[str] = []
    for match in difflib.get_close_matches(key, list(by_key), n=limit * 2, cutoff=0.6):
        label = f"{by_key[match].code} {by_key[match].name}"
        if label not in out:
            out.append(label)
    return out[:limit]


def full_catalogue(checked: tuple[str, ...] | None = None) -> Catalogue:
    """The built-in catalogue plus the API rows that plugin rules bring, checked against the rules
    (auditor/catalogue_check.py): a broken built-in catalogue raises CatalogueError here. `checked`:
    the check's warnings from an earlier run whose cache key covers the same catalogue, code and
    plugins, which then skips the check (a run with a cache pays for it once)."""
    if checked is not None and not _TRUSTED:
        _TRUSTED.append(tuple(checked))
    return _checked()[0]


def check_warnings() -> tuple[str, ...]:
    """What the catalogue check said about plugins (for a cache to keep)."""
    return _checked()[1]


_TRUSTED: list[tuple[str, ...]] = []  # the check's warnings, when a cache vouches for it


@lru_cache(maxsize=1)
def _checked() -> tuple[Catalogue, tuple[str, ...]]:
    catalogue = _with_plugins()
    if _TRUSTED:
        return catalogue, _TRUSTED[0]
    return catalogue, tuple(enforce(catalogue, all_rules()))


def _with_plugins() -> Catalogue:
    base = load_catalogue()
    extra = [rule for rule in all_rules() if rule.apis]
    if not extra:
        return base
    raw = dict(base.raw)
    raw[PLUGINS] = {
        "api": [
            {"name": e.name + (".*" if e.prefix else ""), "rule": e.rule, "replacement": e.replacement,
             "since": e.since, "scope": e.scope}
            for rule in extra for e in rule.apis
        ],
        "effects": {rule.name: rule.targets for rule in extra if rule.targets},
    }
    return build_catalogue({k: {kk: vv for kk, vv in v.items() if vv is not None} for k, v in raw.items()})


def _matches(rule: Rule, selector: str) -> bool:
    s = selector.strip()
    return s.upper() == "ALL" or rule.code.upper().startswith(s.upper()) or rule.name == s.lower()


def select_rules(select: list[str] | None = None, ignore: list[str] | None = None) -> list[Rule]:
    """Rules chosen by code, code prefix (LK2), kebab name or ALL; unknown selectors raise."""
    rules = list(all_rules())
    for selector in [*(select or []), *(ignore or [])]:
        if not any(_matches(rule, selector) for rule in rules):
            raise RuleSelectionError(f"unknown rule or prefix {selector!r}; see `audit rules`")
    if select:
        rules = [r for r in rules if any(_matches(r, s) for s in select)]
    if ignore:
        rules = [r for r in rules if not any(_matches(r, s) for s in ignore)]
    return rules


_PREFERRED_TOKENS = ("cudnn", "cuda", "nccl", "nvtx", "nvml", "triton", "cupy", "nvidia")


def api_token(qualified: str) -> str:
    """A lower-case substring every file that references `qualified` must contain.

    Every component of a qualified name is spelled somewhere in a file that reaches it
    (in the import or in the dotted use), so any component is a safe token; pick a selective one."""
    parts = [p.lower() for p in qualified.split(".")]
    for token in _PREFERRED_TOKENS:
        for part in parts:
            if token in part:
                return part if part == token else token
    return max(parts, key=len)




def build_prefilter(rules: list[Rule], catalogue: Catalogue) -> Prefilter:
    """The prefilter for these rules: their tokens, plus each catalogue row they own."""
    names = {r.name for r in rules}
    rows = [entry for entry in [*catalogue.apis.values(), *catalogue.api_prefixes.values()] if entry.rule in names]
    # A name start (torch._C._cuda_*) is spelled in part: an identifier starting with it ("_cuda_getdevice",
    # "cudnn_convolution") lets a file through.
    starts = [start for items in catalogue.api_stems.values() for start, entry in items if entry.rule in names]
    # A wrapped library is recognised inside other names (vllm.utils.flashinfer,
    # torch.ops.vllm.flashinfer_mm): an identifier starting with its name lets a file through.
    wrapped = [lib for lib, entry in ((lib, catalogue.api_prefixes.get(lib)) for lib in catalogue.wrapped)
               if entry is not None and entry.rule in names]
    tokens = [t for rule in rules for t in rule.tokens]
    # A GPU library's imports of its own GPU modules (`from torchao.kernel import ...`) are inventory
    # lines (gpu-kernel-library, rules/contexts.toml [own_package]) the project's name cannot anchor.
    own = catalogue.table("contexts").get("own_package", {}).get("gpu_words", ()) if "gpu-kernel-library" in names else ()
    return Prefilter(tokens, [(api_token(e.name), e.name) for e in rows], word_starts=[*wrapped, *starts], import_words=own)
