"""The file kinds audit reads: one registry that discovery, the runtime, the prefilter, the cache
and suppressions all dispatch on. A new kind is one `Kind(...)` row here plus its reader module.

Each kind declares
- which files it takes: exact names, suffixes or name prefixes, narrowed by a regex on the name,
  a parent folder or an explicit mention on the command line (first kind in `KINDS` wins);
- its comment syntax, for `lockin: ignore[...]` suppressions (None: the format has no comments);
- whether the Python rules and the Python prefilter apply, and which bytes a file of another kind
  must hold to be read at all (`gate`: a YAML or JSON file without them is never parsed);
- how it is checked: `check` (its entry point in auditor.pipeline.kind_checks) and `reader` (text -> typed Document).

This module is imported on every run, warm ones included: it must stay free of heavy imports."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

# Words a YAML/JSON/TOML file must contain (lower-cased) before it is parsed: every config or
# cluster-manifest finding names one of them (`cu1` for `:2.1-cu121` image tags, `pytorch/pytorch`
# for PyTorch's CUDA image, `fp8` for TransformerEngine backends, `cudnn`/`cublas` variables).
HARDWARE_WORDS = (b"nvidia", b"cuda", b"gpu", b"nccl", b"cudnn", b"cublas", b"cu1", b"pytorch/pytorch", b"fp8")
_CONFIG_FOLDERS = r"conf|configs?|train_configs?|training_configs?|recipes?|launch_configs?|accelerate_configs?"
_IN_CONFIG_FOLDER = rf"(?:{_CONFIG_FOLDERS})"


@dataclass(frozen=True)
class Kind:
    name: str
    files: str  # README "files" column
    reads: str  # README "what is looked at" column
    suffixes: tuple[str, ...] = ()  # lower-case, with the dot
    names: tuple[str, ...] = ()  # exact lower-case file names
    prefixes: tuple[str, ...] = ()  # lower-case name starts ("dockerfile.")
    # A suffix or prefix match counts only when the name fullmatches `pattern`, `folder` fullmatches
    # a folder on the path of the one holding it (below the scanned root, so configs/autotuning_configs/
    # tune.json is in `configs/`; for a file named on the command line, its folder's name), or (with
    # `explicit`) the file was named on the command line. Both None: always.
    pattern: str | None = None
    folder: str | None = None
    explicit: bool = False
    exclude: tuple[str, ...] = ()  # lower-case names never taken
    comment: str | None = "#"  # line-comment start, for suppressions; None: no comments
    suppress_above: bool = False  # a directive on its own line right above a finding counts too
    own_suppressions: bool = False  # its check applies suppressions itself (a notebook: on its cells' text)
    python: bool = False  # the Python rules run on it (its code, for a notebook)
    # A file the Python prefilter rejects is skipped ... (a notebook is always read, so that a broken
    # one is reported; its code cells meet the prefilter in auditor.pipeline.kind_checks.check_notebook)
    python_prefilter: bool = False
    gate: tuple[bytes, ...] | None = None  # ... unless it holds one of these; None: no gate
    decode: str = "text"  # "python": BOM / PEP 263 cookie / nesting guard; "text": UTF-8
    max_bytes: int | None = None  # stricter than --max-file-size (parsers that build a whole tree)
    check: str = "auditor.pipeline.kind_checks:check_document"  # (runtime, source, text) -> FileResult
    reader: str | None = None  # (ctx) -> auditor.readers.document.Document

    def takes(self, lower: str, parent: str | None, explicit: bool) -> bool:
        """Whether a name that matched a suffix or prefix of this kind belongs to it."""
        if lower in self.exclude:
            return False
        if self.pattern is None and self.folder is None:
            return True
        if self.pattern is not None and _compiled(self.pattern).fullmatch(lower):
            return True
        if self.folder is not None and parent:
            folder = _compiled(self.folder)
            if any(folder.fullmatch(name) for name in parent.lower().split("/")):
                return True
        return explicit and self.explicit

    @property
    def needs_parent(self) -> bool:
        return self.folder is not None


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_YAML = (".yml", ".yaml")
# The line readers (pip's requirement grammar, the shell-word reader behind Dockerfiles and scripts)
# take 5-10 s a MB: a 10 MB requirements.txt or an 8.6 MB Dockerfile continuation ran for minutes
# (issue 20, D12). A real one is under 100 kB.
_LINE_FILE_BYTES = 2 * 1024 * 1024

KINDS: tuple[Kind, ...] = (
    Kind("setup-py", "`setup.py` (read statically, never executed)", "`install_requires`, `extras_require`, "
         "`dependency_links`, `CUDAExtension` and the Python rules", names=("setup.py",), python=True,
         decode="python", check="auditor.pipeline.kind_checks:check_python"),
    Kind("python", "`*.py`, `*.pyi`", "imports resolved to qualified names (`import torch as th`, `from torch.cuda.amp "
         "import autocast`), device strings where they choose a device, `.cuda()`, `torch.cuda.*`, backend flags, "
         "NCCL, env vars, kernels", suffixes=(".py", ".pyi"), python=True, python_prefilter=True, decode="python",
         check="auditor.pipeline.kind_checks:check_python"),
    Kind("pyproject", "`pyproject.toml`", "PEP 621 dependencies and extras, PEP 735 groups, `[tool.uv]` indexes and "
         "sources, `[tool.poetry]` dependencies and sources", names=("pyproject.toml",),
         reader="auditor.readers.pyproject:document"),
    Kind("setup-cfg", "`setup.cfg`", "`install_requires`, `extras_require`, `dependency_links`",
         names=("setup.cfg",), reader="auditor.readers.setup_cfg:document"),
    Kind("requirements", "`requirements*.txt`, `*.in`, constraints, files in `requirements/` (at any depth: "
         "`requirements/pytorch/extra.txt`)",
         "packages, `+cuXXX` local versions, CUDA wheel indexes, `-r`/`-c` includes, markers",
         suffixes=(".txt", ".in"), pattern=r"[^/]*(?:requirements|constraints)[^/]*",
         folder=r".*requirements.*",
         explicit=True, exclude=("manifest.in",), reader="auditor.readers.requirements:document",
         max_bytes=_LINE_FILE_BYTES),
    Kind("cuda", "`*.cu`, `*.cuh`", "one finding per file: a custom kernel to port", suffixes=(".cu", ".cuh"),
         comment="//"),
    Kind("notebook", "`*.ipynb`", "code cells like Python (same rules, prefilter and cache; findings carry the cell "
         "and the line in it); `!pip install` / `%pip install` lines as dependencies; `!nvidia-smi`, `%env`, "
         "`!export` and launcher lines", suffixes=(".ipynb",), python=True, own_suppressions=True,
         check="auditor.pipeline.kind_checks:check_notebook",
         reader="auditor.readers.notebook:document", max_bytes=20 * 1024 * 1024),
    Kind("dockerfile", "`Dockerfile`, `Containerfile`, `Dockerfile.*`, `Dockerfile-*`, `Dockerfile_*`, `*.dockerfile`",
         "base images (`FROM`, each stage on its own), `ENV`, `RUN pip/uv/conda install` lines (continuations, "
         "`&&` chains, heredocs), `nvidia-smi`, launcher lines in `RUN`/`CMD`/`ENTRYPOINT`",
         names=("dockerfile", "containerfile"),
         prefixes=("dockerfile.", "dockerfile-", "dockerfile_", "containerfile.", "containerfile-", "containerfile_"),
         suffixes=(".dockerfile", ".containerfile"), suppress_above=True,
         reader="auditor.readers.dockerfile:document", max_bytes=_LINE_FILE_BYTES),
    Kind("compose", "`docker-compose*.yml`, `compose*.yaml`", "`image:`, `runtime: nvidia`, `driver: nvidia` device "
         "reservations, `environment:`", suffixes=_YAML, pattern=r"(?:docker-)?compose[^/]*\.ya?ml",
         reader="auditor.readers.compose:document", max_bytes=5 * 1024 * 1024),
    Kind("conda", "`environment*.yml`, `environment*.yaml`, `conda*.yml`", "channels (`nvidia`), `pytorch-cuda`, "
         "`cudatoolkit`, `cuda-*`, `cudnn`, `nccl`, and the `pip:` subsection as requirements", suffixes=_YAML,
         pattern=r"(?:environment|conda)[^/]*\.ya?ml", reader="auditor.readers.conda:document",
         max_bytes=5 * 1024 * 1024),
    Kind("yaml", "other `*.yml`, `*.yaml` that mention `nvidia`, `cuda`, `gpu`, `nccl` or another hardware word",
         "Kubernetes/Helm manifests (`nvidia.com/gpu` resources, NVIDIA node selectors and tolerations, "
         "`runtimeClassName: nvidia`, images, `env:`); training configs (Lightning, Hydra, accelerate: "
         "`device: cuda`, `accelerator: gpu`, `backend: nccl`, `distributed_type: MULTI_GPU`)",
         suffixes=_YAML, gate=HARDWARE_WORDS, reader="auditor.readers.yaml_config:document",
         max_bytes=5 * 1024 * 1024),
    Kind("json-config", "DeepSpeed / accelerate JSON (`ds_config*.json`, `*deepspeed*.json`, `zero*.json`, "
         "`accelerate*.json`; any `*.json` in or below a `conf/`, `configs/` folder)",
         "the same hardware-choosing values, and DeepSpeed `amp` (NVIDIA Apex)", suffixes=(".json",),
         pattern=r"[^/]*(?:ds_config|deepspeed|accelerate)[^/]*\.json|(?:ds|zero)[^/]*\.json",
         folder=_IN_CONFIG_FOLDER, explicit=True, comment=None, gate=(*HARDWARE_WORDS, b'"amp"'),
         reader="auditor.readers.json_config:document", max_bytes=5 * 1024 * 1024),
    Kind("toml-config", "`*.toml` in or below a `conf/`, `configs/` folder (training configs)",
         "the same hardware-choosing values", suffixes=(".toml",), folder=_IN_CONFIG_FOLDER,
         explicit=True, gate=HARDWARE_WORDS, reader="auditor.readers.toml_config:document",
         max_bytes=5 * 1024 * 1024),
    Kind("shell", "`*.sh`, `*.bash`, `*.zsh`, Slurm `*.slurm`, `*.sbatch`",
         "`export`ed and inline env vars (`CUDA_VISIBLE_DEVICES=`, `NCCL_*`), `nvidia-smi`, `#SBATCH --gres=gpu`, "
         "`torchrun`/`deepspeed`/`accelerate launch` flags that assume NVIDIA GPUs, `docker run --gpus`, "
         "`pip`/`uv`/`conda install` lines", suffixes=(".sh", ".bash", ".zsh", ".slurm", ".sbatch"),
         reader="auditor.readers.shell:document", max_bytes=_LINE_FILE_BYTES),
)

BY_NAME: dict[str, Kind] = {kind.name: kind for kind in KINDS}
_EXACT: dict[str, Kind] = {}
_BY_SUFFIX: dict[str, list[Kind]] = {}
_PREFIXED: list[tuple[str, Kind]] = []
for _kind in KINDS:
    for _name in _kind.names:
        _EXACT.setdefault(_name, _kind)
    for _suffix in _kind.suffixes:
        _BY_SUFFIX.setdefault(_suffix, []).append(_kind)
    _PREFIXED.extend((_prefix, _kind) for _prefix in _kind.prefixes)
_PREFIXES = tuple(prefix for prefix, _ in _PREFIXED)
# A name taken by its start is never one of these (Dockerfile.md, dockerfile_notes.txt: its docs)
_NOT_PREFIXED = (".md", ".rst", ".txt", ".adoc", ".html", ".png", ".svg", ".jpg", ".json", ".yml", ".yaml",
                 ".toml", ".py", ".lock", ".bak", ".orig")


def kind(name: str) -> Kind:
    """The kind called `name` (as stored in SourceFile.kind)."""
    return BY_NAME[name]


def match(name: str, explicit: bool = False, parent: str | None = None, parent_of: str = "") -> str | None:
    """The kind of a file called `name`, or None when audit does not read it. `parent` is the
    containing folder's path below the scanned root (POSIX, "" at the root); when None and a kind
    needs it, the name of `parent_of`'s folder is taken."""
    lower = name.lower()
    exact = _EXACT.get(lower)
    if exact is not None:
        return exact.name
    dot = lower.rfind(".")
    candidates = _BY_SUFFIX.get(lower[dot:]) if dot >= 0 else None
    if candidates is not None:
        for candidate in candidates:
            if parent is None and candidate.needs_parent:
                parent = _parent_name(parent_of or name)
            if candidate.takes(lower, parent, explicit):
                return candidate.name
    if _PREFIXES and lower.startswith(_PREFIXES) and not lower.endswith(_NOT_PREFIXED):
        for prefix, candidate in _PREFIXED:
            if lower.startswith(prefix) and candidate.takes(lower, parent, explicit):
                return candidate.name
    return None


def _parent_name(path: str) -> str:
    """The folder path a kind's `folder` is looked for on: a relative path's own folders
    (requirements/pytorch), only the last folder of an absolute one (nothing above the project)."""
    import os

    if not os.path.isabs(path):
        folder = os.path.dirname(os.path.normpath(path)).replace(os.sep, "/")
        if folder:
            return folder
    return os.path.basename(os.path.dirname(os.path.abspath(path)))


def suppress_above(kind_name: str) -> bool:
    """Whether a suppression comment on its own line right above a finding applies (Dockerfiles)."""
    found = BY_NAME.get(kind_name)
    return found is not None and found.suppress_above


def comment_prefix(kind_name: str) -> str | None:
    """How a line comment starts in files of this kind (for suppressions); None: no comments."""
    found = BY_NAME.get(kind_name)
    return found.comment if found is not None else "#"


def _name_regex(kind: Kind) -> list[str]:
    """Regex alternatives (on a path) for the files `kind` takes by name alone."""
    parts = [rf"(?:^|/){re.escape(name)}" for name in kind.names]
    ends = "|".join(re.escape(s) for s in kind.suffixes)
    starts = "|".join(re.escape(p) for p in kind.prefixes)
    # A name the kind never takes (MANIFEST.in), whatever else matches.
    never = rf"(?!(?:{'|'.join(re.escape(n) for n in kind.exclude)})$)" if kind.exclude else ""
    if kind.pattern is None and kind.folder is None:
        if ends:
            parts.append(rf"(?:^|/){never}[^/]*(?:{ends})")
        if starts:
            docs = "|".join(re.escape(n) for n in _NOT_PREFIXED)
            parts.append(rf"(?:^|/){never}(?:{starts})(?![^/]*(?:{docs})$)[^/]*")
        return parts
    if kind.pattern is not None:  # the lookahead keeps the suffix a suffix match needs
        parts.append(rf"(?:^|/)(?=(?:{kind.pattern})$){never}[^/]*(?:{ends or starts})")
    if kind.folder is not None and ends:  # anywhere below such a folder
        folder = kind.folder.replace(".*", "[^/]*")
        parts.append(rf"(?:^|/)(?:{folder})/(?:[^/]*/)*{never}[^/]*(?:{ends})")
    return parts


def hook_files_pattern() -> str:
    """The pre-commit `files` regex covering every file kind audit reads by name (case-insensitive,
    as discovery is). .pre-commit-hooks.yaml carries it; tests/test_kinds keeps the two in step."""
    parts = [part for kind in KINDS for part in _name_regex(kind)]
    return "(?i)(?:" + "|".join(parts) + ")$"


def markdown_table() -> str:
    """README's "What is read" table, one row per kind (tests/test_readme keeps it current)."""
    rows = ["| kind | files | what is looked at | comments |", "|---|---|---|---|"]
    for kind in KINDS:
        comment = f"`{kind.comment}`" if kind.comment else "none"
        rows.append(f"| {kind.name} | {kind.files} | {kind.reads} | {comment} |")
    return "\n".join(rows)
