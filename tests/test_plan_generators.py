"""`audit plan --write-tests`: the generated parity test and benchmark, as text. They are valid,
ruff-clean, self-contained Python; nothing put into them (a project name from an untrusted
repository, a target label from the registry) becomes code; generating never imports the
project; `write_tests` replaces only its own unedited files and never writes through a link.
Running the generated files on PyTorch is tests/test_plan_generated_run.py."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor import __version__
from auditor.plan import generated
from auditor.plan.benchmark import benchmark_filename, render_benchmark
from auditor.plan.devices import NVIDIA, TargetDevice, registry_devices
from auditor.plan.generated import ownership
from auditor.plan.parity import parity_filename, render_parity_test
from auditor.plan.write import WriteRefused, write_tests

RENDERERS = [render_parity_test, render_benchmark]
LONG_ENTRY = "company.research.vision.backbones.experimental.transformer_variants:parity_case"


def code_only(text: str) -> str:
    """The module's code without comments or docstrings: what an injection would change."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            body[0] = ast.Pass()
    return ast.dump(tree)


def ruff(*args: str, files: list[Path]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args, "--isolated", *map(str, files)],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def every_file(tmp_path_factory) -> list[Path]:
    """Both files for every default target, with the stand-in, a short and a long entry."""
    folder = tmp_path_factory.mktemp("generated")
    files = []
    for target in registry_devices():
        for entry, tag in ((None, "standin"), ("pkg.models:make_case", "entry"), (LONG_ENTRY, "long")):
            for render in RENDERERS:
                path = folder / tag / (parity_filename if render is render_parity_test else benchmark_filename)(target)
                path.parent.mkdir(exist_ok=True)
                path.write_text(render(target, project="demo", entry=entry), encoding="utf-8")
                files.append(path)
    longest = "t" * 24  # the longest target name: it is in the file's name, its usage lines, its test
    for render, name in ((render_parity_test, parity_filename), (render_benchmark, benchmark_filename)):
        path = folder / "long" / name(longest)
        path.write_text(render(longest, project="p" * 300, device="cpu", entry=LONG_ENTRY), encoding="utf-8")
        files.append(path)
    return files


def test_generated_files_are_ruff_clean_at_ruff_defaults(every_file):
    # The project's own rule set, at ruff's default width (88) and an old target: a user's
    # configuration is likelier to be stricter than ours than looser.
    for python in ("py39", "py313"):  # rules such as B905 (zip without strict=) depend on it
        checked = ruff("check", "--no-cache", "--select", "E,F,W,I,UP,B", "--target-version", python,
                       files=every_file)
        assert checked.returncode == 0, checked.stdout + checked.stderr
    formatted = ruff("format", "--no-cache", "--check", files=every_file)
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr


def test_ruff_would_catch_a_long_line(tmp_path):
    # the check above can fail: the same command flags a line past 88 columns
    bad = tmp_path / "bad.py"
    bad.write_text("x = '" + "a" * 40 + " " + "b" * 50 + "'\n", encoding="utf-8")
    assert ruff("check", "--no-cache", "--select", "E,F,W,I,UP,B", files=[bad]).returncode == 1


def test_generated_files_import_only_torch_pytest_and_the_stdlib(every_file):
    for path in every_file:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {alias.name.split(".")[0] for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
        top |= {node.module.split(".")[0] for node in tree.body if isinstance(node, ast.ImportFrom) and node.level == 0}
        allowed = set(sys.stdlib_module_names) | {"torch", "__future__"}
        allowed |= {"pytest"} if path.name.startswith("test_parity") else set()
        assert top <= allowed, (path.name, top - allowed)
        outer = {id(node) for node in tree.body}
        nested = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) and id(node) not in outer
                  for alias in node.names}
        assert nested <= {"torch_xla.core.xla_model"}, (path.name, nested)  # only where XLA is asked for


def test_rendering_is_deterministic_and_names_project_version_and_target():
    for render in RENDERERS:
        first = render("tpu", project="demo", entry="pkg.models:make_case")
        assert first == render("tpu", project="demo", entry="pkg.models:make_case")
        lines = first.splitlines()
        assert lines[0] == f"# Generated by lockin-auditor {__version__} (audit plan --write-tests)."
        assert lines[1] == "# Project: demo; target: tpu."
        assert "DEFAULT_ENTRY = \"pkg.models:make_case\"" in first
        assert "Google TPU through TorchTPU" in first and 'or "tpu"' in first
        assert first != render("tpu", project="demo", entry=None)


def test_parity_test_writes_the_tolerances_and_the_environment_at_its_top():
    text = render_parity_test("trainium", project="demo")
    top = text[: text.index("# -- shared")]
    for dtype in ("float64", "float32", "float16", "bfloat16"):
        assert f"torch.{dtype}: (" in top
    assert "agreed up front" in top and "must match\n# exactly" in top
    for name in ("LOCKIN_PARITY_REFERENCE", "LOCKIN_PARITY_TARGET", "LOCKIN_PARITY_ENTRY",
                 "LOCKIN_PARITY_DTYPE", "LOCKIN_PARITY_OUTPUTS"):
        assert name in ast.get_docstring(ast.parse(text)) and f'os.environ.get("{name}"' in top
    assert 'TARGET = _TARGET or "neuron"' in top and '"neuron": ("torch_neuronx",)' in text
    assert "def test_parity_trainium()" in text


def test_benchmark_writes_its_conditions_and_flags():
    text = render_benchmark("xpu", project="demo")
    top = text[: text.index("# -- shared")]
    for condition in ("BATCH_SIZE = 8", "SEQ_LEN = 128", 'DTYPE = "float32"', "WARMUP_STEPS = 10",
                      "MEASURED_STEPS = 50", "ROUNDS = 4", 'MODE = "inference"'):
        assert condition in top
    for flag in ("--reference", "--target", "--only", "--entry", "--batch-size", "--seq-len", "--dtype",
                 "--mode", "--warmup", "--steps", "--rounds"):
        assert f'add("{flag}"' in text
    assert "torch.accelerator.synchronize" in text


def test_rocm_requires_the_hip_build_and_the_reference_the_cuda_build():
    text = render_parity_test("rocm", project="demo")
    assert 'TARGET = _TARGET or "cuda"' in text and 'TARGET_BUILD = None if _TARGET else "hip"' in text
    assert 'REFERENCE_BUILD = None if _REFERENCE else "cuda"' in text
    plain = render_parity_test("cpu", project="demo", reference="cpu")
    assert "REFERENCE_BUILD = None\n" in plain and "TARGET_BUILD = None\n" in plain


def test_the_registry_passes_its_own_devices():
    registry = {"gaudi": TargetDevice("hpu", "Intel Gaudi", ("habana_frameworks.torch",)),
                "ascend": TargetDevice("npu", "Huawei Ascend", ("torch_npu",))}
    text = render_parity_test("ascend", project="demo", devices=registry)
    assert 'TARGET = _TARGET or "npu"' in text and "Huawei Ascend" in text
    assert '"npu": ("torch_npu",)' in text and '"hpu": ("habana_frameworks.torch",)' in text
    # an explicit device string wins; the table's build and backends stay for its device type
    indexed = render_benchmark("rocm", project="d", device="cuda:1")
    assert '"target": (_TARGET or "cuda:1", None if _TARGET else "hip")' in indexed
    other = render_parity_test("tpu", project="d", device="cpu")
    assert 'TARGET = _TARGET or "cpu"' in other and "TARGET_BUILD = None\n" in other
    custom = TargetDevice("xla", "TPU through torch_xla (legacy)", ("torch_xla",))
    assert 'or "xla"' in render_parity_test("tpu-legacy", project="d", device=custom)
    assert "def test_parity_tpu_legacy()" in render_parity_test("tpu-legacy", project="d", device=custom)
    assert parity_filename("tpu-legacy") == "test_parity_tpu_legacy.py"
    assert render_parity_test("tpu", project="d", reference=NVIDIA) == render_parity_test("tpu", project="d")


@pytest.mark.parametrize("call", [
    lambda: render_parity_test("nowhere", project="d"),  # no device for an unknown target
    lambda: render_parity_test("../etc", project="d", device="cpu"),
    lambda: render_parity_test("t" * 25, project="d", device="cpu"),
    lambda: render_parity_test("tpu", project="d", device="cuda; import os"),
    lambda: render_parity_test("tpu", project="d", device="CUDA"),
    lambda: render_benchmark("tpu", project="d", entry="os:system('id')"),
    lambda: render_benchmark("tpu", project="d", entry="just_a_module"),
    lambda: render_benchmark("tpu", project="d", entry="pkg models:make"),
    lambda: render_benchmark("tpu", project="d", entry="pkg:make\nimport os"),
    lambda: render_parity_test("tpu", project="d", reference="cuda\n"),
    lambda: TargetDevice("tpu", "x", ("torch_tpu; import os",)),
    lambda: TargetDevice("cuda", "x", build="rocm"),
], ids=["unknown-target", "path-target", "long-target", "code-device", "upper-device", "code-entry", "no-function",
        "space-entry", "newline-entry", "newline-reference", "code-backend", "unknown-build"])
def test_bad_values_are_refused_before_anything_is_generated(call):
    with pytest.raises(ValueError):
        call()


def test_an_untrusted_project_name_stays_a_comment():
    hostile = 'demo"""\nimport os; os.system("touch PWNED")  # \r\x00\u2028\\'
    for render in RENDERERS:
        text = render("tpu", project=hostile)
        assert code_only(text) == code_only(render("tpu", project="demo"))
        assert "\nimport os; os.system" not in text and "\x00" not in text and "\u2028" not in text
        assert len(text.splitlines()[1]) <= 88
        assert ownership(text) == "unchanged"


def test_an_odd_target_label_stays_inside_the_docstring():
    label = 'TPU"""; import os; os.system("id"); """\\'
    devices = {"odd": TargetDevice("tpu", label, ("torch_tpu",))}
    for render in RENDERERS:
        text = render("odd", project="demo", devices=devices)
        clean = render("odd", project="demo", devices={"odd": TargetDevice("tpu", "TPU", ("torch_tpu",))})
        assert code_only(text) == code_only(clean)


def test_generating_never_imports_the_project(tmp_path, monkeypatch):
    marker = tmp_path / "imported"
    (tmp_path / "victim_models.py").write_text(
        f"open({str(marker)!r}, 'w').close()\ndef make_case():\n    raise SystemExit(9)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    write_tests(tmp_path / "out", "tpu", project="demo", entry="victim_models:make_case")
    render_benchmark("cpu", project="demo", entry="victim_models:make_case")
    assert "victim_models" not in sys.modules and not marker.exists()


def test_ownership_tells_unchanged_edited_and_foreign():
    text = render_parity_test("tpu", project="demo")
    assert ownership(text) == "unchanged"
    assert ownership(text.replace("\n", "\r\n")) == "unchanged"  # a CRLF checkout is no edit
    assert ownership(text.replace("torch.float32: (1e-4, 1e-5)", "torch.float32: (1e-3, 1e-4)")) == "edited"
    assert ownership(text + "\n# a note\n") == "edited"
    assert ownership(text.replace("lockin-auditor-checksum: ", "checksum: ")) == "foreign"
    assert ownership("import torch\n\ndef test_parity():\n    pass\n") == "foreign"
    assert ownership("# Generated by lockin-auditor 0.1.0\n") == "foreign"
    assert ownership("") == "foreign"


# -- write_tests ---------------------------------------------------------------------------


def test_write_tests_writes_both_files_and_changes_nothing_the_second_time(tmp_path):
    folder = tmp_path / "tests" / "parity"  # created, parents too
    paths = write_tests(folder, "tpu", project="demo", entry="pkg:make_case")
    assert paths == [folder / "test_parity_tpu.py", folder / "bench_tpu.py"]
    assert paths[0].read_text(encoding="utf-8") == render_parity_test("tpu", project="demo", entry="pkg:make_case")
    assert paths[1].read_text(encoding="utf-8") == render_benchmark("tpu", project="demo", entry="pkg:make_case")
    before = [(p.stat().st_mtime_ns, p.stat().st_ino) for p in paths]
    assert write_tests(folder, "tpu", project="demo", entry="pkg:make_case") == paths
    assert [(p.stat().st_mtime_ns, p.stat().st_ino) for p in paths] == before
    assert sorted(p.name for p in folder.iterdir()) == ["bench_tpu.py", "test_parity_tpu.py"]  # no temporaries


def test_write_tests_replaces_its_own_unedited_files(tmp_path, monkeypatch):
    write_tests(tmp_path, "mps", project="demo")
    monkeypatch.setattr(generated, "__version__", "9.9.9")  # a newer audit
    paths = write_tests(tmp_path, "mps", project="demo", entry="pkg:other")
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert "lockin-auditor 9.9.9" in text and "pkg:other" in text


def test_write_tests_keeps_an_edited_file_and_writes_nothing(tmp_path):
    parity, bench = write_tests(tmp_path, "xpu", project="demo")
    edited = parity.read_text(encoding="utf-8").replace("(1e-4, 1e-5)", "(2e-4, 1e-5)")
    parity.write_text(edited, encoding="utf-8")
    bench_before = bench.read_text(encoding="utf-8")
    with pytest.raises(WriteRefused) as refused:
        write_tests(tmp_path, "xpu", project="demo", entry="pkg:make_case")
    assert refused.value.path == parity and "edited since audit wrote it" in str(refused.value)
    assert parity.read_text(encoding="utf-8") == edited
    assert bench.read_text(encoding="utf-8") == bench_before  # checked before anything is written


def test_write_tests_never_replaces_a_file_it_did_not_write(tmp_path):
    mine = tmp_path / "test_parity_cpu.py"
    mine.write_text("def test_mine():\n    assert True\n", encoding="utf-8")
    with pytest.raises(WriteRefused, match="was not written by audit"):
        write_tests(tmp_path, "cpu", project="demo")
    assert mine.read_text(encoding="utf-8") == "def test_mine():\n    assert True\n"
    assert not (tmp_path / "bench_cpu.py").exists()


def test_write_tests_never_writes_through_a_link(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text(render_benchmark("tpu", project="demo"), encoding="utf-8")  # even one of ours
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "bench_tpu.py").symlink_to(outside)
    with pytest.raises(WriteRefused, match="symbolic link"):
        write_tests(folder, "tpu", project="demo", entry="pkg:make_case")
    assert outside.read_text(encoding="utf-8") == render_benchmark("tpu", project="demo")
    assert not (folder / "test_parity_tpu.py").exists()
    dangling = tmp_path / "dangling"
    dangling.mkdir()
    (dangling / "test_parity_tpu.py").symlink_to(tmp_path / "nowhere.py")
    with pytest.raises(WriteRefused, match="symbolic link"):
        write_tests(dangling, "tpu", project="demo")
    assert not (tmp_path / "nowhere.py").exists()


def test_write_tests_refuses_a_linked_folder_and_a_file_for_a_folder(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    with pytest.raises(WriteRefused, match="folder is a symbolic link"):
        write_tests(tmp_path / "link", "tpu", project="demo")
    assert list(real.iterdir()) == []
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(WriteRefused, match="not a folder"):
        write_tests(tmp_path / "file", "tpu", project="demo")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_write_tests_refuses_a_special_file_without_blocking_on_it(tmp_path):
    os.mkfifo(tmp_path / "bench_tpu.py")
    with pytest.raises(WriteRefused, match="not a regular file"):
        write_tests(tmp_path, "tpu", project="demo")


def test_templates_ship_in_the_wheel():
    """Where the project is installed from a wheel (as .ci/run does), the templates are in it;
    an editable install lists no package files and proves nothing."""
    try:
        files = importlib.metadata.files("lockin-auditor") or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("lockin-auditor is not installed")
    names = {str(f).replace("\\", "/") for f in files}
    if "auditor/__init__.py" not in names:
        pytest.skip("an editable install: the wheel's contents are checked where it is installed")
    for template in ("common.py.tmpl", "parity.py.tmpl", "bench.py.tmpl"):
        assert f"auditor/plan/templates/{template}" in names
