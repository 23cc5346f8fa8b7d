"""Opt-in features (context `feature`): a function whose body is the only place a file imports an
NVIDIA-only runtime fails on its own, and its component runs degraded instead of failing; a
top-level import of the same runtime is the main path's and still fails it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from auditor.cli import main

PYPROJECT = '[project]\nname = "lib"\n'
EXPORT = ("import torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n\n"
          "    def to_tensorrt(self, path):\n        import torch_tensorrt\n\n"
          "        engine = torch_tensorrt.compile(self, inputs=[torch.ones(1)])\n"
          "        torch_tensorrt.save(engine, path)\n")


def report(root: Path, files: dict[str, str], capsys) -> dict:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    here = os.getcwd()
    os.chdir(root)
    try:
        main([".", "--format", "json", "--no-cache", "--exit-zero", "--isolated"])
    finally:
        os.chdir(here)
    return json.loads(capsys.readouterr().out)


def test_a_lazy_tensorrt_export_is_a_feature_and_the_package_runs_degraded(tmp_path, capsys):
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/model.py": EXPORT}, capsys)
    found = [f for f in document["findings"] if f["rule"] == "LK411"]
    assert found and all(f["context"] == "feature" for f in found)
    assert "`to_tensorrt()` (line 8)" in found[0]["message"]
    assert all(f["targets"]["cpu"] == "raises" for f in found)  # the feature itself still fails there
    for target in ("rocm", "cpu", "tpu"):
        verdict = document["verdicts"][target]
        assert verdict["verdict"] == "runs-degraded", target
        assert verdict["reasons"][0]["why"].startswith("1 feature is NVIDIA-only: the TensorRT runtime (lib/model.py:")
    (package,) = [c for c in document["components"] if c["name"] == "lib"]
    (feature,) = package["features"]
    assert feature["path"] == "lib/model.py" and feature["rule"] == "LK411"
    assert feature["verdicts"]["cpu"] == "fails" and set(feature["verdicts"]) == set(document["targets"])


def test_a_top_level_import_is_the_main_path(tmp_path, capsys):
    # trap: the same function, but the module imports the runtime at its top: the main path needs it
    top = "import torch_tensorrt\n" + EXPORT
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/model.py": top}, capsys)
    assert all(f["context"] != "feature" for f in document["findings"] if f["rule"] == "LK411")
    assert document["verdicts"]["cpu"]["verdict"] == "fails"
    assert all(not c["features"] for c in document["components"])


def test_a_lazy_import_outside_a_function_is_not_a_feature(tmp_path, capsys):
    # trap: indented, but in a module-level block that always runs
    block = "import sys\nif sys.platform == 'linux':\n    import tensorrt as trt\n    builder = trt.Builder(trt.Logger())\n"
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/build.py": block}, capsys)
    assert all(f["context"] != "feature" for f in document["findings"] if f["rule"] == "LK411")
    assert document["verdicts"]["cpu"]["verdict"] == "fails"


def test_a_feature_beside_a_main_path_failure_does_not_hide_it(tmp_path, capsys):
    files = {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/model.py": EXPORT,
             "lib/train.py": "import torch\nx = torch.zeros(3, device='cuda')\n"}
    document = report(tmp_path, files, capsys)
    assert document["verdicts"]["cpu"]["verdict"] == "fails"
    assert {r["path"] for r in document["verdicts"]["cpu"]["reasons"]} == {"lib/train.py"}
