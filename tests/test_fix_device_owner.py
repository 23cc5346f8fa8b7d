"""The one place a project chooses its device (issue 19, item 1): which place is found, the module
created when there is none, the expression every device rewrite writes (`Rewriter.device_expr`),
and the file-creating seam of the fix engine (never over a file, shown by --diff, idempotent)."""

from __future__ import annotations

import os

import pytest

from auditor.analysis.project import FileFacts
from auditor.catalogue import load_catalogue
from auditor.checks.registry import all_rules
from auditor.config.settings import Settings
from auditor.context import PythonContext
from auditor.fix.apply import fix_paths
from auditor.fix.device_owner import DeviceOwner, find_device_owner, project_name
from auditor.fix.floor import TorchFloor
from auditor.fix.plan import CreateFile, Rewriter
from auditor.pipeline.scan import scan
from auditor.python.scan import parse_module
from auditor.sandbox.safe_files import TreeFile, WriteRefused


def write(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def owner_of(root, floor: str | None = "2.7") -> DeviceOwner | None:
    paths = [str(p) for p in root.rglob("*.py")]
    return find_device_owner(str(root), paths, TorchFloor(floor), load_catalogue())


# -- discovery -------------------------------------------------------------------------------------------
def test_an_existing_helper_owns_the_device(tmp_path):
    write(tmp_path, {
        "mypkg/__init__.py": "",
        "mypkg/utils/__init__.py": "",
        "mypkg/utils/devices.py": "import torch\n\ndef get_device(prefer=None):\n"
                                  "    return torch.accelerator.current_accelerator() or torch.device('cpu')\n",
        "mypkg/train.py": "model.cuda()\n",
    })
    owner = owner_of(tmp_path)
    assert owner == DeviceOwner("mypkg.utils.devices", "get_device", "mypkg/utils/devices.py", False, None)
    assert owner.expression == "get_device()" and not owner.ours


def test_a_module_level_constant_owns_it_when_no_helper_does(tmp_path):
    write(tmp_path, {"config.py": "import torch\nDEVICE = torch.device('mps' if torch.backends.mps.is_available() "
                                  "else 'cpu')\n",
                     "train.py": "import config\n"})
    owner = owner_of(tmp_path)
    assert (owner.module, owner.function, owner.kind, owner.expression) == ("config", "DEVICE", "constant", "DEVICE")


def test_a_helper_that_hard_codes_cuda_is_not_an_owner(tmp_path):
    write(tmp_path, {
        "utils.py": "import torch\n\ndef get_device():\n"
                    "    return torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n",
        "consts.py": "DEVICE = 'cuda:0'\n",
        "helpers.py": "def select_device(name):\n    return name\n",  # a required argument: not the one place
        "tests/test_x.py": "import torch\ndef get_device():\n    return torch.device('cpu')\n",  # tests never own it
    })
    owner = owner_of(tmp_path)
    assert owner.created and owner.path == "device_choice.py" and owner.module == "device_choice"


def test_a_helper_that_probes_several_accelerators_is_an_owner(tmp_path):
    write(tmp_path, {"dev.py": "import torch\ndef get_device():\n    if torch.cuda.is_available():\n"
                               "        return torch.device('cuda')\n    if torch.backends.mps.is_available():\n"
                               "        return torch.device('mps')\n    return torch.device('cpu')\n"})
    assert owner_of(tmp_path).module == "dev"


def test_none_found_creates_one_at_the_package_root_named_after_the_project(tmp_path):
    write(tmp_path, {"pyproject.toml": '[project]\nname = "my-pkg"\n',
                     "src/my_pkg/__init__.py": "", "src/my_pkg/model.py": "m.cuda()\n",
                     "scripts/run.py": "x.cuda()\n"})
    owner = owner_of(tmp_path)
    assert (owner.module, owner.path, owner.created, owner.index_function, owner.env) == (
        "my_pkg.device_choice", "src/my_pkg/device_choice.py", True, "device_at", "MY_PKG_DEVICE")
    assert owner.ours and "current_accelerator(check_available=True)" in owner.content
    assert 'os.environ.get(ENV_VARIABLE' in owner.content and 'ENV_VARIABLE = "MY_PKG_DEVICE"' in owner.content
    compile(owner.content, "device_choice.py", "exec")


def test_a_script_repository_with_a_models_package_gets_the_module_beside_its_scripts(tmp_path):
    """No packaging file and scripts at the top (kuangliu/pytorch-cifar's layout): `models/` is the
    scripts' own package; the module goes beside main.py, and models/ reaches it from there."""
    write(tmp_path, {"main.py": "from models import *\nnet = Net().cuda()\n", "models/__init__.py": "",
                     "models/net.py": "x.cuda()\n", "tools/plot.py": "y.cuda()\n"})
    owner = owner_of(tmp_path)
    assert (owner.path, owner.module) == ("device_choice.py", "device_choice")
    assert rewriter("import torch\n", owner, where="models/net.py", package="models").device_expr()[0] == "get_device()"
    # tools/plot.py runs as `python tools/plot.py` and imports from tools/ only: a module of its own there
    elsewhere = rewriter("import torch\n", owner, where="tools/plot.py")
    assert elsewhere.device_unavailable() is None
    text, edits = elsewhere.device_expr()
    assert text == "get_device()" and [e.path for e in edits if isinstance(e, CreateFile)] == ["tools/device_choice.py"]


@pytest.mark.parametrize(("floor", "has", "lacks"), [
    ("2.7", "check_available=True", "getattr(torch, \"xpu\""),
    ("2.6", "torch.accelerator.is_available()", "check_available"),
    ("2.4", "getattr(torch, \"xpu\"", "torch.accelerator"),
    (None, "getattr(torch, \"xpu\"", "torch.accelerator"),  # unknown floor: taken as 2.0
])
def test_the_created_module_uses_the_form_the_torch_floor_has(tmp_path, floor, has, lacks):
    write(tmp_path, {"train.py": "x.cuda()\n"})
    content = owner_of(tmp_path, floor).content
    assert has in content and lacks not in content
    compile(content, "device_choice.py", "exec")


def test_the_created_module_never_takes_a_name_in_use(tmp_path):
    write(tmp_path, {"train.py": "x.cuda()\n", "device_choice.py": "CHOICE = 1\n"})
    assert owner_of(tmp_path).path == "_lockin_device.py"
    (tmp_path / "_lockin_device").mkdir()  # a folder (package) of that name counts as taken too
    assert owner_of(tmp_path) is None


def test_an_accelerator_object_owns_the_device_and_nothing_is_created(tmp_path):
    write(tmp_path, {"train.py": "from accelerate import Accelerator\naccelerator = Accelerator()\nx.cuda()\n"})
    owner = owner_of(tmp_path)
    assert owner.kind == "accelerator" and not owner.created and "Accelerator" in owner.reason


def test_project_name_from_the_packaging_files_or_the_folder(tmp_path):
    (tmp_path / "setup.py").write_text("setup(name='fast.net-2')\n")
    assert project_name(str(tmp_path)) == "FAST_NET_2"
    bare = tmp_path / "3d-models"
    bare.mkdir()
    assert project_name(str(bare)) == "_3D_MODELS"


# -- the expression -----------------------------------------------------------------------------------
CREATED = DeviceOwner("pkg.device_choice", "get_device", "pkg/device_choice.py", True, "device_at",
                      content="# module\n", env="PKG_DEVICE", ours=True)
FOUND = DeviceOwner("pkg.util", "get_device", "pkg/util.py", False, None, returns_device=False)


def rewriter(text: str, owner: DeviceOwner | None, where: str = "pkg/train.py", test: bool = False,
             package: str | None = None) -> Rewriter:
    if package is None:  # pkg/ is a package (its __init__.py chain)
        package = os.path.dirname(where).replace("/", ".") if where.startswith("pkg/") else ""
    module = parse_module(text)
    ctx = PythonContext(where, text, load_catalogue(), module,
                        FileFacts(test=test, package=package, device_owner=owner, root_path=where))
    from auditor.python.walker import Walker

    Walker([r for r in all_rules() if "python" in r.file_kinds], ctx.catalogue).run(ctx)
    return Rewriter(ctx)


def test_device_expr_names_the_owner_and_imports_it_once_with_the_created_file():
    text, edits = rewriter("import torch\nx = 1\n", CREATED).device_expr()
    assert text == "get_device()"
    creates = [e for e in edits if isinstance(e, CreateFile)]
    assert [(c.path, c.content) for c in creates] == [("pkg/device_choice.py", "# module\n")]
    assert [e.content for e in edits if not isinstance(e, CreateFile)] == ["from pkg.device_choice import get_device\n"]
    text, edits = rewriter("import torch\nx = 1\n", CREATED).device_expr("rank")
    assert text == "device_at(rank)"


def test_device_expr_reuses_an_import_and_builds_the_index_form_without_an_index_function():
    r = rewriter("import torch as th\nfrom pkg.util import get_device\n", FOUND)
    assert r.device_expr() == ("get_device()", [])
    text, edits = r.device_expr("1")
    assert text == "th.device(th.device(get_device()).type, 1)" and edits == []
    assert r.device_applicability() == "unsafe"  # a helper of the project's own: its answer on NVIDIA is its own
    assert rewriter("import torch\n", CREATED).device_applicability() == "safe"


def test_outside_the_package_only_a_file_that_imports_it_reaches_the_device_module():
    """xformers' third_party/cutlass examples are standalone: they never import xformers."""
    vendored = rewriter("import torch\n", CREATED, where="third_party/lib/example.py")
    assert vendored.device_expr() is None and "outside the package `pkg`" in vendored.device_unavailable()
    example = rewriter("import torch\nimport pkg\n", CREATED, where="examples/run.py")
    assert example.device_expr()[0] == "get_device()"
    assert rewriter("import torch\n", CREATED, where="train.py").device_expr() is not None  # beside pkg/
    assert rewriter("import torch\n", CREATED, where="pkg/sub/mod.py", package="pkg.sub").device_expr() is not None


def test_device_expr_gives_nothing_where_it_cannot_be_written_and_says_why():
    assert rewriter("import torch\n", None).device_expr() is None  # a plain scan knows no owner
    taken = rewriter("import torch\ndef get_device():\n    return 1\n", CREATED)
    assert taken.device_expr() is None  # the file's own get_device would be shadowed
    owner_file = rewriter("import torch\n", CREATED, where="pkg/device_choice.py")
    assert owner_file.device_expr() is None and "chooses its device" in owner_file.device_unavailable()
    script = DeviceOwner("device_choice", "get_device", "device_choice.py", True, "device_at", ours=True)
    assert rewriter("import torch\n", script, where="train.py").device_expr()[0] == "get_device()"
    assert "script-level" in rewriter("import torch\n", script, where="tools/run.py").device_unavailable()
    assert "--fix-tests" in rewriter("import torch\n", CREATED, test=True).device_unavailable()
    accelerated = DeviceOwner("", "", "train.py", False, None, kind="accelerator", reason="the Accelerator")
    assert rewriter("import torch\n", accelerated).device_unavailable() == "the Accelerator"


# -- the fix run: created file, --diff, idempotence -----------------------------------------------------
SCRIPT = "import torch\n\nmodel = torch.nn.Linear(2, 2).cuda()\nx = torch.ones(1, 2).cuda(0)\nprint(model(x))\n"


def fix(root, write=True, unsafe=False):
    result = scan([str(root)], Settings(cache=False))
    return fix_paths(result, unsafe, write, 10**6)


def test_fix_creates_the_module_rewrites_to_it_and_a_second_run_changes_nothing(tmp_path):
    write(tmp_path, {"train.py": SCRIPT})
    run = fix(tmp_path)
    assert [(c.path, c.written) for c in run.created] == [("device_choice.py", True)]
    fixed = (tmp_path / "train.py").read_text()
    assert fixed == ("import torch\nfrom device_choice import get_device\nfrom device_choice import device_at\n\n"
                     "model = torch.nn.Linear(2, 2).to(get_device())\nx = torch.ones(1, 2).to(device_at(0))\n"
                     "print(model(x))\n")
    created = (tmp_path / "device_choice.py").read_text()
    again = fix(tmp_path)
    assert again.changed == [] and again.created == []
    assert (tmp_path / "device_choice.py").read_text() == created and (tmp_path / "train.py").read_text() == fixed


def test_diff_shows_the_new_file_and_writes_nothing(tmp_path):
    write(tmp_path, {"train.py": SCRIPT})
    run = fix(tmp_path, write=False)
    diff = run.diff()
    assert "--- /dev/null\n+++ b/device_choice.py\n" in diff and "+def get_device() -> torch.device:\n" in diff
    assert not (tmp_path / "device_choice.py").exists() and (tmp_path / "train.py").read_text() == SCRIPT


def test_a_file_that_appears_meanwhile_is_never_overwritten_and_no_file_imports_the_missing_module(tmp_path,
                                                                                                    monkeypatch):
    from auditor.fix import device_owner

    write(tmp_path, {"train.py": SCRIPT})
    found = device_owner.find_device_owner

    def racing(*args, **kwargs):
        owner = found(*args, **kwargs)
        (tmp_path / "device_choice.py").write_text("MINE = 1\n")  # someone else writes it right after the look
        return owner

    monkeypatch.setattr(device_owner, "find_device_owner", racing)
    run = fix(tmp_path)
    assert (tmp_path / "device_choice.py").read_text() == "MINE = 1\n"
    assert (tmp_path / "train.py").read_text() == SCRIPT  # it would import a module that is not ours
    assert any("never writes over a file" in e.message for e in run.errors)


def test_a_refused_creation_keeps_the_files_that_need_it_unwritten(tmp_path, monkeypatch):
    write(tmp_path, {"train.py": SCRIPT})

    def refuse(self, data):
        raise WriteRefused("no space left")

    monkeypatch.setattr(TreeFile, "create", refuse)
    run = fix(tmp_path)
    assert (tmp_path / "train.py").read_text() == SCRIPT and not os.path.exists(tmp_path / "device_choice.py")
    assert any("no space left" in e.message for e in run.errors)


def test_an_accelerator_imported_but_never_built_owns_nothing(tmp_path):
    write(tmp_path, {"types.py": "from accelerate import Accelerator\n\ndef run(acc: Accelerator):\n    pass\n",
                     "train.py": "x.cuda()\n"})
    assert owner_of(tmp_path).created


@pytest.mark.parametrize("where", ["inside", "elsewhere"])
def test_a_fix_run_judges_the_package_the_same_from_any_working_directory(tmp_path, monkeypatch, capsys, where):
    """The project's facts come from the scanned folder: run from a folder outside it, a file deep in
    the package was taken for a package of its own (`utils`, not `pkg.utils`), outside the package
    that owns the device, and its rewrites were held."""
    from auditor.cli import main

    repo = tmp_path / "repo"
    write(repo, {"pyproject.toml": '[project]\nname = "pkg"\n', "pkg/__init__.py": "",
                 "pkg/utils/__init__.py": "",
                 "pkg/utils/run.py": "import torch\n\n\ndef run(model):\n    return model.cuda()\n"})
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(repo if where == "inside" else tmp_path / "elsewhere")
    main([str(repo), "--fix", "--unsafe-fixes", "--no-cache", "--isolated", "-s"])
    assert "model.to(get_device())" in (repo / "pkg" / "utils" / "run.py").read_text()
    assert (repo / "pkg" / "device_choice.py").is_file()
