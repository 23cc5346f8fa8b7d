"""The catalogue checks itself when it meets the rules (auditor/catalogue_check.py): each mistake
stops the load with one line naming the file and the row; a plugin's mistakes are warnings."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from auditor import targets
from auditor.catalogue import build_catalogue, load_catalogue, with_registry
from auditor.catalogue_check import check, enforce
from auditor.checks.base import ApiRule, Invalid, Valid
from auditor.checks.registry import all_rules, full_catalogue, registry_warnings
from auditor.model import Category, Severity
from auditor.targets import CatalogueError, RegistryError, build_registry

ROOT = Path(__file__).resolve().parent.parent


def raw() -> dict:
    return copy.deepcopy(load_catalogue().raw)


def lines(catalogue_raw: dict, rules=None) -> list[str]:
    return [p.line() for p in check(build_catalogue(catalogue_raw), list(rules or all_rules()))]


def test_the_shipped_catalogue_passes_every_check():
    assert check(full_catalogue(), all_rules()) == []
    assert registry_warnings() == ()


def test_an_api_row_naming_no_loaded_rule_stops_the_load():
    """The issue's example: a typo in a row's rule made its findings vanish while the run exited 0."""
    data = raw()
    row = next(r for r in data["cuda_api"]["api"] if r["name"] == "torch.cuda.is_available")
    row["rule"] = "cuda-availability-check-typo"
    found = lines(data)
    assert found == ["rules/cuda_api.toml [[api]] 'torch.cuda.is_available': rule 'cuda-availability-check-typo' "
                     "names no loaded rule (did you mean 'cuda-availability-check'?): its findings would vanish"]
    with pytest.raises(CatalogueError, match=r"^rules/cuda_api.toml \[\[api\]\] 'torch.cuda.is_available'"):
        enforce(build_catalogue(data), all_rules())


def test_a_rule_without_an_effect_for_some_target_stops_the_load():
    data = raw()
    del data["device"]["effects"]["default"]  # hardcoded-cuda-device's row is {}: nothing covers any target
    found = lines(data)
    assert f"rules/device.toml [effects] hardcoded-cuda-device: no effect for {', '.join(targets.names())} " \
           f"(add it to the row, or a `default`/'others' entry)" in found
    data = raw()
    data["kernel"]["effects"]["default"] = {"accepts-cuda-calls": "raises"}  # no "others": the rest is uncovered
    uncovered = [t for t in targets.names() if not targets.has_role(t, "accepts-cuda-calls")]
    assert any(line.startswith("rules/kernel.toml [effects] numba-cuda-kernel: no effect for " + ", ".join(uncovered))
               for line in lines(data))


def test_a_fix_row_whose_api_no_rule_reports_stops_the_load():
    data = raw()
    data["fixes"]["swap"].append({"api": ["acme.not_an_api"], "to": "torch.accelerator.x", "class": "safe"})
    assert lines(data) == ["rules/fixes.toml [[swap]] 'acme.not_an_api': no [[api]] row reports this API: "
                           "the fix names no loaded rule"]


@pytest.mark.parametrize(("table", "rule", "why"), [
    ("degrades", "cuda-rng-seed", "degrades on some target, and the verdict must say what is lost"),
    ("fails", "cuda-synchronize", "raises on some target, and a failing verdict must say what fails"),
])
def test_a_rule_that_fails_or_degrades_needs_its_verdict_phrase(table, rule, why):
    data = raw()
    del data["verdicts"][table][rule]
    assert lines(data) == [f"rules/verdicts.toml [{table}] {rule}: missing: the rule {why}"]


def test_a_library_row_that_makes_its_rule_raise_needs_a_phrase_too():
    data = raw()
    assert "cuda-rng-seed" not in data["verdicts"]["fails"]  # it only degrades on its own ...
    row = next(r for r in data["cuda_api"]["api"] if r["rule"] == "cuda-rng-seed")
    row["effects"] = {"others": "raises"}  # ... until a row says it raises
    assert lines(data) == ["rules/verdicts.toml [fails] cuda-rng-seed: missing: the rule raises on some target, and a "
                           "failing verdict must say what fails"]


def test_a_message_template_naming_an_unknown_field_stops_the_load():
    class Typo(ApiRule):
        code = "LK299"
        name = "cuda-api-other"
        category = Category.CUDA_API
        severity = Severity.MAJOR
        message = "`{apii}` is CUDA-only; it raises on {raising_targets}."
        suggestion = "{replacement}"

    rules = [Typo() if r.name == "cuda-api-other" else r for r in all_rules()]
    found = lines(raw(), rules)
    assert len(found) == 1 and found[0].startswith("rule LK299 cuda-api-other message: names unknown field(s) apii")
    data = raw()
    data["contexts"]["context"]["guarded"]["message"] = "{subject} {runs}: {outcom}."
    assert lines(data)[0].startswith("rules/contexts.toml [context.guarded] message: names unknown field(s) outcom")


@pytest.mark.parametrize(("effects", "why"), [
    ({"rocmm": "works"}, "'rocmm' is neither a target, a role nor 'others'"),
    ({"others": "crashes"}, "others = 'crashes' is not an effect"),
    ({"gpu": "works", "torch-accelerator": "raises"}, "gets different effects from its roles gpu and torch-accelerator"),
])
def test_effects_keys_and_values_are_checked(effects, why):
    data = raw()
    data["distributed"]["effects"]["nccl-backend"] = effects
    assert any(line.startswith("rules/distributed.toml [effects] nccl-backend: ") and why in line for line in lines(data))


def test_every_row_that_names_a_rule_is_checked():
    data = raw()
    data["packages"]["package"][0]["rule"] = "nvidia-runtime-pkg"
    data["env"]["env_var"][0]["rule"] = "nccl-env"
    data["contexts"]["guards"]["features"]["flash-attention-opt"] = ["flash"]
    data["scoring"]["scoring"]["unit"]["cuda-source-files"] = "folder"
    data["kernel"]["effects"]["triton-kernels"] = {}
    found = "\n".join(lines(data))
    for where in ("rules/packages.toml [[package]]", "rules/env.toml [[env_var]] ", "rules/contexts.toml [guards.features] "
                  "flash-attention-opt", "rules/scoring.toml [scoring.unit] cuda-source-files",
                  "rules/kernel.toml [effects] triton-kernels"):
        assert where in found, where


def test_per_target_tables_name_targets():
    data = raw()
    data["packages"]["package"][2]["targets"]["tpux"] = "SDPA"
    assert any("'tpux' is not a target" in line for line in lines(data))


def test_a_role_list_in_contexts_naming_nothing_stops_the_read():
    table = copy.deepcopy(load_catalogue().raw["contexts"])
    table["guards"]["words"]["cuda"] = ["nvidia", "accepts-cuda-call"]
    with pytest.raises(CatalogueError, match=r"rules/contexts.toml \[guards.words\] cuda: 'accepts-cuda-call' is "
                                             r"neither 'nvidia', a target nor a role"):
        with_registry("contexts", {k: v for k, v in table.items()})


@pytest.mark.parametrize(("change", "why"), [
    (lambda d: d["target"][0]["roles"].append("accepts-cuda"), "unknown role 'accepts-cuda'"),
    (lambda d: d["target"].append(dict(d["target"][0])), "target 'rocm' is declared twice"),
    (lambda d: d["overall"]["members"].append("tpuv5"), "member 'tpuv5' is not a declared target"),
    (lambda d: d["target"][0].update(colour="red"), "unknown key 'colour'"),
    (lambda d: d["target"][0].pop("display"), "`display` (how messages name it) is required"),
    (lambda d: d["target"][0].update(name="host"), "is a reserved word"),
])
def test_the_registry_checks_itself(change, why):
    import tomllib

    data = tomllib.loads((ROOT / "rules" / "targets.toml").read_text(encoding="utf-8"))
    change(data)
    with pytest.raises(RegistryError, match=why.replace("(", r"\(").replace(")", r"\)")):
        build_registry(data)


def test_every_registry_pattern_compiles():
    assert [error for t in targets.registry().targets for error in targets.pattern_errors(t)] == []


def test_a_broken_registry_pattern_is_a_catalogue_problem():
    bad = targets.Target("rocm", "ROCm", frozenset(), helpers=("^is_(rocm$",))
    assert targets.pattern_errors(bad) and "`helpers` '^is_(rocm$' is not a regular expression" in targets.pattern_errors(bad)[0]


class _PluginRule(ApiRule):
    code = "ZZ901"
    name = "zz-cuda-pool"
    category = Category.CUDA_API
    severity = Severity.MAJOR
    message = "`{api}` is CUDA-only."
    suggestion = "Use the pool."
    what = why = instead = "x"
    targets = {"rocm": "raises", "cpu": "degrades"}  # names two targets and covers nothing else
    VALID = [Valid("x = 1\n")]
    INVALID = [Invalid("import zz\nzz.pool()\n")]


_PluginRule.__module__ = "zz_plugin.rules"


def test_a_plugins_problems_are_warnings():
    rules = [*all_rules(), _PluginRule()]
    warnings = enforce(full_catalogue(), rules)  # does not raise
    missing = [t for t in targets.names() if t not in ("rocm", "cpu")]
    assert warnings == [f"rule ZZ901 (zz_plugin.rules) [effects] zz-cuda-pool: no effect for {', '.join(missing)} "
                        f"(add it to the row, or a `default`/'others' entry): it counts as raising there (a plugin's rule)"]
    assert _PluginRule().effects() == {t: "degrades" if t == "cpu" else "raises" for t in targets.names()}


# -- end to end: a copy of the source tree with one catalogue mistake -------------------------------------
def source_copy(tmp_path: Path) -> Path:
    """auditor/ and rules/ copied, so a test can edit the catalogue and run the CLI on the copy."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "auditor", src / "auditor", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "rules", src / "rules")
    return src


def run_copy(src: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src), "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "auditor", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow  # two interpreter start-ups
def test_the_typo_from_the_issue_stops_the_run_with_one_line(tmp_path):
    src = source_copy(tmp_path)
    path = src / "rules" / "cuda_api.toml"
    text = path.read_text(encoding="utf-8")
    typo = text.replace("rule = 'cuda-availability-check'\n", 'rule = "cuda-availability-check-typo"\n', 1)
    assert typo != text
    path.write_text(typo, encoding="utf-8")
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "train.py").write_text("import torch\nif torch.cuda.is_available():\n    pass\n",
                                                encoding="utf-8")
    for args in (["repo", "--no-cache", "--isolated"], ["rules"]):
        proc = run_copy(src, *args, cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
        assert proc.stderr.startswith("audit: error: rules/cuda_api.toml [[api]] 'torch.cuda.is_available': rule "
                                      "'cuda-availability-check-typo' names no loaded rule")


def test_the_context_fields_the_check_allows_are_the_ones_apply_fills(monkeypatch):
    """catalogue_check.CONTEXT_FIELDS must match what auditor/analysis/apply.py puts in the values of
    each context's template, or a context template could name a field that renders nothing."""
    import auditor.analysis.apply as apply_module
    from auditor.analysis.guards import on
    from auditor.analysis.placement import Where
    from auditor.analysis.project import BackendModule
    from auditor.catalogue_check import CONTEXT_FIELDS
    from auditor.checks.registry import find_rule

    seen: dict[str, set[str]] = {}
    real = apply_module.render

    def recording(template, fields):
        seen.setdefault(template, set()).update(fields)
        return real(template, fields)

    monkeypatch.setattr(apply_module, "render", recording)
    rule = find_rule("cuda-synchronize")
    cuda = targets.expand(["nvidia", "accepts-cuda-calls"])
    wheres = {"guarded": Where(condition=on(cuda, certain=True), guard="torch.cuda.is_available()", guard_line=3),
              "optional": Where(optional="try/except ImportError", optional_line=2),
              "backend-module": Where(backend=BackendModule("platforms/cuda.py", frozenset({"cpu"}))),
              "own-package": Where(own="pkg"), "redundant": Where(seeder=("torch.manual_seed", "0", 2)),
              "display": Where(display="a message"), "test": Where(test=True)}
    contexts = load_catalogue().table("contexts")["context"]
    for name, where in wheres.items():
        seen.clear()
        base = rule.effects()
        apply_module.apply(rule, {"api": "torch.cuda.synchronize"}, where, base, "m", "s", load_catalogue())
        filled = set().union(*seen.values()) if seen else set()
        assert CONTEXT_FIELDS[name] <= filled, (name, CONTEXT_FIELDS[name] - filled)
        assert contexts[name]["message"] in seen or name == "test" and seen, name


def _literal_where_possible(text: str) -> str:
    """`text` with every basic string ("...") that needs no escape written as a literal one ('...')."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "#":
            j = text.find("\n", i)
            j = len(text) if j < 0 else j
        elif text.startswith(('"""', "'''"), i):
            j = text.index(text[i:i + 3], i + 3) + 3
        elif c == "'":
            j = text.index("'", i + 1) + 1
        elif c == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            body = text[i + 1:j]
            out.append("'" + body + "'" if "\\" not in body and "'" not in body else text[i:j + 1])
            i = j + 1
            continue
        else:
            j = i + 1
        out.append(text[i:j])
        i = j
    return "".join(out)


def test_catalogue_strings_are_literal_where_they_can_be():
    """tomllib parses a literal string ('...') with one search and a basic one ("...") character by
    character: the whole catalogue parses about a quarter faster (bench/startup.py). A string with an
    escape or a single quote stays a basic string."""
    for path in sorted((ROOT / "rules").glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        assert _literal_where_possible(text) == text, f"{path.name}: write strings without escapes as '...'"
