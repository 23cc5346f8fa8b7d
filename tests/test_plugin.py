"""Third-party rules: a real package (fixtures/plugin) installed with pip into an isolated
folder registers a rule through the `lockin_auditor.rules` entry-point group; `audit` finds
it, runs it and lists it. A plugin that fails to load is a warning, never a crash."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import auditor.checks.registry as registry
from auditor import targets

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "plugin"
NETWORK_TROUBLE = ("Could not find a version", "NewConnectionError", "Temporary failure in name resolution",
                   "Network is unreachable", "No matching distribution", "ConnectTimeout", "ProxyError")


def _builds_offline() -> bool:
    """setuptools can build the wheel without fetching anything (it needs `wheel` before 70.1)."""
    try:
        version = importlib.metadata.version("setuptools")
    except importlib.metadata.PackageNotFoundError:
        return False
    major, minor = (int(part) for part in version.split(".")[:2])
    return (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory) -> Path:
    """pip-install the fixture plugin into its own folder (never into the test environment)."""
    source = tmp_path_factory.mktemp("plugin-src") / "plugin"
    shutil.copytree(FIXTURE, source)  # building writes build/ and *.egg-info next to the sources
    target = tmp_path_factory.mktemp("plugin-site")
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-input", "--quiet",
               "--disable-pip-version-check", "--target", str(target), str(source)]
    if _builds_offline():
        command.insert(4, "--no-build-isolation")
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        if any(marker in proc.stderr for marker in NETWORK_TROUBLE):
            pytest.skip(f"cannot fetch the plugin's build backend: {proc.stderr.strip().splitlines()[-1]}")
        pytest.fail(f"pip install of the fixture plugin failed:\n{proc.stderr}")
    assert (target / "acme_lockin_rules" / "rules.py").is_file()
    return target


def run_with_plugin(site: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # pip install plus a few interpreter start-ups
def test_plugin_rule_reports_findings(plugin_site, tmp_path):
    (tmp_path / "train.py").write_text(
        "import acme_gpu\n"
        "acme_gpu.pin_to_nvidia(0)\n"
        "# acme_gpu.pin_to_nvidia(1) in a comment\n"
        "import acme_gpu as ag\n"
        "ag.nvml.query()\n"
        "def run(acme_gpu):\n"
        "    acme_gpu.pin_to_nvidia(2)\n"
        "model = Net().cuda()\n", encoding="utf-8")
    proc = run_with_plugin(plugin_site, "-m", "auditor", str(tmp_path), "--format", "json", "--no-cache",
                           "--select", "XK901,LK102")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "warning" not in proc.stderr
    report = json.loads(proc.stdout)
    got = [(f["rule"], f["line"]) for f in report["findings"]]
    assert got == [("XK901", 2), ("XK901", 5), ("LK102", 8)]
    plugin_finding = report["findings"][0]
    assert plugin_finding["name"] == "acme-pinned-gpu" and plugin_finding["category"] == "cuda-api"
    assert plugin_finding["message"] == "`acme_gpu.pin_to_nvidia` pins work to an NVIDIA GPU through ACME's in-house helper."
    assert plugin_finding["min_torch"] == "2.6"
    assert plugin_finding["targets"] == {t: "degrades" if targets.has_role(t, "host") else "raises"
                                         for t in targets.names()}
    assert report["scores"]["rocm"] < 100  # the plugin's own effects feed the score


@pytest.mark.slow  # pip install plus a few interpreter start-ups
def test_plugin_rule_is_listed_and_explained(plugin_site):
    proc = run_with_plugin(plugin_site, "-m", "auditor", "rules", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    listed = {r["code"]: r for r in json.loads(proc.stdout)}
    assert listed["XK901"]["name"] == "acme-pinned-gpu"
    assert "LK102" in listed
    proc = run_with_plugin(plugin_site, "-m", "auditor", "rules")
    assert proc.returncode == 0 and "XK901" in proc.stdout
    proc = run_with_plugin(plugin_site, "-m", "auditor", "explain", "acme-pinned-gpu")
    assert proc.returncode == 0 and "XK901 acme-pinned-gpu" in proc.stdout


CHECK_EXAMPLES = """
import json, pathlib, sys, tempfile
from auditor.config.settings import Settings
from auditor.pipeline.scan import scan
from auditor.checks.registry import find_rule

rule = find_rule("XK901")
outcome = []
for kind, examples in (("valid", rule.VALID), ("invalid", rule.INVALID)):
    for example in examples:
        with tempfile.TemporaryDirectory() as tmp:
            (pathlib.Path(tmp) / example.path).write_text(example.code)
            result = scan([tmp], Settings(select=["XK901"], cache=False, jobs=1))
            outcome.append([kind, example.line, sorted(f.line for f in result.findings), len(result.errors)])
print(json.dumps(outcome))
"""


@pytest.mark.slow  # pip install plus a few interpreter start-ups
def test_plugin_examples_hold(plugin_site):
    proc = run_with_plugin(plugin_site, "-c", CHECK_EXAMPLES)
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout)
    assert outcome
    for kind, line, lines, errors in outcome:
        assert errors == 0
        assert (lines == []) if kind == "valid" else (line in lines)


# -- a broken plugin ------------------------------------------------------------------------------------

@pytest.fixture
def fresh_registry():
    def clear() -> None:
        for cached in (registry._all, registry._by_code, registry._checked):
            cached.cache_clear()
        registry._TRUSTED.clear()

    clear()
    yield
    clear()


def test_plugin_that_fails_to_import_is_a_warning(fresh_registry, monkeypatch, tmp_path, capsys):
    from auditor.cli import main

    monkeypatch.setattr(registry, "_plugin_entry_points", lambda: [
        importlib.metadata.EntryPoint("broken", "no_such_module_xyz.rules", registry.ENTRY_POINT_GROUP),
        importlib.metadata.EntryPoint("odd", "os.path:join", registry.ENTRY_POINT_GROUP),
    ])
    warnings = registry.registry_warnings()
    assert any("'broken' failed to load" in w and "no_such_module_xyz" in w for w in warnings)
    assert any("'odd' is neither a Rule subclass nor a module" in w for w in warnings)
    assert registry.find_rule("LK102") is not None  # the built-in rules still load

    (tmp_path / "m.py").write_text("model = Net().cuda()\n", encoding="utf-8")
    code = main([str(tmp_path), "--format", "json", "--select", "LK102", "--no-cache"])
    out, err = capsys.readouterr()
    assert code == 0
    report = json.loads(out)
    assert [f["rule"] for f in report["findings"]] == ["LK102"]
    assert any("failed to load" in w for w in report["warnings"])
    assert "audit: warning: plugin 'broken' failed to load" in err

    assert main(["rules"]) == 0
    out, err = capsys.readouterr()
    assert "LK102" in out and "audit: warning: plugin 'broken' failed to load" in err


# -- the plugin API -------------------------------------------------------------------------------------

# What a plugin imports (README, Extending: plugins; fixtures/plugin): these paths are the plugin API
# and stay where they are, whatever moves inside the package.
PLUGIN_API = {
    "auditor.catalogue": {"ApiEntry"},
    "auditor.checks.base": {"ApiRule", "Rule", "Invalid", "Valid"},
    "auditor.model": {"Category", "Severity"},
}


def _auditor_imports(source: str) -> set[tuple[str, str]]:
    import ast

    return {(node.module, alias.name) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "auditor"
            for alias in node.names}


def _readme_plugin_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Extending: plugins", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_plugin_api_paths_resolve():
    import importlib

    for module, names in PLUGIN_API.items():
        loaded = importlib.import_module(module)
        assert all(hasattr(loaded, name) for name in names), module


def test_the_fixture_plugin_and_the_readme_import_only_the_plugin_api():
    fixture = set().union(*(_auditor_imports(path.read_text(encoding="utf-8"))
                            for path in (FIXTURE / "src").rglob("*.py")))
    readme = _auditor_imports(_readme_plugin_example())
    assert fixture and readme
    outside = sorted((module, name) for module, name in fixture | readme if name not in PLUGIN_API.get(module, ()))
    assert outside == [], "a plugin imports these: add them to the plugin API (and keep them there) or stop"


def test_the_readme_plugin_example_defines_a_working_rule():
    from auditor.checks.base import ApiRule, Rule

    namespace: dict = {}
    exec(compile(_readme_plugin_example(), "README.md", "exec"), namespace)
    rule = namespace["InternalGpuPool"]
    assert issubclass(rule, ApiRule) and issubclass(rule, Rule)
    assert rule.code == "ACME101" and rule.apis[0].rule == rule.name and rule.INVALID and rule.VALID
    assert rule().effects()["rocm"] == "raises"
