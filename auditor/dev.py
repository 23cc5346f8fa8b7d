"""Contributor tools: `python -m auditor.dev new-rule NAME --api QUALIFIED.NAME` scaffolds a rule.

It writes the rule module (auditor/checks/<name>.py: identity, message, docs, VALID and INVALID
examples) and its catalogue rows: an [effects] row in the family's file (empty: the family default
applies until you add exceptions), the [[api]] row the rule reports, and its verdict phrases in
rules/verdicts.toml. The result loads, passes the catalogue check and its examples run; what it
says (messages, docs, examples, effects) is a first draft to make true for the API at hand.

    python -m auditor.dev new-rule cuda-foo-control --api torch.cuda.foo --category cuda-api \\
        --severity major --replacement "torch.accelerator.foo()" --since 2.9

Only the source checkout is written to (or --root DIR, a copy of it); nothing is ever run."""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

from auditor import targets

# category -> (catalogue file, family base class: module, name, code digit)
FAMILIES = {
    "device": ("device", "auditor.checks.base", "ApiRule", "1"),
    "cuda-api": ("cuda_api", "auditor.checks._cuda_api", "CudaApiRule", "2"),
    "distributed": ("distributed", "auditor.checks.base", "ApiRule", "3"),
    "kernel": ("kernel", "auditor.checks._kernel", "KernelApiRule", "4"),
    "env": ("env", "auditor.checks.base", "ApiRule", "6"),
}
SEVERITIES = ("blocker", "major", "minor", "info")
_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)+\Z")
_API = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+\Z")


class ScaffoldError(ValueError):
    """What the scaffold cannot do as asked: exit 2 with this line."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m auditor.dev", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    new = commands.add_parser("new-rule", help="scaffold a catalogue-driven rule: module, examples, catalogue rows")
    new.add_argument("name", help="kebab-case rule name, e.g. cuda-foo-control")
    new.add_argument("--api", required=True, help="the qualified name the rule reports, e.g. torch.cuda.foo")
    new.add_argument("--category", default="cuda-api", choices=sorted(FAMILIES))
    new.add_argument("--severity", default="major", choices=SEVERITIES)
    new.add_argument("--replacement", default="the device-neutral equivalent (torch.accelerator or the device module)",
                     help="the portable rewrite shown as the suggestion")
    new.add_argument("--since", default=None, help="the first torch version with the replacement")
    new.add_argument("--root", type=Path, default=None, help="the checkout to write into (default: this one)")
    args = parser.parse_args(argv)
    try:
        written = new_rule(args.name, args.api, args.category, args.severity, args.replacement, args.since,
                           args.root or Path(__file__).resolve().parent.parent)
    except ScaffoldError as exc:
        print(f"auditor.dev: error: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    print("next: make the message, docs and examples true for this API, add effect exceptions to its [effects] "
          "row, then run `python -m pytest tests/test_rule_examples.py -k " + args.name + "`")
    return 0


def new_rule(name: str, api: str, category: str, severity: str, replacement: str, since: str | None,
             root: Path) -> list[Path]:
    """Write the rule module and its catalogue rows under `root`; returns the files written."""
    if not _NAME.match(name):
        raise ScaffoldError(f"rule name {name!r} must be kebab-case with at least two words (e.g. cuda-foo-control)")
    if not _API.match(api):
        raise ScaffoldError(f"--api {api!r} must be a qualified name (e.g. torch.cuda.foo)")
    stem, base_module, base_class, digit = FAMILIES[category]
    rules_dir, checks_dir = root / "rules", root / "auditor" / "checks"
    if not (rules_dir / "targets.toml").is_file() or not checks_dir.is_dir():
        raise ScaffoldError(f"{root} is not a source checkout (no rules/ and auditor/checks/): run from one or "
                            f"pass --root")
    module = checks_dir / f"{name.replace('-', '_')}.py"
    if module.exists():
        raise ScaffoldError(f"{module} exists: choose another name")
    catalogue = {path.stem: tomllib.loads(path.read_text(encoding="utf-8")) for path in rules_dir.glob("*.toml")}
    if any(name in table.get("effects", {}) for table in catalogue.values()):
        raise ScaffoldError(f"rule {name!r} already has an [effects] row")
    if any(row.get("name") == api for table in catalogue.values() for row in table.get("api", [])):
        raise ScaffoldError(f"{api} already has an [[api]] row")
    code = _free_code(checks_dir, digit)
    effects = _effects(catalogue[stem], {})
    module.write_text(_module(name, code, api, category, severity, base_module, base_class, effects), encoding="utf-8")
    family = rules_dir / f"{stem}.toml"
    _insert_effects_row(family, name)
    with family.open("a", encoding="utf-8") as handle:
        handle.write(f"\n[[api]]\nname = {_toml(api)}\nrule = {_toml(name)}\nreplacement = {_toml(replacement)}\n"
                     + (f"since = {_toml(since)}\n" if since else ""))
    verdicts = rules_dir / "verdicts.toml"
    _insert_phrases(verdicts, name, api, effects)
    return [module, family, verdicts]


def _free_code(checks_dir: Path, digit: str) -> str:
    """The lowest LK<digit>NN no built-in rule uses (below the family's catch-alls, NN < 90)."""
    used = set(re.findall(rf'code = "LK{digit}(\d\d)"', "".join(p.read_text(encoding="utf-8")
                                                                 for p in checks_dir.glob("*.py"))))
    for number in range(1, 90):
        if f"{number:02d}" not in used:
            return f"LK{digit}{number:02d}"
    raise ScaffoldError(f"no free code left in the LK{digit}xx family")


def _effects(family: dict, row: dict) -> dict[str, str]:
    default = family.get("effects", {}).get("default")
    resolved = targets.resolve((row, default) if isinstance(default, dict) else (row,))
    missing = [t for t in targets.names() if t not in resolved]
    if missing:
        raise ScaffoldError(f"the family has no default effect for {', '.join(missing)}: add one to its [effects]")
    return resolved


def _message(effects: dict[str, str]) -> str:
    """A template that names only the effect classes the rule has (catalogue_check, the neutral test)."""
    values = set(effects.values())
    parts = []
    if "raises" in values:
        parts.append("raises on {raising_targets}")
    if "degrades" in values:
        parts.append("silently does less on {degrading_targets}")
    return "`{api}` is CUDA-only: it " + " and ".join(parts or ["works everywhere"]) + "."


def _module(name: str, code: str, api: str, category: str, severity: str, base_module: str, base_class: str,
            effects: dict[str, str]) -> str:
    class_name = "".join(part.capitalize() for part in name.split("-"))
    module, _, last = api.rpartition(".")
    if base_module == "auditor.checks.base":
        imports = f"from auditor.checks.base import {base_class}, Invalid, Valid"
    else:
        imports = f"from {base_module} import {base_class}\nfrom auditor.checks.base import Invalid, Valid"
    return f'''from __future__ import annotations

{imports}
from auditor.model import Category, Severity


class {class_name}({base_class}):
    """Scaffolded by `python -m auditor.dev new-rule`: make the texts and examples true for `{api}`."""

    code = "{code}"
    name = "{name}"
    category = Category.{category.upper().replace("-", "_")}
    severity = Severity.{severity.upper()}
    message = {_python(_message(effects))}
    suggestion = "{{replacement}}"
    what = "Finds `{api}`."
    why = ("`{api}` exists only in CUDA builds of PyTorch: on targets without CUDA the call raises or "
           "silently does nothing.")
    instead = "The suggestion's rewrite, guarded by `if torch.accelerator.is_available():` where it needs a device."

    VALID = [
        Valid("import torch\\ndevice = torch.accelerator.current_accelerator()\\n"),
        Valid('"""Calls {api}() in a docstring."""\\n# {api}()\\nprint("{api}()")\\n'),
    ]
    INVALID = [
        Invalid("import {api.split(".")[0]}\\n{api}()\\n", line=2),
        Invalid("from {module} import {last} as alias\\nalias()\\n", line=2),
    ]
'''


def _python(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _toml(text: str) -> str:
    """A TOML string: literal ('...') where it needs no escape, as the catalogue writes them (tomllib
    parses those faster), else a basic string."""
    if "'" not in text and "\\" not in text and "\n" not in text:
        return "'" + text + "'"
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _insert_effects_row(path: Path, name: str) -> None:
    """`name = {}` after the last row of the file's [effects] table: the family default applies."""
    lines = path.read_text(encoding="utf-8").split("\n")
    try:
        start = lines.index("[effects]")
    except ValueError:
        raise ScaffoldError(f"{path} has no [effects] table") from None
    end = start + 1
    while end < len(lines) and (lines[end].startswith("#") or re.match(r"^[a-z0-9-]+ = \{", lines[end])):
        end += 1
    lines.insert(end, f"{name} = {{}}")
    path.write_text("\n".join(lines), encoding="utf-8")


def _insert_phrases(path: Path, name: str, api: str, effects: dict[str, str]) -> None:
    """The verdict phrases the catalogue check asks for: what fails, what is lost."""
    lines = path.read_text(encoding="utf-8").split("\n")
    wanted = []
    if "raises" in effects.values():
        wanted.append(("[fails]", f"`{api}` calls"))
    if "degrades" in effects.values():
        wanted.append(("[degrades]", f"`{api}` does less"))
    for header, phrase in wanted:
        lines.insert(lines.index(header) + 1, f"{name} = {_toml(phrase)}")
    path.write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
