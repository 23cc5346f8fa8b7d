"""The one place a project chooses its device: found once per fix run, before any file is fixed.

The rewrites of the raising device ties (`.cuda()`, `"cuda"` device arguments, the CUDA-else-CPU
chooser, ...) all write the same expression, `Rewriter.device_expr()`, which calls the owner found
here. In order:

1. the module a previous `audit --fix` created (its marker line, rules/fixes.toml `[device-owner]`);
2. an existing project helper that already returns the device: a module-level `def get_device()`
   (or `get_default_device` / `select_device`) with no required argument, whose returns are
   device values (`torch.device(...)`, `torch.accelerator...`, a device string, a name);
3. a module-level `DEVICE = ...` constant of such a value;
4. else a module created by the fix run (`device_choice.py`, or `_lockin_device.py` when that
   name is taken; never over a file), at the package root, or beside the scripts of a
   script-only repository: an environment override first (`<PROJECT>_DEVICE`), then the
   accelerator torch finds (the form the project's torch floor has), then the CPU. A script
   repository gets the same module beside each of its other folders of scripts too
   (`DeviceOwner.beside`): a script run as `python folder/script.py` imports from its folder only.

Conservative about "found": a helper that itself hard-codes CUDA (`return "cuda"`, the
CUDA-else-CPU idiom) is not an owner (its own tie is rewritten to the created module), and test
files never own it. A project that builds an `Accelerator` (accelerate) or a `Fabric` (lightning)
gets no module: that object owns the device. A tie where the object certainly exists (built before
it in the same function or module, or in the class's `__init__`: auditor/fix/accelerator_scope.py)
becomes `accelerator.device`, unsafe (on NVIDIA it is the device accelerate chose, which the
project's configuration may make another than `.cuda()`'s); the others are held with a reason naming it.

Files are read through the sandbox (never executed); a file the parse guard does not vouch for
is skipped. The owner is part of each file's facts (auditor/analysis/project.py), so of the cache
key wherever fixes are cached."""

from __future__ import annotations

import ast
import os
import re
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from auditor.analysis.project import is_test_path
from auditor.fix.floor import version_tuple
from auditor.read import toml_guard
from auditor.read.text import SourceError, decode_python
from auditor.sandbox.deep import run_deep
from auditor.sandbox.parse_guard import guard_python
from auditor.sandbox.safe_files import TreeFile, WriteRefused
from auditor.targets import catalogue_dir

if TYPE_CHECKING:
    from collections.abc import Iterable

    from auditor.catalogue import Catalogue
    from auditor.fix.floor import TorchFloor

MAX_OWNER_FILE_BYTES = 512 * 1024  # a device helper is a small module; larger files are not read for it
# Folders no owner is looked for in, and that hold no package of the project (test code: is_test_path).
_PACKAGING = ("pyproject.toml", "setup.py", "setup.cfg")  # a folder with one installs its packages
_SKIPPED_FOLDERS = frozenset({"docs", "doc", "examples", "benchmarks", "build", "dist",
                              ".git", ".venv", "venv", "node_modules", "site-packages"})


@dataclass(frozen=True)
class DeviceOwner:
    """Where the project's device is chosen, and how a file reaches it."""

    module: str  # dotted import path from the importing files' point of view ("mypkg.device_choice", "device_choice")
    function: str  # callable returning a torch.device ("get_device"); for a constant, its name ("DEVICE")
    path: str  # repo-relative file path of the owner ("mypkg/device_choice.py")
    created: bool  # True when audit --fix creates the module (it does not exist yet)
    index_function: str | None  # callable(index) -> torch.device of the same type at that index; None when none
    kind: str = "function"  # function | constant | accelerator (an Accelerator/Fabric owns it: nothing rewritten)
    returns_device: bool = True  # calls give a torch.device (not a string): `.type` may be read from them
    content: str = ""  # created: the module's text
    env: str = ""  # created: the variable that overrides the choice (`MYPKG_DEVICE`)
    reason: str = ""  # kind accelerator: why the ties stay as they are
    fix_tests: bool = False  # --fix-tests: test code is rewritten too
    ours: bool = False  # the module audit --fix writes (created now, or found by its marker line)
    # A script repository's other script folders: (folder, module file, created, whether the packages in
    # that folder reach it: no packaging file there), one module beside each group of scripts (a script
    # imports only what sits in its own folder); see `for_folder`.
    beside: tuple[tuple[str, str, bool, bool], ...] = ()

    @property
    def expression(self) -> str:
        """The owner as written at a use: `get_device()`, or `DEVICE` for a constant."""
        return self.function if self.kind == "constant" else f"{self.function}()"

    @property
    def folder(self) -> str:
        """The repo-relative folder of the owner ("" at the top)."""
        return os.path.dirname(self.path)

    @property
    def script(self) -> bool:
        """A script-level module (no package): importable only from files beside it."""
        return "." not in self.module

    def for_folder(self, folder: str, package: bool = False) -> DeviceOwner | None:
        """The owner a script in `folder` (`package`: a module of a package there) imports: this one in
        its own folder (and for a package owner), else the module audit writes beside that folder's
        scripts; None when that folder has none, or for a package there that a packaging file installs
        (run from anywhere, it does not see the folder)."""
        if not self.script or folder == self.folder:
            return self
        for other, path, created, packages in self.beside:
            if other == folder and (packages or not package):
                module = path.rsplit("/", 1)[-1][:-3]
                return replace(self, module=module, path=path, created=created, beside=())
        return None

    def key(self) -> str:
        """What cached fixes depend on."""
        folders = ",".join(f"{path}:{int(created)}:{int(packages)}" for _, path, created, packages in self.beside)
        return (f"{self.kind}:{self.module}:{self.function}:{self.index_function or ''}:{int(self.created)}:"
                f"{int(self.returns_device)}:{self.env}:{int(self.fix_tests)}:{int(self.ours)}:{folders}")


def owner_table(catalogue: Catalogue) -> dict:
    return catalogue.table("fixes").get("device-owner", {})


def find_device_owner(root: str, files: Iterable[str], floor: TorchFloor, catalogue: Catalogue,
                      max_bytes: int = MAX_OWNER_FILE_BYTES) -> DeviceOwner | None:
    """The project's device owner. `files` are the absolute paths of the scanned Python files
    (under `root`). None when no module can be created (both names taken)."""
    return run_deep(_find, root, sorted(files), floor, catalogue, max_bytes)


def _find(root: str, files: list[str], floor: TorchFloor, catalogue: Catalogue, max_bytes: int) -> DeviceOwner | None:
    table = owner_table(catalogue)
    relative = [r for r in (_relative(root, path) for path in files) if r is not None]
    found: list[tuple[int, int, str, DeviceOwner]] = []  # (rank, depth, path, owner): the best first
    accelerator = ""
    for rel in relative:
        if is_test_path(rel) or any(part in _SKIPPED_FOLDERS for part in rel.split("/")[:-1]):
            continue
        text = _read(root, rel, max_bytes)
        if text is None or not _may_own(text, table):
            continue
        tree = _parse(text)
        if tree is None:
            continue
        if not accelerator and _builds_accelerator(tree, table):
            accelerator = rel
        for rank, owner in _owners_in(tree, text, rel, root, table):
            found.append((rank, rel.count("/"), rel, owner))
    if found:
        return _with_folders(min(found, key=lambda item: item[:3])[3], root, relative, floor, table, max_bytes)
    if accelerator:
        return DeviceOwner("", "", accelerator, False, None, kind="accelerator",
                           reason=f"the project chooses its device with an Accelerator/Fabric object ({accelerator}): "
                                  f"pass `accelerator.device` (or `fabric.device`) here; it is written only where that object is "
                                  f"built before the tie (in the same function or module, or in the class's `__init__`)")
    created = _to_create(root, relative, floor, table)
    return _with_folders(created, root, relative, floor, table, max_bytes) if created is not None else None


# -- reading ---------------------------------------------------------------------------------------
def _relative(root: str, path: str) -> str | None:
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    return None if rel.startswith("..") or os.path.isabs(rel) else rel.replace(os.sep, "/")


def _read(root: str, rel: str, max_bytes: int) -> str | None:
    try:
        with TreeFile(os.path.join(root, rel), root) as handle:
            data = handle.read(max_bytes)
        return decode_python(data)
    except (WriteRefused, OSError, SourceError):
        return None


def _may_own(text: str, table: dict) -> bool:
    """Whether the file can hold an owner, before it is parsed: a module-level definition of an owner
    function or constant, the created module's marker, or an Accelerator/Fabric built or aliased
    (a bare substring test let every `tensor.get_device()` through: a third of timm parsed again)."""
    return _owner_pattern(tuple(table.get("functions", ())), tuple(table.get("constants", ())),
                          table.get("marker", "\0"), tuple(name.rsplit(".", 1)[-1]
                                                             for name in table.get("accelerator_objects", ()))
                          ).search(text) is not None


@lru_cache(maxsize=4)
def _owner_pattern(functions: tuple[str, ...], constants: tuple[str, ...], marker: str,
                   objects: tuple[str, ...]) -> re.Pattern[str]:
    def names(words: tuple[str, ...]) -> str:
        return "|".join(map(re.escape, words)) or "(?!)"

    return re.compile(rf"^def\s+(?:{names(functions)})\s*\(|^(?:{names(constants)})\s*=|{re.escape(marker)}"
                      rf"|\b(?:{names(objects)})\s*(?:\(|\s+as\s)", re.MULTILINE)


def _parse(text: str) -> ast.Module | None:
    """CPython's parse, only of text the parse guard vouches for (never executed)."""
    try:
        if guard_python(text):
            return None  # the guard wants it parsed in isolation: not worth it for this question
        return ast.parse(text)
    except (SourceError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


# -- owners in a file ------------------------------------------------------------------------------
def _owners_in(tree: ast.Module, text: str, rel: str, root: str, table: dict) -> list[tuple[int, DeviceOwner]]:
    module = _module_path(root, rel)
    if module is None:
        return []
    marker = table.get("marker", "\0") in text
    functions = set(table.get("functions", ()))
    constants = set(table.get("constants", ()))
    index_names = set(table.get("index_functions", ()))
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    found: list[tuple[int, DeviceOwner]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in functions and not _required_args(node.args):
            returns = [n.value for n in ast.walk(node) if isinstance(n, ast.Return)]
            if not returns or any(r is None or not _device_value(r) for r in returns):
                continue
            if not marker and _hard_codes_cuda(node):
                continue
            index = next((name for name in sorted(index_names & defined)), None) if marker else None
            returns_device = all(_device_object(r) for r in returns)
            found.append((0 if marker else 1, DeviceOwner(module, node.name, rel, False, index,
                                                           returns_device=returns_device, ours=marker)))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in constants and _device_value(node.value) and not _hard_codes_cuda(node):
            found.append((2, DeviceOwner(module, node.targets[0].id, rel, False, None, kind="constant",
                                         returns_device=_device_object(node.value))))
    return found


def _required_args(args: ast.arguments) -> bool:
    positional = [*args.posonlyargs, *args.args]
    return len(positional) > len(args.defaults) or any(d is None for d in args.kw_defaults)


def _device_value(node: ast.expr) -> bool:
    """A value that can stand where a device goes: a device object, a device string, a name."""
    if isinstance(node, (ast.BoolOp, ast.IfExp)):
        parts = node.values if isinstance(node, ast.BoolOp) else [node.body, node.orelse]
        return all(_device_value(part) for part in parts)
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return isinstance(node, (ast.Name, ast.JoinedStr)) or _device_object(node)


def _device_object(node: ast.expr) -> bool:
    """`torch.device(...)`, `torch.accelerator.current_accelerator(...)`, `get_device()`, `x or y` of those."""
    if isinstance(node, ast.BoolOp):
        return all(_device_object(value) for value in node.values)
    if isinstance(node, ast.IfExp):
        return _device_object(node.body) and _device_object(node.orelse)
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in ("device", "current_accelerator") or name.endswith("_device")


_CUDA_LITERAL = re.compile(r"^cuda(:\d+)?$")
_OTHER_DEVICE = re.compile(r"^(mps|xpu|npu|hpu|xla|cpu)(:\d+)?$")


def _hard_codes_cuda(node: ast.AST) -> bool:
    """A "cuda" device string (or `torch.cuda.is_available()` picking between CUDA and the CPU) with
    no other accelerator named: the helper is itself a tie, not the one place."""
    strings = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    cuda = any(_CUDA_LITERAL.match(s) for s in strings)
    others = any(_OTHER_DEVICE.match(s) and not s.startswith("cpu") for s in strings) or any(
        isinstance(n, ast.Attribute) and n.attr in ("accelerator", "mps", "xpu", "npu") for n in ast.walk(node))
    return cuda and not others


def _builds_accelerator(tree: ast.Module, table: dict) -> bool:
    """accelerate's Accelerator or lightning's Fabric imported and built (`Accelerator(...)`): the object
    that owns the device."""
    wanted = set(table.get("accelerator_objects", ()))
    imported: dict[str, str] = {}  # local name -> what it is (`Accelerator`, or the module `lightning` as `L`)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.update((alias.asname or alias.name, f"{node.module}.{alias.name}") for alias in node.names)
        elif isinstance(node, ast.Import):
            imported.update((alias.asname or alias.name.split(".")[0], alias.name if alias.asname else
                             alias.name.split(".")[0]) for alias in node.names)
    return any(isinstance(node, ast.Call) and _dotted(node.func, imported) in wanted for node in ast.walk(tree))


def _dotted(func: ast.expr, imported: dict[str, str]) -> str:
    """`L.Fabric` -> "lightning.Fabric" through the file's imports ("" for other calls)."""
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.insert(0, func.attr)
        func = func.value
    if not isinstance(func, ast.Name) or func.id not in imported:
        return ""
    return ".".join([imported[func.id], *parts])


def _module_path(root: str, rel: str) -> str | None:
    """The dotted module path of `rel`: its package chain (folders with __init__.py) and its name.
    A file outside any package is a script-level module (its bare name, importable beside it); a
    package below plain folders other than src/ is not importable in a way known here (None)."""
    parts = rel[:-3].split("/") if rel.endswith(".py") else None
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    folders, name = parts[:-1], parts[-1]
    chain: list[str] = []
    for depth in range(len(folders), 0, -1):
        if not os.path.isfile(os.path.join(root, *folders[:depth], "__init__.py")):
            break
        chain.insert(0, folders[depth - 1])
    outside = folders[:len(folders) - len(chain)]
    if chain and outside not in ([], ["src"]):
        return None
    dotted = chain if name == "__init__" else [*chain, name]
    return ".".join(dotted) or None


# -- the module to create --------------------------------------------------------------------------
def _to_create(root: str, relative: list[str], floor: TorchFloor, table: dict) -> DeviceOwner | None:
    home, package = _home(root, relative)
    homes = [home]
    if not package:  # a script repository: another folder of scripts when every name is taken there
        counts = Counter(os.path.dirname(rel) for rel in relative if _script_file(root, rel))
        homes += sorted((f for f in counts if f != home), key=lambda f: (-counts[f], f))
    for folder in homes:
        for name in table.get("module_names", ()):
            rel = f"{folder}/{name}.py" if folder else f"{name}.py"
            if os.path.lexists(os.path.join(root, rel)) or os.path.lexists(os.path.join(root, folder, name)):
                continue  # never over a file (nor a package of that name)
            env = f"{project_name(root)}_DEVICE"
            function, index = table.get("function", "get_device"), table.get("index_function", "device_at")
            content = module_text(table, floor, env, function, index)
            module = f"{package}.{name}" if package else name
            return DeviceOwner(module, function, rel, True, index, content=content, env=env, ours=True)
    return None


def _with_folders(owner: DeviceOwner, root: str, relative: list[str], floor: TorchFloor, table: dict,
                  max_bytes: int) -> DeviceOwner:
    """A script-level module of ours, with one module for each other folder of scripts: a script run
    as `python folder/script.py` imports from its own folder only (pytorch/examples: each example is
    a program of its own), so one module elsewhere would leave its ties raising. Each is the module
    audit wrote there (its marker) or one to create under the first free name; a folder where every
    name is taken by another file gets none (its ties keep the reason)."""
    if not owner.script or not owner.ours:
        return owner
    folders = sorted({os.path.dirname(rel) for rel in relative if _script_file(root, rel)} - {owner.folder})
    marker = table.get("marker", "\0")
    content = owner.content
    if not content:  # found by its marker: the others are written as a created one would be
        content = module_text(table, floor, f"{project_name(root)}_DEVICE", owner.function,
                              owner.index_function or table.get("index_function", "device_at"))
    beside = []
    for folder in folders:
        packages = not any(os.path.isfile(os.path.join(root, folder, f)) for f in _PACKAGING)
        for name in table.get("module_names", ()):
            rel = f"{folder}/{name}.py" if folder else f"{name}.py"
            if os.path.lexists(os.path.join(root, folder, name)):
                continue  # a package of that name
            if not os.path.lexists(os.path.join(root, rel)):
                beside.append((folder, rel, True, packages))
                break
            text = _read(root, rel, max_bytes)
            if text is not None and marker in text:
                beside.append((folder, rel, False, packages))
                break
    return replace(owner, beside=tuple(beside), content=content) if beside else owner


def _script_file(root: str, rel: str) -> bool:
    """A script of the project (outside any package, not test code nor in docs/examples/...)."""
    parts = rel.split("/")
    return rel.endswith(".py") and not is_test_path(rel) and not any(part in _SKIPPED_FOLDERS for part in parts[:-1]) \
        and not os.path.isfile(os.path.join(root, *parts[:-1], "__init__.py"))


def _home(root: str, relative: list[str]) -> tuple[str, str]:
    """(repo-relative folder, dotted package) where the created module goes: the project's package
    root (its top-level package, also under src/), else the folder holding most scripts. A
    repository with scripts at the top and no packaging file is a script repository even when it
    has packages (`models/`): the module goes beside the scripts, where they and those packages
    (imported from the scripts' folder) reach it."""
    packages: dict[str, int] = {}
    scripts: dict[str, int] = {}
    for rel in relative:
        if is_test_path(rel):
            continue
        parts = rel.split("/")
        top = parts[1] if parts[0] == "src" and len(parts) > 2 else parts[0]
        top_folder = f"src/{top}" if parts[0] == "src" and len(parts) > 2 else top
        if len(parts) > 1 and top not in _SKIPPED_FOLDERS and top.isidentifier() \
                and os.path.isfile(os.path.join(root, top_folder, "__init__.py")):
            packages[top_folder] = packages.get(top_folder, 0) + 1
        elif not any(part in _SKIPPED_FOLDERS for part in parts[:-1]):
            folder = "/".join(parts[:-1])
            scripts[folder] = scripts.get(folder, 0) + 1
    packaged = any(os.path.isfile(os.path.join(root, f)) for f in _PACKAGING)
    if not packaged and scripts.get(""):
        return "", ""  # scripts at the top and no packaging: `models/` is the scripts' own package, not the project
    if packages:
        name = project_name(root).lower()
        best = max(packages, key=lambda f: (f.rsplit("/", 1)[-1] == name, packages[f], f == min(packages)))
        return best, best.rsplit("/", 1)[-1]
    if scripts:
        return max(sorted(scripts), key=lambda f: (scripts[f], f == "")), ""
    return "", ""


def project_name(root: str) -> str:
    """The project's name, upper-cased with every other character `_`: from pyproject.toml, setup.cfg
    or setup.py, else the folder's name."""
    name = _declared_name(root) or os.path.basename(os.path.abspath(root)) or "PROJECT"
    cleaned = re.sub(r"[^A-Za-z0-9]", "_", name).upper().strip("_") or "PROJECT"
    return "_" + cleaned if cleaned[0].isdigit() else cleaned


def _declared_name(root: str) -> str | None:
    text = _read_small(root, "pyproject.toml")
    if text:
        try:
            data = toml_guard.loads(text)
            project = data.get("project") if isinstance(data.get("project"), dict) else {}
            poetry = data.get("tool", {}).get("poetry", {}) if isinstance(data.get("tool"), dict) else {}
            for value in (project.get("name"), poetry.get("name") if isinstance(poetry, dict) else None):
                if isinstance(value, str) and value.strip():
                    return value.strip()
        except (ValueError, RecursionError, AttributeError):
            pass
    for file, pattern in (("setup.cfg", r"(?m)^\s*name\s*=\s*([\w.-]+)"),
                          ("setup.py", r"""\bname\s*=\s*["']([\w.-]+)["']""")):
        text = _read_small(root, file)
        match = re.search(pattern, text or "")
        if match:
            return match.group(1)
    return None


def _read_small(root: str, name: str) -> str | None:
    try:
        with TreeFile(os.path.join(root, name), root) as handle:
            return handle.read(256 * 1024).decode("utf-8", errors="replace")
    except (WriteRefused, OSError):
        return None


def module_text(table: dict, floor: TorchFloor, env: str, function: str, index: str) -> str:
    """The created module: the catalogue's template, with the choice the project's torch floor has."""
    from string import Template


    template = (catalogue_dir() / "templates" / table.get("template", "device_choice.py.tmpl")).read_text("utf-8")
    forms = table.get("choice", {})
    since = max((v for v in forms if floor.allows(v)), key=version_tuple, default=None)
    choice = forms.get(since, "") if since is not None else ""
    return Template(template).substitute(marker=table.get("marker", ""), env=env, function=function,
                                         index_function=index, choice=choice.strip("\n"))
