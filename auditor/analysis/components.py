"""Components of a scanned repository: the parts a team ships and runs, from its own files, by path.

The installable packages come from the packaging files at the scan root, read as text and never
run: pyproject.toml (`[tool.setuptools] packages` / `packages.find`, `[tool.poetry] packages`,
hatch's wheel `packages`, flit's module, `[project] name`), setup.cfg (`[options] packages`,
`packages.find`) and setup.py (`packages=[...]`, `find_packages(where=..., exclude=...)`,
`package_dir`), else a `src/` layout or a top-level folder with an `__init__.py` named for the
project. Every other file takes a role from its outermost folder or its own name (examples, scripts,
tests, benchmarks, docs, containers, ci: rules/components.toml); what is left is the repository's
programs when it ships no package, else `other`. A user's `[tool.lockin-auditor.components]` comes
first.

Assignment is per path and memoised: no scanned file is read again. The headline verdict and score
judge the shipped components (auditor.report.model)."""

from __future__ import annotations

import fnmatch
import os
import re
import tomllib
from dataclasses import dataclass, field

from auditor.catalogue import load_table
from auditor.read import toml_guard
from auditor.read.text import SourceError, read_regular_file

PACKAGE, PROGRAM, OTHER = "package", "program", "other"
# openings only: the span to the closing bracket is found once (a regex spanning it rescanned the
# rest of the file from every unclosed opening)
_SETUP_PACKAGES = re.compile(r"""\bpackages\s*=\s*\[""")
_FIND_PACKAGES = re.compile(r"""\bfind(?:_namespace)?_packages\s*\(""")
_STRING = re.compile(r"""["']([^"']+)["']""")
_KEYWORD_LIST = r"""\b{}\s*=\s*[\[(]([^\])]*)[\])]"""
_KEYWORD_STRING = r"""\b{}\s*=\s*["']([^"']+)["']"""
_PACKAGE_DIR = re.compile(r"""\bpackage_dir\s*=\s*\{\s*["']{2}\s*:\s*["']([^"']+)["']""")
_LIMIT = 2_000_000  # a packaging file larger than this is not read


@dataclass(frozen=True)
class Component:
    """One part of the repository: `paths` are folders or files relative to the scan root (a
    configured component: its globs)."""

    name: str
    kind: str
    paths: tuple[str, ...]
    shipped: bool

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "paths": list(self.paths)}


@dataclass(frozen=True)
class Configured:
    """A component the configuration names: `[tool.lockin-auditor.components] name = {paths, kind}`."""

    name: str
    kind: str
    globs: tuple[str, ...]


@dataclass
class _Rules:
    shipped: frozenset[str]
    folders: dict[str, str]  # folder name -> kind
    files: list[tuple[re.Pattern, str]]  # (the kind's file-name patterns as one regex, kind)
    packaging: re.Pattern
    kernels: tuple[str, ...]
    fallback: frozenset[str]  # what the headline judges when nothing is shipped
    requirement_roles: dict[str, str] = field(default_factory=dict)  # name word -> kind (requirements/test_gpu.txt)
    never_packaged: frozenset[str] = frozenset()  # file roles no package installs, wherever they sit


def _rules() -> _Rules:
    table = load_table("components")
    folders = {name.lower(): kind for kind, names in table.get("folders", {}).items() for name in names}
    files = [(_globs(patterns), kind) for kind, patterns in table.get("files", {}).items()]
    return _Rules(frozenset(table.get("shipped", (PACKAGE, PROGRAM))), folders, files,
                  _globs(table.get("packaging", {}).get("files", ())),
                  tuple(table.get("kernels", {}).get("suffixes", ())),
                  frozenset(table.get("fallback", (OTHER, "scripts"))),
                  {word: kind for kind, words in table.get("requirement_roles", {}).items() for word in words},
                  frozenset(table.get("never_packaged", ())))


def _globs(patterns: list[str] | tuple[str, ...]) -> re.Pattern:
    """fnmatch patterns (lower-cased) as one compiled regex: a path is matched once per kind."""
    return re.compile("|".join(fnmatch.translate(p.lower()) for p in patterns) or r"(?!)")


def kinds() -> tuple[str, ...]:
    """The component kinds a configuration may name."""
    return tuple(load_table("components").get("kinds", ()))


@dataclass
class Layout:
    """The components of one scan and which one each path belongs to."""

    packages: dict[str, str]  # package folder (relative, POSIX) -> component name
    configured: tuple[Configured, ...] = ()
    subprojects: frozenset[str] = frozenset()  # folders below the root with a build of their own
    rules: _Rules = field(default_factory=_rules)
    _memo: dict[str, str] = field(default_factory=dict, repr=False)
    _seen: dict[str, tuple[str, set[str]]] = field(default_factory=dict, repr=False)  # name -> (kind, paths)

    @property
    def fallback(self) -> frozenset[str]:
        return self.rules.fallback

    @property
    def ships_package(self) -> bool:
        return bool(self.packages) or any(c.kind == PACKAGE for c in self.configured)

    def of(self, relative: str) -> str:
        """The component of a file, by its path relative to the scan root (POSIX)."""
        found = self._memo.get(relative)
        if found is None:
            name, kind, where = self._classify(relative)
            found = self._memo[relative] = name
            entry = self._seen.setdefault(name, (kind, set()))
            entry[1].add(where)
        return found

    def components(self) -> list[Component]:
        """The components files were assigned to, shipped ones first, then by name."""
        out = [Component(name, kind, tuple(sorted(paths)), kind in self.rules.shipped)
               for name, (kind, paths) in self._seen.items()]
        return sorted(out, key=lambda c: (not c.shipped, c.name))

    def _classify(self, relative: str) -> tuple[str, str, str]:
        """(name, kind, the folder or file that decided it)."""
        for item in self.configured:
            for glob in item.globs:
                if _matches(relative, glob):
                    return item.name, item.kind, glob
        parts = relative.split("/")
        base = parts[-1].lower()
        for pattern, kind in self.rules.files:  # a Dockerfile in xinference/deploy/docker/ is no module
            if kind in self.rules.never_packaged and pattern.match(base):
                return kind, kind, relative
        for depth in range(len(parts) - 1, 0, -1):  # the innermost package folder holding it
            folder = "/".join(parts[:depth])
            name = self.packages.get(folder)
            if name is not None:
                return name, PACKAGE, folder
        for depth, part in enumerate(parts[:-1]):  # the outermost folder with a role
            kind = self.rules.folders.get(part.lower())
            if kind is not None:
                return kind, kind, "/".join(parts[:depth + 1])
        if self._packaging(relative):
            role = self._requirement_role(base)
            if role is not None:
                return role, role, relative
            return self._headline(relative)
        for pattern, kind in self.rules.files:
            if pattern.match(base):
                return kind, kind, relative
        if self.ships_package:
            # native sources the package's build compiles, unless a sub-project's own build does
            # (liger_cute_kernels/ with its setup.py and CMakeLists.txt: another wheel)
            if base.endswith(self.rules.kernels) and not self._in_subproject(parts):
                return self._headline(relative)
            return OTHER, OTHER, parts[0] if len(parts) > 1 else relative
        return "programs", PROGRAM, parts[0] if len(parts) > 1 else relative

    def installs(self, relative: str) -> bool:
        """Whether a shipped component's file is installed or built with it, not run when a caller
        uses it: a packaging or requirements file at the top (or in requirements/), a native source."""
        return self._packaging(relative) or relative.lower().endswith(self.rules.kernels)

    def _packaging(self, relative: str) -> bool:
        lowered = relative.lower()
        return ("/" not in lowered or lowered.startswith("requirements/")) and bool(self.rules.packaging.match(lowered))

    def _in_subproject(self, parts: list[str]) -> bool:
        return any("/".join(parts[:depth]) in self.subprojects for depth in range(1, len(parts)))

    def _requirement_role(self, base: str) -> str | None:
        """The component a requirements file serves by its name (`requirements-test.txt`,
        `requirements/pytorch/test_gpu.txt`, `docs.txt`): what its own words say, if anything."""
        if not base.endswith((".txt", ".in")):
            return None
        words = re.split(r"[-_.]", base.rsplit(".", 1)[0])
        return next((self.rules.requirement_roles[w] for w in words if w in self.rules.requirement_roles), None)

    def _headline(self, relative: str) -> tuple[str, str, str]:
        """The first shipped component: a packaging file or a native source belongs to it."""
        for item in self.configured:
            if item.kind in self.rules.shipped:
                return item.name, item.kind, relative
        if self.packages:
            name = sorted(self.packages.values())[0]
            return name, PACKAGE, relative
        return "programs", PROGRAM, relative


def _matches(relative: str, glob: str) -> bool:
    """A glob matches the path, or names a folder that holds it."""
    glob = glob.strip().strip("/")
    if glob.startswith("./"):
        glob = glob[2:]
    return fnmatch.fnmatchcase(relative, glob) or relative.startswith(glob + "/") or \
        fnmatch.fnmatchcase(relative, glob + "/*")


_BUILD_FILES = frozenset({"setup.py", "pyproject.toml"})  # a folder holding one builds a distribution of its own


def layout_for(root: str, relatives: list[str], configured: tuple[tuple[str, str, tuple[str, ...]], ...] = ()) -> Layout:
    """The layout of the repository at `root`, whose scanned files are `relatives` (POSIX, from
    root); `configured`: the settings' (name, kind, globs)."""
    bases: list[str] = ["src"]
    folders = _package_folders(root, relatives, bases)
    builds = {r.rpartition("/")[0] for r in relatives if "/" in r and r.rpartition("/")[2].lower() in _BUILD_FILES}
    return Layout({folder: _dotted(folder, bases) for folder in folders},
                  tuple(Configured(name, kind, tuple(globs)) for name, kind, globs in configured),
                  frozenset(builds))


# -- the packages: what the packaging files at the root say, else the layout --------------------------

def _dotted(folder: str, bases: list[str]) -> str:
    """A package folder's dotted name: its path below the base folder the metadata names (src/, a
    `where`, a `package-dir`, poetry's `from`)."""
    for base in sorted({b.strip("/").removeprefix("./") for b in bases if b.strip("/") not in ("", ".")}, key=len, reverse=True):
        if folder.startswith(base + "/"):
            return folder[len(base) + 1:].replace("/", ".")
    return folder.replace("/", ".")


def _package_folders(root: str, relatives: list[str], bases: list[str]) -> list[str]:
    inits = {r.rpartition("/")[0] for r in relatives if r.endswith("/__init__.py")}
    pyproject = _toml(os.path.join(root, "pyproject.toml"))
    declared = _declared(root, pyproject, inits, bases)
    if declared is not None:
        return _tops(declared)
    name = _project_name(root, pyproject)
    tops = sorted({folder for folder in inits if "/" not in folder} |
                  {folder for folder in inits if folder.count("/") == 1 and folder.startswith("src/")})
    src = [folder for folder in tops if folder.startswith("src/")]
    if src:
        return src
    if name:
        named = [folder for folder in tops if _normal(folder) == name]
        if named:
            return named
    return []


def _declared(root: str, pyproject: dict, inits: set[str], bases: list[str]) -> list[str] | None:
    """Package folders the packaging metadata names; None when it names none."""
    tool = pyproject.get("tool", {}) if isinstance(pyproject.get("tool"), dict) else {}
    setuptools = tool.get("setuptools", {}) if isinstance(tool.get("setuptools"), dict) else {}
    base = ""
    package_dir = setuptools.get("package-dir")
    if isinstance(package_dir, dict) and isinstance(package_dir.get(""), str):
        base = package_dir[""].strip("/")
        bases.append(base)
    packages = setuptools.get("packages")
    if isinstance(packages, list) and all(isinstance(p, str) for p in packages) and packages:
        return [_join(base, p.replace(".", "/")) for p in packages]
    found = packages.get("find") if isinstance(packages, dict) else None
    if isinstance(found, dict):
        where = found.get("where") if isinstance(found.get("where"), list) else [base or "."]
        bases.extend(str(w) for w in where)
        # pyproject's `find` is setuptools' find_namespace: a package's folders above need no __init__.py
        return _find(inits, [str(w) for w in where], _strs(found.get("include")), _strs(found.get("exclude")),
                     namespaces=found.get("namespaces", True) is not False)
    poetry = tool.get("poetry", {}) if isinstance(tool.get("poetry"), dict) else {}
    if isinstance(poetry.get("packages"), list):
        folders = [_join(str(p.get("from", "")), str(p["include"])) for p in poetry["packages"]
                   if isinstance(p, dict) and isinstance(p.get("include"), str)]
        bases.extend(str(p["from"]) for p in poetry["packages"] if isinstance(p, dict) and "from" in p)
        if folders:
            return folders
    wheel = tool.get("hatch", {}).get("build", {}).get("targets", {}).get("wheel", {}) \
        if isinstance(tool.get("hatch"), dict) else {}
    if isinstance(wheel, dict) and _strs(wheel.get("packages")):
        return [p.strip("/") for p in _strs(wheel.get("packages"))]
    flit = tool.get("flit", {}).get("module", {}) if isinstance(tool.get("flit"), dict) else {}
    if isinstance(flit, dict) and isinstance(flit.get("name"), str):
        name = flit["name"].replace(".", "/")
        return [f for f in (name, f"src/{name}") if f in inits] or [name]
    return _setup_cfg(root, inits, bases) or _setup_py(root, inits, bases)


def _setup_cfg(root: str, inits: set[str], bases: list[str]) -> list[str] | None:
    """setup.cfg by the linear line parser the readers use (configparser backtracks on hostile lines)."""
    text = _text(os.path.join(root, "setup.cfg"))
    if not text:
        return None
    # the readers' package costs a warm run 6 ms of imports: only for a repository with a setup.cfg
    from auditor.readers.setup_cfg import parse_ini

    sections, _problems = parse_ini(text)

    def get(section: str, key: str, fallback: str = "") -> str:
        lines = sections.get(section, {}).get(key)
        return " ".join(line for _, _, line in lines).strip() if lines else fallback

    packages = get("options", "packages")
    base = get("options", "package_dir")
    base = base.partition("=")[2].strip().strip("/") if "=" in base else ""
    bases.append(base)
    if packages.startswith("find"):
        find = "options.packages.find"
        where = get(find, "where", base or ".").split()
        bases.extend(where)
        return _find(inits, where, get(find, "include").split(), get(find, "exclude").split())
    return [_join(base, n.replace(".", "/")) for n in packages.split()] or None


def _setup_py(root: str, inits: set[str], bases: list[str]) -> list[str] | None:
    """setup.py read as text: a literal `packages=[...]` or a `find_packages(...)` call."""
    text = _text(os.path.join(root, "setup.py"))
    if not text:
        return None
    base_match = _PACKAGE_DIR.search(text)
    base = base_match.group(1).strip("/") if base_match else ""
    bases.append(base)
    call, args = _span(text, _FIND_PACKAGES, ")")
    if call is not None:
        where = re.search(_KEYWORD_STRING.format("where"), args)
        positional = re.match(r"""\s*["']([^"']+)["']""", args)
        folder = where.group(1) if where else positional.group(1) if positional else (base or ".")
        bases.append(folder)
        include = re.search(_KEYWORD_LIST.format("include"), args)
        exclude = re.search(_KEYWORD_LIST.format("exclude"), args)
        return _find(inits, [folder], _STRING.findall(include.group(1)) if include else [],
                     _STRING.findall(exclude.group(1)) if exclude else [], namespaces="namespace" in call.group(0))
    literal, listed = _span(text, _SETUP_PACKAGES, "]")
    if literal is not None:
        names = _STRING.findall(listed)
        return [_join(base, n.replace(".", "/")) for n in names] or None
    return None


def _span(text: str, opening: re.Pattern, closer: str) -> tuple[re.Match | None, str]:
    """The first opening and the text up to its closer; (None, "") when there is none or it is
    never closed (then no later opening is closed either)."""
    found = opening.search(text)
    end = -1 if found is None else text.find(closer, found.end())
    return (None, "") if found is None or end < 0 else (found, text[found.end():end])


def _find(inits: set[str], where: list[str], include: list[str], exclude: list[str],
          namespaces: bool = False) -> list[str]:
    """setuptools' find_packages over the scanned `__init__.py` folders: dotted names under each
    `where`, kept by `include` (default all) and dropped by `exclude`; `namespaces`: the folders
    above a package need no `__init__.py` (find_namespace_packages)."""
    found = []
    for place in where:
        prefix = "" if place.strip("/") in ("", ".") else place.strip("/").removeprefix("./") + "/"
        below = {f[len(prefix):] for f in inits if f.startswith(prefix)}
        for inner in sorted(below):
            dotted = inner.replace("/", ".")
            chain = dotted.split(".")
            if not all(p.isidentifier() for p in chain):
                continue
            if not namespaces and not all("/".join(chain[:i]) in below for i in range(1, len(chain))):
                continue  # find_packages descends only through packages
            if include and not any(fnmatch.fnmatchcase(dotted, p) for p in include):
                continue
            if any(fnmatch.fnmatchcase(dotted, p) for p in exclude):
                continue
            found.append(prefix + inner)
    return found


def _tops(folders: list[str]) -> list[str]:
    """The outermost of the folders (a package's subpackages are the package)."""
    ordered = sorted({f.strip("/") for f in folders if f.strip("/")}, key=lambda f: (f.count("/"), f))
    tops: list[str] = []
    for folder in ordered:
        if not any(folder.startswith(top + "/") for top in tops):
            tops.append(folder)
    return sorted(tops)


def _project_name(root: str, pyproject: dict) -> str:
    project = pyproject.get("project")
    name = project.get("name") if isinstance(project, dict) else None
    if not isinstance(name, str):
        match = re.search(_KEYWORD_STRING.format("name"), _text(os.path.join(root, "setup.py")))
        name = match.group(1) if match else os.path.basename(os.path.abspath(root))
    return _normal(name)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name.rpartition("/")[2]).lower()


def _join(base: str, path: str) -> str:
    base, path = base.strip("/").removeprefix("./"), path.strip("/")
    return f"{base}/{path}" if base and base != "." else path


def _strs(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _text(path: str) -> str:
    """A packaging file's text, or "" (missing, a link, not a regular file, too large)."""
    try:
        return read_regular_file(path, _LIMIT).decode("utf-8", errors="replace")
    except (OSError, SourceError):
        return ""


def _toml(path: str) -> dict:
    text = _text(path)
    if not text:
        return {}
    try:
        return toml_guard.loads(text)  # the checkout's TOML: no key shape tomllib is quadratic in (D8)
    except (tomllib.TOMLDecodeError, RecursionError):  # a hostile or broken file: no packages from it
        return {}
