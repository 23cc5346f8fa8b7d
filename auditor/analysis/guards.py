"""What a test says about where the code under it runs.

A test is judged on each platform (NVIDIA plus every target) in three values: it holds there
(T), cannot hold there (F), or may (U). `torch.cuda.is_available()` holds on NVIDIA and ROCm and
cannot elsewhere; `x.is_cuda` may hold on NVIDIA and ROCm (the tensor may be on the CPU) and cannot
elsewhere; an unknown test may hold anywhere. A fourth value says what the test does when an
optional package is missing (`is_flash_attn_available()` cannot hold then). `not`, `and` and `or`
combine these as Kleene logic, so `if not torch.cuda.is_available(): return` followed by code, an
`elif` after a CUDA branch, and `torch.cuda.is_available() and torch.cuda.get_device_capability()`
all come out right. The vocabulary (helper names, attributes, device words) is in
rules/contexts.toml [guards].

Each judged test also says what kind of guard it is (rules/contexts.toml, "Guard kinds"):
availability, device, build, package, env or option; a finding records the kinds of the guards
that decided its context (JSON `guard`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

import libcst as cst

from auditor import targets
from auditor.catalogue import Catalogue
from auditor.python.names import dotted_parts
from auditor.python.syntax import callee_name, is_message_call, string_value

if TYPE_CHECKING:
    from auditor.context import PythonContext

T, F, U = 1, 0, 2  # holds, cannot hold, may hold
_DEVICE_STRING = re.compile(r"([a-z_]+)(?::\S*)?")


@lru_cache(maxsize=1)
def platforms() -> tuple[str, ...]:
    """NVIDIA (what the code is locked into) and every target, in the order of a Truth's values."""
    return (targets.SOURCE_PLATFORM, *targets.names())


@lru_cache(maxsize=1)
def _index() -> dict[str, int]:
    return {platform: i for i, platform in enumerate(platforms())}


@dataclass(frozen=True)
class Truth:
    """A test's value per platform (platforms() order; () when it may hold everywhere), when an
    optional package is missing, and whether it asks about the process (an availability check)
    rather than a tensor or a flag."""

    values: tuple[int, ...] = ()
    absent: int = U
    available: bool = False
    kinds: frozenset[str] = frozenset()  # availability, device, build, package, env, option

    def may_hold(self, platform: str) -> bool:
        return not self.values or self.values[_index()[platform]] != F

    @property
    def requires_package(self) -> bool:
        return self.absent == F

    @property
    def excludes(self) -> bool:
        """Whether some platform cannot get here (the test says something about devices)."""
        return F in self.values

    @property
    def says(self) -> bool:
        """Whether the test says anything at all (about a platform, or a package)."""
        return bool(self.values) or self.absent != U

    def __invert__(self) -> Truth:
        return Truth(tuple(_NOT[v] for v in self.values), _NOT[self.absent], self.available, self.kinds)

    def __and__(self, other: Truth) -> Truth:
        if not self.values and not other.values:  # the common case: two unknowns (or packages)
            return Truth((), _and(self.absent, other.absent), self.available or other.available,
                         self.kinds | other.kinds)
        mine, theirs = _aligned(self.values, other.values)
        return Truth(tuple(_and(a, b) for a, b in zip(mine, theirs, strict=True)),
                     _and(self.absent, other.absent), self.available or other.available, self.kinds | other.kinds)

    def __or__(self, other: Truth) -> Truth:
        if not self.values and not other.values:
            return Truth((), _or(self.absent, other.absent), self.available or other.available,
                         self.kinds | other.kinds)
        mine, theirs = _aligned(self.values, other.values)
        return Truth(tuple(_or(a, b) for a, b in zip(mine, theirs, strict=True)),
                     _or(self.absent, other.absent), self.available or other.available, self.kinds | other.kinds)

    def of_kind(self, kind: str) -> Truth:
        return Truth(self.values, self.absent, self.available, frozenset((kind,))) if self.says else self


def _aligned(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Both value tuples in full: () stands for "may hold everywhere"."""
    if a and b:
        return a, b
    full = (U,) * len(platforms())
    return a or full, b or full


_NOT = {T: F, F: T, U: U}


def _and(a: int, b: int) -> int:
    if a == F or b == F:
        return F
    return T if a == T and b == T else U


def _or(a: int, b: int) -> int:
    if a == T or b == T:
        return T
    return F if a == F and b == F else U


UNKNOWN = Truth()
OPTIONAL = Truth(absent=F, kinds=frozenset(("package",)))
# A launch mode the user picks (a launcher's variable is set): the code under it is skipped by a plain
# run, like an optional package's; the kind "launch" names its message, the JSON says "option".
LAUNCHED = Truth(absent=F, kinds=frozenset(("option", "launch")))
# A mode the user turns on (`is_deepspeed_zero3_enabled()`, `self.is_fsdp_enabled`): a plain run skips
# the code under it, like a launch mode's; the kind "mode" names its message, the JSON says "option".
CHOSEN_MODE = Truth(absent=F, kinds=frozenset(("option", "mode")))


def on(where: frozenset[str] | set[str] | tuple[str, ...], certain: bool, kind: str = "availability") -> Truth:
    """A test that holds (certain: a process-wide availability check) or may hold only on these platforms."""
    value = T if certain else U
    return Truth(tuple(value if p in where else F for p in platforms()), available=certain, kinds=frozenset((kind,)))


def everywhere(value: int) -> Truth:
    """`True` (holds everywhere) or `False` / `None` (holds nowhere): a guard that is always true protects nothing."""
    return Truth((value,) * len(platforms()))


@dataclass(frozen=True)
class Vocabulary:
    """rules/contexts.toml [guards], compiled."""

    words: dict[str, frozenset[str]]
    available: dict[str, frozenset[str]]
    helpers: tuple[tuple[re.Pattern, frozenset[str]], ...]
    flags: tuple[tuple[re.Pattern, frozenset[str]], ...]
    attributes: dict[str, frozenset[str]]
    optional_helpers: re.Pattern
    optional_flags: re.Pattern
    modes: re.Pattern  # `is_deepspeed_zero3_enabled()`, `self.is_fsdp_enabled`: a mode the user turns on
    skip_if: frozenset[str]
    skip_unless: frozenset[str]
    requires: tuple[tuple[re.Pattern, frozenset[str]], ...]
    exit_calls: frozenset[str]
    exit_raises: frozenset[str]
    fallback_catches: frozenset[str]
    packages: dict[str, frozenset[str]] = field(default_factory=dict)  # optional package -> where it installs
    env: dict[str, frozenset[str]] = field(default_factory=dict)  # environment variable -> where it is set
    env_lookups: frozenset[str] = frozenset()  # os.getenv, os.environ.get, ...
    launch: frozenset[str] = frozenset()  # variables a multi-process launcher sets (RANK, LOCAL_RANK)
    environ: frozenset[str] = frozenset()  # os.environ
    build_prefixes: tuple[str, ...] = ()  # qualified names that say which build this is (torch.version.*)
    target_flag: re.Pattern | None = None  # `IS_HIP`, `use_mps`, `args.xla`: a flag named for a target
    launch_flags: frozenset[str] = frozenset()  # name parts of a flag for a multi-process launch (`args.distributed`)
    option_words: frozenset[str] = frozenset()  # name parts of an option about CUDA (`use_cuda_graphs`)
    negations: frozenset[str] = frozenset()  # `no_cuda`, `disable_gpu`: the option says the opposite
    falsy: frozenset[str] = frozenset()  # values an option compared with means "off" ("0", "false")
    build_names: dict[str, frozenset[str]] = field(default_factory=dict)  # CUDA_HOME, ROCM_HOME, IS_HIP_EXTENSION
    class_ignore: frozenset[str] = frozenset()  # device words that do not name a device in a class name

    def build_name(self, name: str) -> frozenset[str] | None:
        """Where a build constant imported from a build module holds (`CUDA_HOME`, `IS_HIP_EXTENSION`),
        by its name when the import is out of reach (a function's own `import torch.utils.cpp_extension`)."""
        return self.build_names.get(name)

    def device(self, text: str) -> frozenset[str] | None:
        """The platforms a device string ("cuda:0", "xpu") stands for; None when it is none."""
        match = _DEVICE_STRING.fullmatch(text.strip().lower())
        if match is None:
            return None
        return self.words.get(match.group(1))

    def package(self, name: str) -> frozenset[str] | None:
        """Where an optional package can be installed (`triton`, `torch_xla`), from its module name;
        None when the catalogue does not say."""
        name = name.lower()
        found = self.packages.get(name)
        if found is None and name.startswith("torch_"):  # torch_xla, torch_npu, torch_neuronx: a target's own
            word = name.removeprefix("torch_")
            found = self.words.get(word) or self.words.get(word.rstrip("x"))
            if found is not None and targets.SOURCE_PLATFORM in found:
                return None
        return found


_VOCABULARIES: dict[int, tuple[dict, Vocabulary]] = {}


def _vocabulary(guards: dict) -> Vocabulary:
    words = {w: frozenset(p) for w, p in guards.get("words", {}).items()}
    options = guards.get("options", {})
    target_words = sorted((w for w, p in words.items() if p and targets.SOURCE_PLATFORM not in p), key=len,
                          reverse=True)
    template = options.get("target_flag", "")
    target_flag = re.compile(template.replace("{words}", "|".join(map(re.escape, target_words)))) \
        if template and target_words else None
    env = guards.get("env", {})
    build = tuple(guards.get("build", {}).get("prefixes", ()))
    return Vocabulary(
        words=words,
        available={name: frozenset(p) for name, p in guards.get("available", {}).items()},
        helpers=tuple((re.compile(h["pattern"]), frozenset(h["platforms"])) for h in guards.get("helper", [])),
        flags=tuple((re.compile(f["pattern"]), frozenset(f["platforms"])) for f in guards.get("flag", [])),
        attributes={name: frozenset(p) for name, p in guards.get("attributes", {}).items()},
        optional_helpers=re.compile(guards.get("optional", {}).get("helpers", r"$^")),
        optional_flags=re.compile(guards.get("optional", {}).get("flags", r"$^")),
        modes=re.compile(guards.get("optional", {}).get("modes", r"$^")),
        skip_if=frozenset(guards.get("skips", {}).get("skip_if", ())),
        skip_unless=frozenset(guards.get("skips", {}).get("skip_unless", ())),
        requires=tuple((re.compile(r["pattern"]), frozenset(r["platforms"])) for r in guards.get("requires", [])),
        exit_calls=frozenset(guards.get("exits", {}).get("calls", ())),
        exit_raises=frozenset(guards.get("exits", {}).get("raises", ())),
        fallback_catches=frozenset(guards.get("fallback", {}).get("catches", ())),
        packages={name: frozenset(p) for name, p in guards.get("packages", {}).items()},
        env={name: frozenset(p) for name, p in env.get("names", {}).items()},
        env_lookups=frozenset(env.get("lookups", ())),
        launch=frozenset(env.get("launch", ())),
        environ=frozenset(env.get("mappings", ())),
        build_prefixes=build,
        target_flag=target_flag,
        option_words=frozenset(options.get("words", ())),
        launch_flags=frozenset(options.get("launch", ())),
        negations=frozenset(options.get("negations", ())),
        falsy=frozenset(options.get("falsy", ())),
        build_names={name.rsplit(".", 1)[-1]: frozenset(p) for name, p in guards.get("available", {}).items()
                     if name.startswith(build) and name.rsplit(".", 1)[-1].isupper()},
        class_ignore=frozenset(guards.get("instance", {}).get("ignore", ())),
    )


def vocabulary(catalogue: Catalogue) -> Vocabulary:
    """The guard vocabulary of this catalogue, compiled once."""
    table = catalogue.table("contexts").get("guards", {})
    cached = _VOCABULARIES.get(id(table))
    if cached is None or cached[0] is not table:
        cached = _VOCABULARIES[id(table)] = (table, _vocabulary(table))
    return cached[1]


# The words of an identifier (`useCudaGraphs`, `profiler_profile_memory`), shared with placement.
NAME_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|_|$)|[A-Z]?[a-z]+|[A-Z]+|\d+")
_PACKAGE_FLAG = re.compile(r"(?i)^_?(?:has|have|use|enable|is)_(\w+?)(?:_(?:available|installed|imported))?$"
                           r"|^_?(\w+?)_(?:available|installed|imported|is_available)$")
_CONSTANTS = frozenset({"True", "False", "None", "0", "1"})
_TRUE = frozenset({"True", "1"})
_ASSIGNED_LIMIT = 8  # a name assigned more often than this is not a flag worth following
_FOLLOW_DEPTH = 3


class Judge:
    """Judges tests in one file; names resolve through the file's imports (as at the end of the walk)."""

    def __init__(self, ctx: PythonContext) -> None:
        self.ctx = ctx
        self.vocab = vocabulary(ctx.catalogue)
        self._assigned: dict[str, Truth] = {}  # a flag's name -> what its assignments say
        self._following: set[str] = set()
        # `and`/`or` chains, judged once: each finding in a chain of n terms asks about the n terms
        # before it, which made a chain of findings quadratic (issue 20, D7)
        self._chains: dict[int, Truth] = {}

    # -- tests ------------------------------------------------------------------------------------
    def truth(self, node: cst.BaseExpression) -> Truth:
        """What `node`, used as a condition, says about the platforms."""
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            return ~self.truth(node.expression)
        if isinstance(node, cst.BooleanOperation):
            found = self._chains.get(id(node))
            if found is None:
                left, right = self.truth(node.left), self.truth(node.right)
                found = self._chains[id(node)] = left & right if isinstance(node.operator, cst.And) else left | right
            return found
        if isinstance(node, cst.Comparison):
            return self._comparison(node)
        if isinstance(node, cst.Call):
            return self._call(node)
        if isinstance(node, (cst.Name, cst.Attribute)):
            return self._name(node)
        if isinstance(node, cst.Subscript):
            return self._env(node)
        return UNKNOWN

    def _name(self, node: cst.Name | cst.Attribute) -> Truth:
        if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
            return everywhere(T if node.value == "True" else F)
        qualified = self.ctx.qualify(node)
        if qualified is not None:
            platforms = self.vocab.available.get(qualified)
            if platforms is not None:
                kind = "build" if qualified.startswith(self.vocab.build_prefixes) else "availability"
                return on(platforms, certain=True, kind=kind)
        last = node.value if isinstance(node, cst.Name) else node.attr.value
        if isinstance(node, cst.Attribute) and last in self.vocab.attributes:
            return on(self.vocab.attributes[last], certain=False, kind="device")
        if qualified is None or qualified.startswith("self."):
            followed = self._followed(node, last)
            if followed.says:
                return followed
        for pattern, platforms in self.vocab.flags:
            if pattern.fullmatch(last):
                return on(platforms, certain=False, kind=_flag_kind(last))
        built = self.vocab.build_name(last) if qualified is None or qualified.startswith("torch") else None
        if built is not None:
            return on(built, certain=True, kind="build")
        if isinstance(node, cst.Name) and qualified is not None and not qualified.startswith("torch"):
            # `if triton:` / `if xm is not None:` / `if flash_attn_func:`: an import tested for presence
            return self._package(qualified.split(".", 1)[0]) or OPTIONAL
        return self._flag(last)

    def _flag(self, last: str) -> Truth:
        """A name that is not an import: a flag for a target (`IS_HIP`, `use_mps`), an optional
        package's (`HAS_TRITON`), or an option about CUDA (`cfg.use_cuda_graphs`, `args.no_cuda`)."""
        vocab = self.vocab
        match = vocab.target_flag.fullmatch(last) if vocab.target_flag is not None else None
        if match is not None:
            platforms = vocab.words.get(match.group("word").lower())
            if platforms is not None:
                return on(platforms, certain=False, kind=_flag_kind(last))
        if vocab.optional_flags.fullmatch(last):
            package = _PACKAGE_FLAG.fullmatch(last)
            word = (package.group(1) or package.group(2)) if package is not None else None
            found = self._package(word) if word else None
            kind = "option" if last.lstrip("_").lower().startswith(("use_", "enable_")) else "package"
            return (found or OPTIONAL).of_kind(kind)
        if vocab.modes.fullmatch(last):
            return CHOSEN_MODE
        tokens = [t.lower() for t in NAME_PARTS.findall(last)]
        if tokens and tokens[0] not in vocab.negations and not vocab.launch_flags.isdisjoint(tokens):
            return LAUNCHED  # `if args.distributed:`, `self._distributed`: the launch mode the user picked
        if tokens and any(t in vocab.option_words or t.startswith("cuda") for t in tokens):
            platforms = next((vocab.words[t] for t in tokens if t in vocab.words), None) or vocab.words.get("cuda")
            if platforms is not None:
                truth = on(platforms, certain=False, kind="option")
                return ~truth if tokens[0] in vocab.negations else truth
        return UNKNOWN

    def _package(self, name: str) -> Truth | None:
        """An optional package's presence where the catalogue says where it installs: `triton` may be
        there on NVIDIA, ROCm and XPU only; a target's own (`torch_xla`) may be there only on it."""
        platforms = self.vocab.package(name)
        if platforms is None:
            return None
        truth = on(platforms, certain=False, kind="package")
        if targets.SOURCE_PLATFORM in platforms:  # a GPU package: optional where it may be (absent: skipped)
            return Truth(truth.values, F, False, truth.kinds)
        return truth  # a target's own: the test picks that target, like `torch.xpu.is_available()`

    def _followed(self, node: cst.Name | cst.Attribute, name: str) -> Truth:
        """`IS_HIP = torch.version.hip is not None` then `if IS_HIP:`; `self.has_gpu = torch.cuda.is_available()`
        then `if self.has_gpu:`: what the file assigns the flag (the walk kept it; several
        assignments: any of them)."""
        if isinstance(node, cst.Attribute) and not (isinstance(node.value, cst.Name) and node.value.value == "self"):
            return UNKNOWN
        key = name if isinstance(node, cst.Name) else "self." + name
        found = self._assigned.get(key)
        if found is not None:
            return found
        if key in self._following or len(self._following) >= _FOLLOW_DEPTH:
            return UNKNOWN
        self._following.add(key)
        try:
            found = self._assignments(self.ctx.assigned.get(key, ()))
        finally:
            self._following.discard(key)
        self._assigned[key] = found
        return found

    def _assignments(self, values: list[cst.BaseExpression | None] | tuple) -> Truth:
        if not values or len(values) > _ASSIGNED_LIMIT or any(v is None for v in values):
            return UNKNOWN  # never assigned here, a parameter or loop variable, or assigned all over
        constants = [v.value for v in values if isinstance(v, (cst.Name, cst.Integer)) and v.value in _CONSTANTS]
        if len(constants) == len(values) and all(c in _TRUE for c in constants):
            return everywhere(T)  # `USE_CUDA = True` and nothing else: always true, it protects nothing
        result: Truth | None = None
        for value in values:
            if isinstance(value, (cst.Name, cst.Integer)) and value.value in _CONSTANTS:
                continue  # `HAS_TRITON = True` in a try, `= False` in its except: the flag's own pattern says more
            truth = self.truth(value)
            if not truth.says:
                return UNKNOWN  # one assignment says nothing: nor does the flag
            result = truth if result is None else result | truth
        return result or UNKNOWN

    def _call(self, node: cst.Call) -> Truth:
        qualified = self.ctx.qualify(node.func)
        if qualified is not None:
            platforms = self.vocab.available.get(qualified)
            if platforms is not None:
                return on(platforms, certain=True)
            if qualified.endswith("find_spec") or qualified == "pytest.importorskip":
                package = string_value(node.args[0].value) if node.args else None
                return (self._package(package.split(".", 1)[0]) if package else None) or OPTIONAL
            if qualified in self.vocab.env_lookups:
                return self._env(node)
        name = callee_name(node)
        if name is None:
            return UNKNOWN
        if name in ("int", "bool", "str", "strtobool", "lower", "strip") and isinstance(node.func, cst.Name) \
                and len(node.args) == 1:
            return self.truth(node.args[0].value)  # bool(os.environ.get("FORCE_CUDA", 0))
        if name == "startswith" and isinstance(node.func, cst.Attribute) and node.args:
            text = string_value(node.args[0].value)
            platforms = self.vocab.device(text) if text is not None else None
            if platforms is not None:
                return self._device_test(platforms)
            return UNKNOWN
        if name == "isinstance" and isinstance(node.func, cst.Name) and len(node.args) == 2:
            return self._instance_of(node.args[1].value)
        helper = name[1:] if name.startswith("_") and not name.startswith("__") else name  # setup.py's `_is_hip()`
        for pattern, platforms in self.vocab.helpers:
            if pattern.fullmatch(helper):
                return on(platforms, certain=True)
        if self.vocab.optional_helpers.fullmatch(name):
            package = _PACKAGE_FLAG.fullmatch(name)
            word = (package.group(1) or package.group(2)) if package is not None else None
            return (self._package(word) if word else None) or OPTIONAL
        if self.vocab.modes.fullmatch(name) and not (qualified or "").startswith("torch"):
            return CHOSEN_MODE
        return UNKNOWN

    def _instance_of(self, classes: cst.BaseExpression) -> Truth:
        """`isinstance(self.accelerator, XLAAccelerator)`, `isinstance(s, (XLAStrategy, XLAFSDPStrategy))`:
        the object is one device's backend (its class is named for it, rules/targets.toml `siblings`
        and the CUDA words): a device test. Every class must be named for a device, else it says nothing."""
        names = [e.value for e in classes.elements] if isinstance(classes, cst.Tuple) else [classes]
        platforms: set[str] = set()
        for item in names:
            last = item.value if isinstance(item, cst.Name) else item.attr.value if isinstance(item, cst.Attribute) else None
            found = self._class_platforms(last) if last else None
            if found is None:
                return UNKNOWN
            platforms |= found
        return self._device_test(frozenset(platforms))

    def _class_platforms(self, name: str) -> frozenset[str] | None:
        """The platforms a class name's parts name (`XLAStrategy` -> the XLA targets; `CUDAAccelerator`
        -> NVIDIA and the targets that run CUDA calls; `HPUAccelerator` -> none), None when no part
        is a device word (rules/contexts.toml [guards.words], less [guards.instance] ignore)."""
        found: set[str] | None = None
        for token in NAME_PARTS.findall(name):
            word = token.lower()
            if word not in self.vocab.words and token.isupper() and len(token) > 3:
                # an acronym run (`XLAFSDPStrategy` -> "XLAFSDP"): the device word it starts with
                word = next((w for w in self.vocab.words if len(w) >= 3 and word.startswith(w)), word)
            if word in self.vocab.words and word not in self.vocab.class_ignore:
                found = (found or set()) | self.vocab.words[word]
        return None if found is None else frozenset(found)

    # -- the environment ------------------------------------------------------------------------------
    def _env_name(self, node: cst.BaseExpression) -> str | None:
        """The variable `node` reads: `os.environ.get("X")`, `os.getenv("X", d)`, `os.environ["X"]`."""
        if isinstance(node, cst.Call) and node.args and self.ctx.qualify(node.func) in self.vocab.env_lookups:
            return string_value(node.args[0].value)
        if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) \
                and self.ctx.qualify(node.value) in self.vocab.environ:
            return string_value(node.slice[0].slice.value)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and not node.args \
                and node.func.attr.value in ("lower", "strip", "upper"):
            return self._env_name(node.func.value)  # os.environ.get("X", "").lower()
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and len(node.args) == 1 \
                and node.func.value in ("int", "bool", "str", "strtobool"):
            return self._env_name(node.args[0].value)
        value = self._only_value(node)
        return None if value is None else self._env_name(value)

    def _only_value(self, node: cst.BaseExpression) -> cst.BaseExpression | None:
        """The one value the file assigns a plain name (`LOCAL_RANK = int(os.getenv("LOCAL_RANK", "-1"))`
        at the top, then `if LOCAL_RANK != -1:`); None for an import, a parameter or a name assigned
        more than once."""
        if not isinstance(node, cst.Name) or self.ctx.qualify(node) not in (None, node.value):
            return None  # an import (`from utils import LOCAL_RANK`): its value is another file's
        values = self.ctx.assigned.get(node.value, ())
        return values[0] if len(values) == 1 and values[0] is not None and values[0] is not node else None

    def _env(self, node: cst.BaseExpression, name: str | None = None) -> Truth:
        """A variable set in the environment (`"CUDA_HOME" in os.environ`, `os.getenv("FORCE_CUDA")`):
        it may be set where its name says (rules/contexts.toml [guards.env]), and nowhere else."""
        name = name if name is not None else self._env_name(node)
        if not name:
            return UNKNOWN
        if name in self.vocab.launch:
            return LAUNCHED  # `RANK` is set: a multi-process launch (torchrun) the user chose
        platforms = self.vocab.env.get(name)
        negated = False
        if platforms is None:
            parts = name.lower().split("_")
            negated = parts[0] in self.vocab.negations
            for part in parts[:3]:
                platforms = self.vocab.words.get(part)
                if platforms is not None:
                    break
        if platforms is None:
            return UNKNOWN
        truth = on(platforms, certain=False, kind="env")
        return ~truth if negated else truth

    def _device_test(self, platforms: frozenset[str]) -> Truth:
        """A value compared with a device string: it may be that device; a host ("cpu") value may
        be on any platform (CPU tensors exist everywhere)."""
        if not platforms.isdisjoint(targets.with_role("host")):
            return UNKNOWN
        return on(platforms, certain=False, kind="device")

    def _comparison(self, node: cst.Comparison) -> Truth:
        if len(node.comparisons) != 1:
            return UNKNOWN
        target = node.comparisons[0]
        op, right, left = target.operator, target.comparator, node.left
        if isinstance(op, (cst.Is, cst.IsNot)) and isinstance(right, cst.Name) and right.value == "None":
            value = self.truth(left)
            return value if isinstance(op, cst.IsNot) else ~value
        if isinstance(op, (cst.In, cst.NotIn)) and self.ctx.qualify(right) in self.vocab.environ:
            value = self._env(left, string_value(left) or "")  # "CUDA_HOME" in os.environ
            return value if isinstance(op, cst.In) else ~value
        if isinstance(op, (cst.Equal, cst.NotEqual)):
            platforms = self._string_device(right) or self._string_device(left)
            if platforms is None:
                return self._setting(left, op, right) or self._count(left, op, right)
            value = self._device_test(platforms)
            return value if isinstance(op, cst.Equal) else ~value
        if isinstance(op, (cst.In, cst.NotIn)):
            platforms = self._string_device(left)  # "cuda" in str(device)
            if platforms is None and isinstance(right, (cst.Tuple, cst.List, cst.Set)):
                found = [self._string_device(e.value) for e in right.elements]
                if found and all(p is not None for p in found):
                    platforms = frozenset().union(*found)  # device.type in ("cuda", "xpu")
            if platforms is None:
                return UNKNOWN
            value = self._device_test(platforms)
            return value if isinstance(op, cst.In) else ~value
        return self._count(left, op, right)

    def compared_devices(self, node: cst.BaseExpression) -> frozenset[str] | None:
        """The platforms an `==` / `in` comparison with device strings picks (`device.type == "cpu"`,
        `flag in ("cpu", "mps")`), the host's included; None for any other test."""
        if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
            return None
        target = node.comparisons[0]
        if isinstance(target.operator, cst.Equal):
            return self._string_device(target.comparator) or self._string_device(node.left)
        if isinstance(target.operator, cst.In) and isinstance(target.comparator, (cst.Tuple, cst.List, cst.Set)):
            found = [self._string_device(e.value) for e in target.comparator.elements]
            if found and all(p is not None for p in found):
                return frozenset().union(*found)
        return None

    def _setting(self, left: cst.BaseExpression, op: cst.BaseCompOp, right: cst.BaseExpression) -> Truth | None:
        """`os.environ.get("FORCE_CUDA", "0") == "1"`: a variable compared with a value that is no
        device; comparing it with an "off" value ("0", "false") says the opposite."""
        name = self._env_name(left)
        value = right
        if name is None:
            name, value = self._env_name(right), left
        if name is None:
            return None
        truth = self._env(left, name)
        text = string_value(value)
        off = text is not None and text.strip().lower() in self.vocab.falsy
        if isinstance(value, cst.Integer):
            off = value.value == "0"
        default = self._lookup_default(left if value is right else right)
        if default is not None and _same_value(default, value):
            off = True  # `int(os.environ.get("RANK", -1)) != -1`: unlike its default, so the variable is set
        return truth if (isinstance(op, cst.Equal) != off) else ~truth

    def _lookup_default(self, node: cst.BaseExpression) -> cst.BaseExpression | None:
        """The default a lookup falls back to (`os.environ.get("RANK", -1)` -> -1), through `int(...)`."""
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and len(node.args) == 1:
            return self._lookup_default(node.args[0].value)
        if isinstance(node, cst.Call) and len(node.args) == 2 and self.ctx.qualify(node.func) in self.vocab.env_lookups:
            return node.args[1].value
        value = self._only_value(node)
        return None if value is None else self._lookup_default(value)

    def _count(self, left: cst.BaseExpression, op: cst.BaseCompOp, right: cst.BaseExpression) -> Truth:
        """`torch.cuda.device_count() > 0` (a device exists) or `> 1` (several may)."""
        if not isinstance(left, cst.Call):
            return UNKNOWN
        qualified = self.ctx.qualify(left.func) or ""
        platforms = self.vocab.available.get(qualified)
        if platforms is None or not qualified.endswith("device_count"):
            return UNKNOWN
        number = right.value if isinstance(right, cst.Integer) else None
        if (isinstance(op, cst.GreaterThan) and number == "0") or (isinstance(op, cst.GreaterThanEqual) and number == "1") \
                or (isinstance(op, cst.NotEqual) and number == "0"):
            return on(platforms, certain=True)
        if isinstance(op, (cst.GreaterThan, cst.GreaterThanEqual)):
            return on(platforms, certain=False)
        return UNKNOWN

    def _string_device(self, node: cst.BaseExpression) -> frozenset[str] | None:
        """A device string ("cuda:0"), or an enum-like constant naming a device (`RNGType.CUDA`,
        `DistributedType.MULTI_GPU`, `DeviceType.XPU`): `rng_type == RNGType.CUDA` in a chain
        beside `RNGType.XLA` is a device dispatch like `device.type == "cuda"`."""
        text = string_value(node)
        if text is None and isinstance(node, cst.Attribute) and node.attr.value.isupper():
            text = node.attr.value.lower().removeprefix("multi_")
        return self.vocab.device(text) if text is not None else None

    # -- decorators, exits, handlers -----------------------------------------------------------------
    def decorator(self, expression: cst.BaseExpression) -> Truth | None:
        """Where a decorated test runs (`@pytest.mark.skipif(not torch.cuda.is_available(), ...)`,
        `@require_torch_gpu`); None for any other decorator."""
        func = expression.func if isinstance(expression, cst.Call) else expression
        qualified = self.ctx.qualify(func)
        parts = dotted_parts(func)
        name = parts[-1] if parts else None
        if isinstance(expression, cst.Call) and expression.args:
            condition = expression.args[0].value
            if qualified in self.vocab.skip_if or name == "skipif" or name == "skipIf":
                if string_value(condition) is None:
                    return ~self.truth(condition)
            if qualified in self.vocab.skip_unless or name == "skipUnless":
                if string_value(condition) is None:
                    return self.truth(condition)
        if name is not None:
            for pattern, platforms in self.vocab.requires:
                if pattern.fullmatch(name):
                    return on(platforms, certain=True)
            if name.startswith(("require_", "requires_")) and name not in ("require_torch", "requires_grad"):
                return OPTIONAL  # @require_bitsandbytes, @require_flash_attn: a package must be there
        return None

    def exit_guard(self, statement: cst.CSTNode) -> Truth | None:
        """For `if <test>: return` (or continue, break, a test skip) with no else: what must hold
        for the code after it to run. A `raise` or `sys.exit()` does not count: the code then fails
        on the other targets, by design."""
        if not isinstance(statement, cst.If) or statement.orelse is not None:
            return None
        if not self._exits(_last_statement(statement)):
            return None
        return ~self.truth(statement.test)

    def requirement(self, statement: cst.CSTNode) -> bool:
        """`if cupy is None: raise ImportError(...)` (no else): the code after it needs the optional
        package and raises where it is missing; there is no fallback."""
        if not isinstance(statement, cst.If) or statement.orelse is not None:
            return False
        last = _last_statement(statement)
        return isinstance(last, cst.Raise) and not self._exits(last) and (~self.truth(statement.test)).requires_package

    def exits_block(self, statement: cst.If) -> bool:
        """Whether the body of an `if` always leaves the block (return, continue, break, raise)."""
        last = _last_statement(statement)
        return isinstance(last, (cst.Return, cst.Continue, cst.Break, cst.Raise)) or self._exits(last)

    def _exits(self, node: cst.CSTNode | None) -> bool:
        if isinstance(node, (cst.Return, cst.Continue, cst.Break)):
            return True
        if isinstance(node, cst.Expr) and isinstance(node.value, cst.Call):
            return self._is_skip(node.value.func)
        if isinstance(node, cst.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, cst.Call) else node.exc
            parts = dotted_parts(exc)
            return bool(parts) and (".".join(parts) in self.vocab.exit_raises or parts[-1] in self.vocab.exit_raises)
        return False

    def _is_skip(self, func: cst.BaseExpression) -> bool:
        qualified = self.ctx.qualify(func)
        parts = dotted_parts(func)
        return (qualified in self.vocab.exit_calls
                or (parts is not None and (parts[-1] in ("skipTest", "importorskip") or ".".join(parts) in self.vocab.exit_calls)))

    def module_skip(self, statement: cst.CSTNode) -> Truth | None:
        """`pytestmark = pytest.mark.skipif(...)` and `pytest.importorskip("x")` at module level."""
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        small = statement.body[0]
        if isinstance(small, cst.Assign) and any(
                isinstance(t.target, cst.Name) and t.target.value == "pytestmark" for t in small.targets):
            value = small.value
            return self.decorator(value) if isinstance(value, cst.Call) else None
        call = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
        if isinstance(call, cst.Call):
            parts = dotted_parts(call.func)
            if parts and parts[-1] == "importorskip":
                return OPTIONAL
        return None

    def fallback(self, node: cst.Try | cst.TryStar) -> bool:
        """Whether an except clause catches the failure and goes on without it: it does not re-raise
        (`except ImportError: raise` is no fallback) nor hand the error on to be raised later
        (`except BaseException as e: errors.append(e)`)."""
        for handler in node.handlers:
            if not self._catches(handler.type):
                continue
            caught = handler.name.name.value if handler.name is not None and isinstance(handler.name.name, cst.Name) \
                else None
            if all(self._goes_on(statement, caught) for statement in handler.body.body):
                return True
        return False

    def _goes_on(self, statement: cst.CSTNode, caught: str | None) -> bool:
        if not isinstance(statement, cst.SimpleStatementLine):
            return True  # a compound statement (if/for/with): the handler does real work
        for small in statement.body:
            if isinstance(small, cst.Raise):
                return False
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and caught is not None \
                    and not is_message_call(small.value, self.ctx.catalogue) \
                    and any(isinstance(a.value, cst.Name) and a.value.value == caught for a in small.value.args):
                return False  # the error is recorded to be raised elsewhere
        return True

    def _catches(self, kind: cst.BaseExpression | None) -> bool:
        if kind is None:
            return True  # bare except
        names = [e.value for e in kind.elements] if isinstance(kind, cst.Tuple) else [kind]
        for name in names:
            parts = dotted_parts(name)
            if parts and parts[-1] in self.vocab.fallback_catches:
                return True
        return False


def _same_value(a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    """Two literals that read the same (`-1` and `-1`, `"0"` and `'0'`, and `"-1"` and `-1`: a lookup's
    string default read through `int(...)`)."""
    if isinstance(a, cst.Name) or isinstance(b, cst.Name):  # `None`, `True`: the same name only
        return isinstance(a, cst.Name) and isinstance(b, cst.Name) and a.value == b.value
    number = (cst.Integer, cst.UnaryOperation)
    text_a, text_b = (string_value(v) if string_value(v) is not None else
                      cst.Module([]).code_for_node(v) if isinstance(v, number) else None for v in (a, b))
    return text_a is not None and text_b is not None and text_a.strip() == text_b.strip()


def _flag_kind(name: str) -> str:
    """`IS_HIP`, `is_rocm_build`: which build this is; `use_cuda`, `args.xla`: an option the user sets."""
    return "build" if name.lstrip("_").lower().startswith("is_") else "option"


def _last_statement(statement: cst.If) -> cst.CSTNode | None:
    """The last statement of an `if`'s body (the last small one of a `x; return` line), or None."""
    body = statement.body.body
    last = body[-1] if body else None
    if isinstance(last, cst.SimpleStatementLine) and last.body:
        last = last.body[-1]
    return last
