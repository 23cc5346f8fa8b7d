"""A kernel package's NVIDIA-only modules behind its own fallbacks (issue 15: "a kernel package that
ships a HIP build must not fail on ROCm"): a module inside a GPU package (`ops/cute/`) that the
package imports only under `try: ... except ImportError: f = None` is optional, and so is an
NVIDIA-only dependency whose every import is such optional code. Traps: the same import on the main
path, a handler that re-raises, a commented-out import, the dependency imported at a module's top."""

from __future__ import annotations

from auditor.portability.verdict import verdicts

SETUP = ("from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n"
         "setup(name='kern', ext_modules=[CUDAExtension('kern_cuda', ['csrc/k.cu'])])\n")
STEP = ("import torch\nimport cutlass\nimport cutlass.cute as cute\nfrom quack.compile_utils import make_fake_tensor\n\n"
        "@cute.jit\ndef step(x):\n    return x\n")
PYPROJECT = '[project]\nname = "kern"\ndependencies = [\n  "torch",\n  "quack-kernels>=0.3",\n]\n'


def _scan(scan_source, importer: str, extra: dict[str, str] | None = None):
    files = {"setup.py": SETUP, "pyproject.toml": PYPROJECT, "kern/__init__.py": "",
             "kern/ops/__init__.py": "", "kern/ops/cute/__init__.py": "", "kern/ops/cute/step.py": STEP,
             "kern/modules/__init__.py": "", "kern/modules/block.py": importer, **(extra or {})}
    result = scan_source(files)
    assert not result.errors, result.errors
    return result


def _in(result, path: str, rule: str | None = None) -> list:
    return [f for f in result.findings if f.path == path and (rule is None or f.rule == rule)]


def _shipped(result) -> list:
    return [f for f in result.findings if f.path.startswith("kern/") or f.path in ("setup.py", "pyproject.toml")]


FALLBACK = ("import torch\ntry:\n    from kern.ops.cute.step import step\nexcept ImportError:\n    step = None\n\n"
            "def decode(x):\n    assert step is not None, 'install quack-kernels'\n    return step(x)\n")


def test_a_module_in_a_gpu_package_imported_only_under_a_fallback_is_optional(scan_source):
    result = _scan(scan_source, FALLBACK)
    site = _in(result, "kern/modules/block.py", "LK409")
    assert [(f.line, f.context) for f in site] == [(3, "own-package+optional")]
    kernel = _in(result, "kern/ops/cute/step.py", "LK409")
    assert kernel and all(f.targets["rocm"] == "degrades" and "optional" in f.context for f in kernel)
    assert "imported only under a fallback or a guard (kern/modules/block.py:3)" in kernel[0].message
    # the dependency only that optional module imports installs unused on ROCm; no macOS wheels
    dependency = _in(result, "pyproject.toml", "LK505")[0]
    assert dependency.targets["rocm"] == dependency.targets["cpu"] == "degrades"
    assert dependency.targets["mps"] == "raises" and "installs and goes unused" in dependency.message
    assert verdicts(_shipped(result))["rocm"].verdict == "runs-degraded"


def test_a_relative_import_under_a_fallback(scan_source):
    src = "try:\n    from ..ops.cute.step import step\nexcept ImportError:\n    step = None\n"
    result = _scan(scan_source, src)
    assert [f.context for f in _in(result, "kern/modules/block.py", "LK409")] == ["own-package+optional"]
    assert all(f.targets["rocm"] == "degrades" for f in _in(result, "kern/ops/cute/step.py", "LK409"))


def test_trap_the_same_import_on_the_main_path_still_fails_rocm(scan_source):
    src = "import torch\nfrom kern.ops.cute.step import step\n# try: from kern.ops.cute.other import f\n"
    result = _scan(scan_source, src)
    assert _in(result, "kern/modules/block.py", "LK409") == []  # a helper inside a GPU package: no inventory line
    kernel = _in(result, "kern/ops/cute/step.py", "LK409")
    assert kernel and all(f.context is None and f.targets["rocm"] == "raises" for f in kernel)
    assert _in(result, "pyproject.toml", "LK505")[0].targets["rocm"] == "raises"
    assert verdicts(_shipped(result))["rocm"].verdict == "fails"


def test_trap_a_handler_that_reraises_is_no_fallback(scan_source):
    src = ("try:\n    from kern.ops.cute.step import step\nexcept ImportError:\n"
           "    raise RuntimeError('kern needs quack-kernels')\n")
    result = _scan(scan_source, src)
    assert _in(result, "kern/modules/block.py", "LK409") == []
    assert all(f.targets["rocm"] == "raises" for f in _in(result, "kern/ops/cute/step.py", "LK409"))
    assert verdicts(_shipped(result))["rocm"].verdict == "fails"


def test_trap_the_dependency_also_imported_at_a_module_top(scan_source):
    """One main-path import of the package keeps the dependency required, though the cute module is
    optional."""
    result = _scan(scan_source, FALLBACK, {"kern/norm.py": "import torch\nfrom quack.rmsnorm import rmsnorm\n"})
    assert _in(result, "pyproject.toml", "LK505")[0].targets["rocm"] == "raises"


def test_a_test_importing_the_dependency_at_its_top_does_not_count(scan_source):
    result = _scan(scan_source, FALLBACK, {"tests/test_step.py": "from quack.compile_utils import make_fake_tensor\n"})
    assert _in(result, "tests/test_step.py", "LK409")  # reported, in test context
    assert _in(result, "pyproject.toml", "LK505")[0].targets["rocm"] == "degrades"


def test_a_dependency_nothing_imports_keeps_its_effects(scan_source):
    result = scan_source({"pyproject.toml": PYPROJECT, "app/__init__.py": "", "app/run.py": "import torch\n"})
    dependency = [f for f in result.findings if f.rule == "LK505"][0]
    assert set(dependency.targets.values()) == {"raises"}
