"""What the project around a file says about its findings, computed once per scan in the parent
process and again, lazily, in each worker (the answers depend only on the file system, not on
which files a run scans, so a pre-commit batch and a full run agree):

- test-only paths (tests/, test_*.py, conftest.py, benchmarks/);
- the project's own top-level packages and the dotted package of each file (an `__init__.py`
  chain, plus the folders with an `__init__.py` beside pyproject.toml / setup.py / setup.cfg or in
  its src/, plus the distribution name), so a GPU library's imports of itself are not "use of a
  GPU-only library";
- the compiled extension modules its setup.py builds with `CUDAExtension(...)`, so importing them
  is reported as the CUDA tie it is, and whether its build files build for HIP too (a CUDA kernel
  with inline PTX fails on ROCm unless someone ported it);
- backend modules: a module or folder named for CUDA beside siblings named for other devices
  (platforms/cuda.py beside platforms/xpu.py), read from the folder listing.

Nothing here executes or imports the project; setup.py and pyproject.toml are read as text.
`FileFacts.key` is the part of the facts a cached result depends on (see auditor.cache.reuse / auditor.cache.results)."""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from auditor import targets
from auditor.catalogue import Catalogue, load_table
from auditor.read import toml_guard
from auditor.read.text import SourceError, read_regular_file

if TYPE_CHECKING:
    from collections.abc import Iterable

    from auditor.fix.device_owner import DeviceOwner

_SPLIT = re.compile(r"[_\-.]+")
_CUDA_EXTENSION = re.compile(r"""CUDAExtension\(\s*(?:name\s*=\s*)?["']([\w.]+)["']""")
_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg")
_MARKER_NAMES = frozenset({*_MARKERS, "__init__.py"})
_MODULE_SUFFIXES = (".py", ".pyi")
_KERNEL_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".h", ".hpp", ".mm", ".m", ".metal", ".sycl", ".hip", ".c")


@dataclass(frozen=True)
class BackendModule:
    """A file that is the NVIDIA (or another GPU-only) backend of a dispatch layer."""

    module: str  # what is named for CUDA: "platforms/cuda.py" or the folder "csrc/cuda"
    covered: frozenset[str]  # targets with a sibling backend module
    others: tuple[str, ...] = ()  # siblings for devices outside the targets (hpu, mlu, ...)
    # The folder whose modules a CUDA-named folder mirrors (ops/cutedsl/rms_norm.py beside
    # ops/rms_norm.py): the default implementation the other targets run.
    default: str = ""
    # The target a module named for another device serves (accelerators/xla.py beside cuda.py and
    # cpu.py: "tpu"); "" for the CUDA (or Triton) backend.
    serves: str = ""
    note: str = ""  # what the message says instead of its siblings (a lone `def cuda()` method)


@dataclass(frozen=True)
class FileFacts:
    test: bool = False
    package: str = ""  # the file's dotted package ("flash_attn.ops"), from its __init__.py chain
    own: frozenset[str] = frozenset()  # the project's own top-level packages
    extensions: frozenset[str] = frozenset()  # compiled extensions its CUDAExtension builds define
    backend: BackendModule | None = None
    gpu_library: bool = False  # the project is itself a GPU library (its own GPU modules are inventory)
    hip_build: bool = False  # its setup.py / CMakeLists.txt build for ROCm too (`torch.version.hip`, hipcc)
    experimental: str = ""  # the folder of opt-in modules it is in ("torchtune/dev", "composer/callbacks")
    opt_in_kind: str = "experimental"  # what that folder holds: "experimental" code or "plugins" a run adds
    # A fix run only: the project's device owner (auditor/fix/device_owner.py) and this file's path
    # relative to the scanned root, which decide how the device rewrites reach the owner.
    device_owner: DeviceOwner | None = None
    root_path: str = ""

    @property
    def key(self) -> str:
        """What a cached result of this file depends on beyond its bytes (empty for most files)."""
        cached = self.__dict__.get("_key")
        if cached is None:
            cached = self._make_key()
            object.__setattr__(self, "_key", cached)  # computed once: the cache asks for it per file
        return cached

    def _make_key(self) -> str:
        parts = []
        if self.own:  # the package matters only where own modules and extensions are looked up
            where = f";pkg={self.package}" if self.gpu_library or self.extensions else ""
            parts.append(f"own={_joined(self.own)};gpu={int(self.gpu_library)}{where}")
        if self.extensions:
            parts.append(f"ext={','.join(sorted(self.extensions))}")
        if self.hip_build:
            parts.append("hip")
        if self.experimental:
            parts.append(f"exp={self.experimental}:{self.opt_in_kind}")
        if self.backend is not None:
            parts.append(f"backend={self.backend.module}:{','.join(sorted(self.backend.covered))}:"
                         f"{','.join(self.backend.others)}:{self.backend.default}:{self.backend.serves}")
        if self.device_owner is not None:
            parts.append(f"device={self.device_owner.key()}@{self.root_path}")
        return "|".join(parts)


NO_FACTS = FileFacts()


@dataclass(frozen=True)
class _Config:
    gpu_words: frozenset[str]
    test_folders: frozenset[str]
    test_files: re.Pattern
    cuda_words: frozenset[str]
    sibling_words: dict[str, str]  # word -> target, or "" for devices outside the targets
    opt_in: dict[str, str]  # folder name -> what it holds: "experimental" (dev/, prototype/) or "plugins" (callbacks/)


_CONFIGS: dict[int, tuple[dict, _Config]] = {}
_OPT_IN_KINDS = ("experimental", "plugins")  # rules/contexts.toml [feature.<kind>] folders


def _config(table: dict) -> _Config:
    test = table.get("test", {})
    backend = table.get("backend_modules", {})
    words: dict[str, str] = {}
    for target, names in backend.get("siblings", {}).items():
        for name in names:
            words[name] = "" if target == "others" else target
    return _Config(
        gpu_words=frozenset(table.get("own_package", {}).get("library_words", ())),
        test_folders=frozenset(test.get("folders", ())),
        test_files=re.compile(test.get("files", r"$^")),
        cuda_words=frozenset(backend.get("cuda", ("cuda",))) | frozenset(backend.get("gpu", ())),
        sibling_words=words,
        opt_in={name: kind for kind in _OPT_IN_KINDS
                for name in table.get("feature", {}).get(kind, {}).get("folders", ())},
    )


def config(catalogue: Catalogue | None = None) -> _Config:
    """rules/contexts.toml's test paths and backend words, compiled once per catalogue."""
    table = catalogue.table("contexts") if catalogue is not None else load_table("contexts")
    cached = _CONFIGS.get(id(table))
    if cached is None or cached[0] is not table:
        cached = _CONFIGS[id(table)] = (table, _config(table))
    return cached[1]


def is_test_path(display: str, catalogue: Catalogue | None = None) -> bool:
    """tests/..., test_x.py, x_test.py, conftest.py, benchmarks/..., requirements-test.txt."""
    conf = config(catalogue)
    parts = display.split("/")
    return any(p.lower() in conf.test_folders for p in parts[:-1]) or bool(conf.test_files.match(parts[-1].lower()))


@dataclass
class ProjectInfo:
    """Facts about the files of one scan root; picklable, memoised per folder."""

    root: str
    # The files a directory walk found: a folder that holds one of them was listed, so whether it
    # holds an __init__.py or a setup.py is known without a stat (None: ask the file system).
    known: list[str] | tuple[str, ...] | None = field(default=None, repr=False)
    _folders: dict[str, tuple[str, str | None]] = field(default_factory=dict, repr=False)  # folder -> (package, project root)
    _projects: dict[str, tuple[frozenset[str], frozenset[str], bool, bool]] = field(default_factory=dict, repr=False)
    _listings: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)
    _facts: dict[tuple[str, str], FileFacts] = field(default_factory=dict, repr=False)
    # folder -> (the key its files share, whether the folder is named for CUDA, the CUDA words)
    _keys: dict[str, tuple[str, bool, re.Pattern]] = field(default_factory=dict, repr=False)
    _read_stamps: dict[str, tuple[int, int]] = field(default_factory=dict, repr=False)
    _file_keys: dict[str, str] = field(default_factory=dict, repr=False)  # files named for CUDA: their own key

    def __post_init__(self) -> None:
        self.root = os.path.abspath(self.root)
        self._listed: set[str] = set()
        self._markers: set[str] = set()  # the walk's __init__.py, setup.py, pyproject.toml, setup.cfg
        for path in self.known or ():
            folder, _, name = path.rpartition(os.sep)
            self._listed.add(folder)
            if name in _MARKER_NAMES:
                self._markers.add(path)

    def _exists(self, folder: str, name: str) -> bool:
        path = folder + os.sep + name
        if folder in self._listed:
            return path in self._markers
        return os.path.isfile(path)

    def __getstate__(self) -> dict:
        """Workers get the root only: they answer from the file system, lazily."""
        return {"root": self.root}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["root"])

    def facts(self, path: str, display: str) -> FileFacts:
        key = (path, display)
        found = self._facts.get(key)
        if found is None:
            found = self._facts[key] = self._compute(path, self._relative(path))
        return found

    def _relative(self, path: str) -> str:
        """The path from the scan root, POSIX: test folders and backend names are read from it, so
        the folders above the root (a display path's `..`, the user's home) never count."""
        absolute = path if os.path.isabs(path) else os.path.abspath(path)
        prefix = self.root.rstrip(os.sep) + os.sep
        relative = absolute[len(prefix):] if absolute.startswith(prefix) else os.path.basename(absolute)
        return relative.replace(os.sep, "/") if os.sep != "/" else relative

    def key(self, path: str, display: str) -> str:
        """`facts(path, display).key` without building the facts: a warm run asks it of every file."""
        folder = _folder_of(path)
        shared = self._keys.get(folder)
        if shared is None:
            words = _words_pattern(config().cuda_words)
            named = words.search(self._relative(path).lower().rpartition("/")[0]) is not None
            shared = self._keys[folder] = (self._shared(folder).key, named, words)
        key, named, words = shared
        if named or words.search(path[len(folder):].lower()) is not None:  # named for CUDA: maybe a backend module
            own = self._file_keys.get(path)
            if own is None:
                own = self._file_keys[path] = self.facts(path, display).key
            return own
        return key

    def _shared(self, folder: str) -> FileFacts:
        """What every file of a folder shares: its package, the project's packages and extensions."""
        folder = os.path.abspath(folder)
        package, project = self._folder(folder)
        own, extensions, gpu, hip = (self._project(project) if project is not None
                                     else (frozenset(), frozenset(), False, False))
        if package:
            parts = package.split(".")
            if parts[0] not in own:  # a package the project root does not show (no marker above it)
                top = folder
                for _ in parts[1:]:
                    top = os.path.dirname(top)
                own = own | {parts[0]}
                gpu = gpu or self._gpu_package(top, parts[0])
        return FileFacts(package=package, own=own, extensions=extensions, gpu_library=gpu, hip_build=hip,
                         **self._opt_in(folder))

    def _opt_in(self, folder: str) -> dict[str, str]:
        """The folder of opt-in modules (rules/contexts.toml [feature.experimental], [feature.plugins])
        that `folder` is in, below the scan root's top folders ("torchtune/dev", "composer/callbacks"),
        as FileFacts fields; none if it is in none. A top folder is a component of its own (a
        repository's dev/ tooling), not a feature."""
        parts = self._relative(os.path.join(folder, "x")).split("/")[:-1]
        names = config().opt_in
        for at in range(1, len(parts)):
            kind = names.get(parts[at].lower())
            if kind is not None:
                return {"experimental": "/".join(parts[:at + 1]), "opt_in_kind": kind}
        return {}

    def _compute(self, path: str, relative: str) -> FileFacts:
        shared = self._shared(os.path.dirname(path))
        return replace(shared, test=is_test_path(relative), backend=self._backend(path, relative, config()))

    # -- packages and projects ----------------------------------------------------------------------
    def _inside(self, folder: str) -> bool:
        return folder == self.root or folder.startswith(self.root + os.sep)

    def _folder(self, folder: str) -> tuple[str, str | None]:
        """(dotted package of a module in `folder`, the nearest project root at or above it)."""
        found = self._folders.get(folder)
        if found is not None:
            return found
        parent = os.path.dirname(folder)
        outer = self._folder(parent) if parent != folder and self._inside(parent) else ("", None)
        is_package = self._exists(folder, "__init__.py")
        name = os.path.basename(folder)
        if is_package and name.isidentifier():
            package = f"{outer[0]}.{name}" if outer[0] else name
        else:
            package = ""
        project = folder if any(self._exists(folder, m) for m in _MARKERS) else outer[1]
        if project is None and not is_package and self._has_dist_info(folder):
            project = folder  # an unpacked wheel: <pkg>/ beside <pkg>-X.Y.dist-info/
        found = self._folders[folder] = (package, project)
        return found

    def _has_dist_info(self, folder: str) -> bool:
        return any(name.endswith((".dist-info", ".egg-info")) for name in self._listing(folder))

    def _listing(self, folder: str) -> tuple[str, ...]:
        found = self._listings.get(folder)
        if found is None:
            try:
                found = tuple(sorted(os.listdir(folder)))
            except OSError:
                found = ()
            self._listings[folder] = found
        return found

    def _project(self, root: str) -> tuple[frozenset[str], frozenset[str], bool, bool]:
        """(own top-level packages, CUDA extension module names, whether it is a GPU library, whether
        it builds for HIP) of the project at `root`."""
        found = self._projects.get(root)
        if found is not None:
            return found
        own: set[str] = set()
        gpu = False
        for base in (root, os.path.join(root, "src")):
            for name in self._listing(base):
                if name.isidentifier() and os.path.isfile(os.path.join(base, name, "__init__.py")):
                    own.add(name)
                    gpu = gpu or self._gpu_package(os.path.join(base, name), name)
            for name in self._listing(base):
                if name.endswith((".dist-info", ".egg-info")):
                    own.update(self._top_level(os.path.join(base, name)))
        name = self._distribution(root)
        if name:
            own.add(name)
        extensions = frozenset(self._extensions(root))
        found = self._projects[root] = (frozenset(own), extensions, gpu or bool(extensions), self._hip_build(root))
        return found

    def _gpu_package(self, path: str, name: str) -> bool:
        """A GPU library: the catalogue knows it (liger_kernel, flash_attn), its name says so
        (auto_gptq? no: sgl_kernel, fbgemm_gpu yes), or it holds kernel code right below its top
        (kernel/, kernels/, csrc/, triton_utils.py, _C): torchao and vLLM are, transformers is not."""
        conf = config()
        if name in _kernel_libraries():
            return True
        words = conf.gpu_words
        if any(token in words for token in name.lower().split("_") if token):
            return True
        for child in self._listing(path):
            stem = _stem(child).lower()
            if stem in words or stem.strip("_") in words or any(token in words for token in stem.split("_") if token):
                return True
        return False

    def _read(self, path: str, limit: int = 2_000_000) -> str:
        """The text of a project file, or "" when it is not a regular file of at most `limit` bytes:
        a link, a FIFO or a device named pyproject.toml is not followed, read or waited on."""
        try:
            info = os.lstat(path)
            self._read_stamps[path] = (info.st_size, info.st_mtime_ns)
            return read_regular_file(path, limit).decode("utf-8", errors="replace")
        except OSError:
            self._read_stamps[path] = (-1, -1)
        except SourceError:
            pass
        return ""

    # -- reuse across runs (auditor.cache.reuse: with the cached file list, whose folder stamps cover the listings) --
    def export(self) -> dict:
        """The per-folder keys computed so far and the stamps of the files they were read from."""
        return {"folders": {folder: [key, named] for folder, (key, named, _) in self._keys.items()},
                "files": dict(self._file_keys),
                "stamps": [[path, size, mtime] for path, (size, mtime) in sorted(self._read_stamps.items())],
                "words": sorted(config().cuda_words)}

    def preset(self, saved: dict) -> bool:
        """Take the keys a previous run exported when the files they were read from are unchanged
        (the caller checked that no folder listing changed)."""
        try:
            for path, size, mtime in saved["stamps"]:
                try:
                    info = os.lstat(path)
                    now = (info.st_size, info.st_mtime_ns)
                except OSError:
                    now = (-1, -1)
                if now != (size, mtime):
                    return False
            pattern = _words_pattern(frozenset(saved["words"]))  # no need to read the catalogue again
            self._keys = {folder: (key, bool(named), pattern) for folder, (key, named) in saved["folders"].items()}
            self._file_keys = {str(path): str(key) for path, key in saved.get("files", {}).items()}
        except (KeyError, TypeError, ValueError):
            return False
        return True

    def _top_level(self, dist_info: str) -> set[str]:
        text = self._read(os.path.join(dist_info, "top_level.txt"), 10_000)
        return {line.strip() for line in text.splitlines() if line.strip().isidentifier()}

    def _distribution(self, root: str) -> str | None:
        text = self._read(os.path.join(root, "pyproject.toml"), 1_000_000)
        if text:
            try:
                name = toml_guard.loads(text).get("project", {}).get("name")
            except (tomllib.TOMLDecodeError, AttributeError, RecursionError):  # a hostile file: no name
                name = None
            if isinstance(name, str) and name:
                return re.sub(r"[-.]+", "_", name).lower()
        return None

    def _hip_build(self, root: str) -> bool:
        """Whether the build files at `root` build for ROCm too (rules/kernel.toml [hip_build]); a test
        that only refuses ROCm (`if torch.version.hip: raise ...`, on its line or the next) is no build."""
        table = load_table("kernel").get("hip_build", {})
        evidence, refusal = re.compile(table.get("evidence", r"$^")), re.compile(table.get("refusal", r"$^"))
        for name in table.get("files", ()):
            lines = [line for line in self._read(os.path.join(root, name)).splitlines() if line.strip()]
            for at, line in enumerate(lines):
                if evidence.search(line) and not any(refusal.search(text) for text in lines[at:at + 2]):
                    return True
        return False

    def _extensions(self, root: str) -> set[str]:
        text = self._read(os.path.join(root, "setup.py"))
        return {m.group(1) for m in _CUDA_EXTENSION.finditer(text)}

    # -- backend modules --------------------------------------------------------------------------------
    def _backend(self, path: str, relative: str, conf: _Config) -> BackendModule | None:
        """The file is, or is inside, something named for CUDA with siblings for other devices."""
        display = relative
        lowered = display.lower()
        if not any(word in lowered for word in conf.cuda_words):
            return self._target_backend(path, display, conf)
        parts = display.split("/")
        absolute = os.path.abspath(path)
        # The file itself (cuda.py, cuda_accelerator.py, kernel_cuda.cu), then its folders, innermost first.
        candidates = [(absolute, display, True)]
        here, shown = absolute, parts
        for _ in range(len(parts) - 1):
            here, shown = os.path.dirname(here), shown[:-1]
            candidates.append((here, "/".join(shown), False))
        for place, shown_name, is_file in candidates:
            name = os.path.basename(place)
            stem = _stem(name) if is_file else name
            tokens = name_tokens(stem)  # _ascend -> ["ascend"]
            if not any(t in conf.cuda_words for t in tokens):
                continue
            folder = os.path.dirname(place)
            covered, others = devices_beside(
                tokens, (name_tokens(_stem(sibling) if is_file else sibling) for sibling in self._listing(folder)
                         if sibling != name and self._comparable(folder, sibling, is_file, name)), conf)
            if covered or others:
                return BackendModule(shown_name, covered, others)
            if not is_file and self._mirrors(place, conf):
                return BackendModule(shown_name, frozenset(), (), default=shown_name.rpartition("/")[0] or ".")
            return None  # named for CUDA, but alone: the main path
        return None

    def _target_backend(self, path: str, display: str, conf: _Config) -> BackendModule | None:
        """A module named for another target (accelerators/xla.py, strategies/xla.py) beside
        modules named for CUDA or other devices with the same other name parts: that target's
        backend of a dispatch layer, which the other targets do not run (their siblings serve them)."""
        name = os.path.basename(path)
        if not name.endswith(_MODULE_SUFFIXES):
            return None
        tokens = [t for t in _SPLIT.split(_stem(name).lower()) if t]
        served = {conf.sibling_words[t] for t in tokens if conf.sibling_words.get(t)}
        if len(served) != 1:
            return None  # named for no target, or for several: not one device's backend
        (serves,) = served
        rest = [t for t in tokens if t not in conf.sibling_words]
        covered: set[str] = set()
        others: set[str] = set()
        folder = os.path.dirname(os.path.abspath(path))
        for sibling in self._listing(folder):
            if sibling == name or not self._comparable(folder, sibling, True, name):
                continue
            sibling_tokens = [t for t in _SPLIT.split(_stem(sibling).lower()) if t]
            named = set(conf.cuda_words) | set(conf.sibling_words)
            if [t for t in sibling_tokens if t not in named] != rest:
                continue
            for token in sibling_tokens:
                if token in conf.cuda_words:
                    covered.update(targets.with_role("accepts-cuda-calls"))  # the CUDA module runs there
                elif token in conf.sibling_words:
                    target = conf.sibling_words[token]
                    (covered.add(target) if target else others.add(token))
        covered.discard(serves)
        if not covered:
            return None  # alone, or beside devices outside the targets only: the main path
        return BackendModule(display, frozenset(covered), tuple(sorted(others)), serves=serves)

    def _mirrors(self, folder: str, conf: _Config) -> bool:
        """A CUDA-named folder is an alternative implementation when at least two of its public
        modules (or its subfolders' modules) have a namesake beside it: ops/cutedsl/ops/rms_norm.py
        and ops/rope.py mirror ops/rms_norm.py and ops/rope.py, the default the other targets run."""
        parent = os.path.dirname(folder)
        beside = {_stem(n) for n in self._listing(parent) if _public_module(n)}
        if len(beside) < 2:
            return False
        inside: set[str] = set()
        for name in self._listing(folder):
            if _public_module(name):
                inside.add(_stem(name))
            elif not name.startswith((".", "_")) and os.path.isdir(os.path.join(folder, name)):
                inside.update(_stem(n) for n in self._listing(os.path.join(folder, name)) if _public_module(n))
        return len(inside & beside) >= 2

    def _comparable(self, folder: str, sibling: str, is_file: bool, name: str) -> bool:
        """A sibling of the same sort: a module beside a module, a folder beside a folder, a kernel
        source beside a kernel source."""
        if sibling.startswith((".", "__")):  # hidden files, __pycache__, __init__.py (_ascend/ counts)
            return False
        if is_file:
            if name.endswith(_MODULE_SUFFIXES):
                return sibling.endswith(_MODULE_SUFFIXES) and sibling != "__init__.py"
            return sibling.endswith(_KERNEL_SUFFIXES) or os.path.isdir(os.path.join(folder, sibling))
        return os.path.isdir(os.path.join(folder, sibling))


def _public_module(name: str) -> bool:
    return name.endswith(".py") and not name.startswith(("_", "."))


@lru_cache(maxsize=1)
def _kernel_libraries() -> frozenset[str]:
    """Top-level names of the kernel libraries rules/kernel.toml lists (flash_attn, liger_kernel, ...)."""
    return frozenset(row["name"].split(".", 1)[0] for row in load_table("kernel").get("api", ()))


@lru_cache(maxsize=4)
def name_tokens(name: str) -> list[str]:
    """The parts of a file, folder or function name: `cuda_accelerator` -> ["cuda", "accelerator"]."""
    return [t for t in _SPLIT.split(name.lower()) if t]


def devices_beside(tokens: list[str], siblings: Iterable[list[str]], conf: _Config) -> tuple[frozenset[str], tuple[str, ...]]:
    """The targets (and the devices outside the targets) that siblings of a name named for CUDA
    serve: a sibling whose other parts are the name's own (`cpu_accelerator` beside
    `cuda_accelerator`); `cuda_graph` beside `cpu_offload` is not one (no dispatch layer)."""
    rest = [t for t in tokens if t not in conf.cuda_words]
    covered: set[str] = set()
    others: set[str] = set()
    for sibling in siblings:
        devices = [t for t in sibling if t in conf.sibling_words]
        if not devices or [t for t in sibling if t not in conf.sibling_words] != rest:
            continue
        for device in devices:
            target = conf.sibling_words[device]
            if target:
                covered.add(target)
            else:
                others.add(device)
    return frozenset(covered), tuple(sorted(others))


def _words_pattern(words: frozenset[str]) -> re.Pattern:
    return re.compile("|".join(sorted(map(re.escape, words))))


@lru_cache(maxsize=256)
def _joined(names: frozenset[str]) -> str:
    return ",".join(sorted(names))


def _folder_of(path: str) -> str:
    """os.path.dirname for the paths discovery builds, without its per-call overhead (hot: every file)."""
    if os.sep == "/" and not os.altsep:
        head = path.rpartition("/")[0]
        return head or ("/" if path.startswith("/") else "")
    return os.path.dirname(path)


def _stem(name: str) -> str:
    return name.split(".", 1)[0]
