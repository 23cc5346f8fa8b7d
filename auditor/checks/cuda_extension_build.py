from __future__ import annotations

import re

import libcst as cst

from auditor import targets
from auditor.checks._kernel import KernelApiRule, literal_strings
from auditor.checks.base import Invalid, Valid
from auditor.context import PythonContext, Reference
from auditor.model import Category, Severity
from auditor.python.positions import node_ranges
from auditor.python.syntax import keyword, positional, string_value
from auditor.python.tree import child_nodes
from auditor.targets import effect_fields

EXT = "torch.utils.cpp_extension."
_CUDA_FILE = re.compile(r"\.cuh?$")
_CUDA_BUILDER = re.compile(r"CUDA\w*(Builder|Extension)")
_CUDA_FILE_IN_TEXT = re.compile(r"""\.cuh?["']""")
# Strings that only a CUDA build uses, when listed in Python build code (op builders, setup helpers):
# CUDA source paths, CUDA library link flags and nvcc architecture flags.
_BUILD_STRING = re.compile(
    r"[\w./-]+\.cuh?|-l(cudart|cuda|curand|cublas|cublasLt|cufft|cusparse|cusolver|nvrtc|nccl|cudnn|nvToolsExt|nvidia-ml)"
    r"|-gencode[= ].*|.*arch=(compute|sm)_\d+.*")


class CudaExtensionBuild(KernelApiRule):
    fields = KernelApiRule.fields | {"short", "port"}
    code = "LK402"
    name = "cuda-extension-build"
    category = Category.KERNEL
    severity = Severity.BLOCKER
    subject = "`{short}`"
    message = "`{short}`: a CUDA C++ extension build (nvcc), so these ops exist only on NVIDIA{port} and raise on {raising_targets}."
    suggestion = "{replacement}"
    min_torch = "2.7"
    supersedes = ("LK402",)
    report_refs = True  # `if CUDA_HOME is None`, `cmdclass={"build_ext": BuildExtension}`
    # A source path is a string ending in .cu/.cuh, so its closing quote follows (".cu" alone
    # would let through every `x.cumsum()`).
    tokens = ("cuda", '.cu"', ".cu'", '.cuh"', ".cuh'", "-lcu", "-lnvrtc", "-lnccl", "-lnvtoolsext", "-lnvidia-ml",
              "-gencode", "arch=compute_", "arch=sm_")
    what = ("Finds CUDA extension builds through `torch.utils.cpp_extension`: `CUDAExtension` (import and uses), "
            "`CUDA_HOME`, `load(...)` with a `.cu`/`.cuh` source, `with_cuda=True` or `extra_cuda_cflags`, "
            "`load_inline(..., cuda_sources=...)`, and `BuildExtension` when the same file builds a `CUDAExtension`. "
            "`CppExtension` alone is portable and not reported. Also finds the strings only a CUDA build lists, in "
            "any Python build code (op builders, setup helpers): `.cu`/`.cuh` source paths, CUDA link flags "
            "(`-lcudart`, `-lcublas`, ...) and nvcc architecture flags (`-gencode ...`, `arch=sm_80`), and a "
            "project's own CUDA build helpers (`CUDAOpBuilder`, `CUDA...Extension` imported or subclassed).")
    why = ("The sources are compiled by nvcc, so the ops only exist where the CUDA toolkit was found. A HIP build of "
           "torch hipifies them for ROCm (with gaps for CUTLASS, cuDNN and inline PTX); on TPU, Trainium, MPS, XPU and "
           "CPU `CUDA_HOME` is None and the build fails or the import of the extension raises.")
    instead = ("Register the op with a pure-PyTorch reference and build the CUDA kernel only where it can run:\n\n"
               "```python\next = [CppExtension(\"mylib._C\", [\"ops.cpp\"])]\n"
               "if CUDA_HOME is not None or ROCM_HOME is not None:\n"
               "    ext = [CUDAExtension(\"mylib._C\", [\"ops.cpp\", \"ops_cuda.cu\"])]\n```\n\n"
               "In Python, `torch.library.custom_op` with `.register_kernel(\"cuda\")` for the fast path; "
               "`SyclExtension` / `sycl_sources=` for XPU and `torch.mps.compile_shader` for MPS (torch 2.7).")

    VALID = [
        Valid("from torch.utils.cpp_extension import BuildExtension, CppExtension\n"
              "ext = [CppExtension('m', ['m.cpp'])]\nsetup(cmdclass={'build_ext': BuildExtension})\n", path="setup.py"),
        Valid("from torch.utils.cpp_extension import load\nm = load(name='m', sources=['m.cpp'])\n"),
        Valid("from torch.utils.cpp_extension import load_inline\nm = load_inline('m', cpp_sources=src, functions=['f'])\n"),
        Valid('"""Build with torch.utils.cpp_extension.CUDAExtension."""\n# CUDAExtension(name, ["k.cu"])\n'
              'print("CUDA_HOME is not set")\n'),
        Valid("from torch.utils.cpp_extension import CppExtension\ndef f(load):\n    return load('m', ['k.cpp'], with_cuda=True)\n"),
        Valid("from json import load\ncfg = load(open('k.cu.json'), extra_cuda_cflags=1)\n"),
        Valid("FILES = ['model.cpp', 'notes.txt', 'kernel.cu.bak']\nLIBS = ['-lm', '-lpthread']\n"),
        Valid("from .builder import CPUOpBuilder\n\nclass AdamBuilder(CPUOpBuilder):\n    pass\n"),
    ]
    INVALID = [
        Invalid("from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
                "ext = CUDAExtension('m', ['k.cu'])\nsetup(ext_modules=[ext], cmdclass={'build_ext': BuildExtension})\n",
                path="setup.py", line=3),
        Invalid("from torch.utils import cpp_extension as ce\next = ce.CUDAExtension('m', ['k.cu'])\n", line=2),
        Invalid("from torch.utils.cpp_extension import load\nm = load(name='m', sources=['a.cpp', 'k.cu'])\n", line=2),
        Invalid("import torch.utils.cpp_extension as ext\nm = ext.load('m', ['a.cpp'], extra_cuda_cflags=['-O3'])\n", line=2),
        Invalid("from torch.utils.cpp_extension import load_inline\nm = load_inline('m', cpp, cuda_sources=cu)\n", line=2),
        Invalid("import torch.utils.cpp_extension\nif torch.utils.cpp_extension.CUDA_HOME is None:\n    raise SystemExit\n",
                line=2),
        Invalid("from torch.utils.cpp_extension import CUDA_HOME\n", path="setup.py", line=1),
        Invalid("from torch.utils.cpp_extension import CUDA_HOME, load\n"
                "def build():\n    return load('k', ['k.cpp', 'k.cu'])\n", line=1),
        Invalid("from torch.utils.cpp_extension import load\nSRC = ['k.cu']\nm = load(name='m', sources=SRC)\n", line=3),
        Invalid("class RandomBuilder(OpBuilder):\n    def sources(self):\n        return ['csrc/pt_binding.cpp',\n"
                "                'csrc/gather.cu']\n", line=4),
        Invalid("def extra_ldflags():\n    return ['-lcurand', '-lcudart']\n", line=2),
        Invalid("from .builder import CUDAOpBuilder\n\nclass RandomBuilder(CUDAOpBuilder):\n    pass\n", line=3),
        Invalid("NVCC_FLAGS = ['-O3', '-gencode=arch=compute_80,code=sm_80']\n", line=1),
    ]

    def begin(self, ctx: PythonContext) -> None:
        super().begin(ctx)
        ctx.state[self.code + ":build"] = ([], [False])  # deferred BuildExtension refs; CUDAExtension seen

    # A project's own CUDA build helper (deepspeed's CUDAOpBuilder, a CUDAExtension subclass):
    # importing or subclassing it is the same tie, whatever module it comes from.
    def visit_ImportFrom(self, node: cst.ImportFrom, ctx: PythonContext) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        names = [alias.name.value for alias in node.names if isinstance(alias.name, cst.Name)]
        found = [name for name in names if _CUDA_BUILDER.fullmatch(name) and name != "CUDAExtension"]
        if found:
            self._report(ctx, node, short=found[0], replacement=self._build_replacement(ctx))

    def visit_ClassDef(self, node: cst.ClassDef, ctx: PythonContext) -> None:
        for base in node.bases:
            value = base.value
            name = value.attr.value if isinstance(value, cst.Attribute) else getattr(value, "value", None)
            if isinstance(name, str) and _CUDA_BUILDER.fullmatch(name):
                self._report(ctx, base, short=name, replacement=self._build_replacement(ctx))

    def visit_List(self, node: cst.List | cst.Tuple | cst.Set, ctx: PythonContext) -> None:
        """One finding per list, from its first CUDA build string to its last."""
        found = [e.value for e in node.elements
                 if (value := string_value(e.value)) is not None and _BUILD_STRING.fullmatch(value)]
        if found:
            self._report(ctx, found[0], end_node=found[-1], short=string_value(found[0]),
                         replacement=self._build_replacement(ctx))

    visit_Tuple = visit_List
    visit_Set = visit_List

    def _build_replacement(self, ctx: PythonContext) -> str:
        entry = ctx.catalogue.lookup_api(EXT + "CUDAExtension")
        return entry.replacement if entry is not None else ""

    def accepts(self, ref: Reference, ctx: PythonContext) -> bool:
        member = ref.entry.name[len(EXT):]
        if member in _LOOKED_UP and ref.call is None and self._builds_nothing(ctx):
            self.emit(ref, ctx, **{"__optional": ("probe", member)})
            return False
        if member == "CUDAExtension":
            ctx.state[self.code + ":build"][1][0] = True
            return True
        if member == "BuildExtension":
            ctx.state[self.code + ":build"][0].append(ref)
            return False
        if member in ("load", "load_inline"):
            return ref.call is not None and self._compiles_cuda(ref.call, member, ctx)
        return True

    def _builds_nothing(self, ctx: PythonContext) -> bool:
        key = self.code + ":probe"
        if key not in ctx.state:
            ctx.state[key] = _builds_nothing(ctx)
        return ctx.state[key]

    def emit(self, ref: Reference, ctx: PythonContext, **fields: object) -> None:
        short = ref.qualified.removeprefix(EXT).removeprefix("torch.")
        super().emit(ref, ctx, short=short, **self._port(ctx), **self._cpu_build(ctx), **fields)

    def _report(self, ctx: PythonContext, node: cst.CSTNode, **fields: object) -> None:
        ctx.report(self, node, **self._port(ctx), **self._cpu_build(ctx), **fields)

    def _cpu_build(self, ctx: PythonContext) -> dict[str, object]:
        """A build that compiles a CPU extension where CUDA is missing (`Extension = CppExtension if
        suffix == "cpu" else CUDAExtension`; `extension = CppExtension` then `if WITH_CUDA: extension =
        CUDAExtension`): its CUDA half is an optional fast path, the CPU ops the fallback."""
        key = self.code + ":cpu"
        if key not in ctx.state:
            ctx.state[key] = cpu_variant(ctx.module, ctx.text)
        choice = ctx.state[key]
        return {} if choice is None else {"__optional": ("cpu_build", *choice)}

    def _port(self, ctx: PythonContext) -> dict[str, object]:
        """Where the ops exist besides NVIDIA: ROCm through the project's own HIP build (rules/kernel.toml
        [hip_build]: its effect there becomes `works`), nowhere else when the build hands hipcc a flag
        only nvcc knows (`--use_fast_math`: ROCm raises too), else the targets a hipify port serves."""
        table = ctx.catalogue.table("kernel").get("hip_build", {})
        hip = table.get("target")
        if hip and ctx.facts is not None and ctx.facts.hip_build:
            return {"__effects": {**self.effects(), hip: "works"},
                    "port": f" and on {targets.get(hip).display} (through the project's HIP build)"}
        flag = _nvcc_only_flag(ctx, table.get("nvcc_only_flags"))
        if hip and flag:
            return {"__effects": {**self.effects(), hip: "raises"},
                    "port": f" (not on {targets.get(hip).display} either: its hipcc stops at the nvcc-only flag `{flag}`)"}
        return {"port": f" ({effect_fields(self.effects())['degrading_targets']} after a port)"}

    def _compiles_cuda(self, call: cst.Call, member: str, ctx: PythonContext) -> bool:
        with_cuda = keyword(call, "with_cuda")
        if with_cuda is not None and isinstance(with_cuda.value, cst.Name) and with_cuda.value.value == "True":
            return True
        flags = keyword(call, "extra_cuda_cflags")
        if flags is not None and not _is_empty(flags.value):
            return True
        if member == "load_inline":
            sources = keyword(call, "cuda_sources") or positional(call, 2)
            return sources is not None and not _is_empty(sources.value)
        sources = keyword(call, "sources") or positional(call, 1)
        if sources is None:
            return False
        literals = literal_strings(sources.value)
        if any(_CUDA_FILE.search(s) for s in literals):
            return True
        # Sources built elsewhere (a variable, a glob): trust a ".cu" file named anywhere in this file.
        return not isinstance(sources.value, (cst.List, cst.Tuple)) and bool(_CUDA_FILE_IN_TEXT.search(ctx.text))

    def finish(self, ctx: PythonContext) -> None:
        pending, seen = ctx.state.get(self.code + ":build", ([], [False]))
        if seen[0]:
            for ref in pending:
                self.emit(ref, ctx)


# Names a module may look up or pass on without building anything with them.
_LOOKED_UP = frozenset({"CUDA_HOME", "CUDAExtension", "BuildExtension"})
# What makes a module build code (or a JIT build's loader): a builder called, ext_modules, nvcc, a
# .cu source named, setup(...).
_BUILD_CODE = re.compile(r"\b(?:CUDA\w*Extension|CppExtension|BuildExtension)\s*[(.]|\bnvcc\b|\bload_inline\b"
                         r"|cpp_extension\.load\b|\bext_modules\b|\.cuh?[\"']|^\s*(?:setuptools\.)?setup\(",
                         re.MULTILINE)
_REQUIRES_TOOLKIT = re.compile(r"CUDA_HOME[^\n]*\n[^\n]*\braise\b")
_BUILD_FILE = re.compile(r"(^|/)(setup|build\w*|\w*_build|\w*builder\w*)\.py$|(^|/)(\w*_)?(builders?|build|build_tools)/")


def _builds_nothing(ctx: PythonContext) -> bool:
    """A module that imports `CUDA_HOME` or the builder classes and builds nothing with them: an
    environment report's `_get_cuda_home()`, a compatibility wrapper returning `CUDAExtension` for
    another project's setup.py (mmengine's parrots_wrapper). `CUDA_HOME` is None where the toolkit
    is not, and no op is compiled here. Not a setup or build script, nor a module where a missing
    toolkit raises (`if CUDA_HOME is None: raise`)."""
    return (_BUILD_FILE.search(ctx.path) is None and _BUILD_CODE.search(ctx.text) is None
            and _REQUIRES_TOOLKIT.search(ctx.text) is None)


def _nvcc_only_flag(ctx: PythonContext, pattern: str | None) -> str | None:
    """The first flag only nvcc knows in a string literal of the module (rules/kernel.toml
    [hip_build] nvcc_only_flags), once per file."""
    key = "LK402:nvcc-only"
    if key not in ctx.state:
        found = None
        if pattern:
            match = re.search(rf"""["'][^"'\n]*?(?<![\w-])({pattern})(?![\w-])""", ctx.text)
            found = match.group(1) if match else None
        ctx.state[key] = found
    return ctx.state[key]


def cpu_variant(module: cst.Module, text: str) -> tuple[str, int] | None:
    """The condition under which a module builds a `CUDAExtension` instead of a `CppExtension` of
    the same ops, with its line: the two builders in the two arms of one `if`/`else` or conditional
    expression, or a name bound to `CppExtension` and rebound to `CUDAExtension` in an `if`. None:
    the module builds no CPU variant (a CPU extension of other ops beside a CUDA one is none)."""
    if "CppExtension" not in text or "CUDAExtension" not in text:
        return None
    found = _cpu_choice(module)
    if found is None:
        return None
    test = " ".join(module.code_for_node(found).split())[:80]
    line = node_ranges(module, text, [found]).get(id(found), (0,))[0]
    return test, line


_BUILDERS = {"CppExtension": frozenset({"cpu"}), "CUDAExtension": frozenset({"cuda"})}
_BOTH, _NONE = frozenset({"cpu", "cuda"}), frozenset()


def _cpu_choice(module: cst.Module) -> cst.BaseExpression | None:
    """The test of the first `if`/`else` or conditional expression that picks between the two
    builders, or of an `if` that rebinds a name bound to `CppExtension` to `CUDAExtension`. One
    walk: the builders each node names are gathered bottom-up once, not once per enclosing `if`."""
    order: list[cst.CSTNode] = []  # source order, parents first
    below: dict[int, list[cst.CSTNode]] = {}
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        order.append(node)
        children = below[id(node)] = child_nodes(node)
        stack.extend(reversed(children))
    named: dict[int, frozenset[str]] = {}
    for node in reversed(order):
        own = _BUILDERS.get(node.value, _NONE) if isinstance(node, cst.Name) else _NONE
        named[id(node)] = own.union(*(named[id(child)] for child in below[id(node)]))

    def builders(node: cst.CSTNode | None) -> frozenset[str]:
        return named[id(node)] if node is not None else _NONE

    cpu_names: set[str] = set()  # names bound to CppExtension so far
    for node in order:
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value == "CppExtension":
            cpu_names.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))
        elif isinstance(node, cst.IfExp):
            body, orelse = builders(node.body), builders(node.orelse)
            if body | orelse == _BOTH and body != orelse:
                return node.test
        elif isinstance(node, cst.If):
            body, orelse = builders(node.body), builders(node.orelse)
            if body and orelse and body != orelse and body | orelse == _BOTH:
                return node.test
            if _rebinds_to_cuda(node, cpu_names):  # `extension = CppExtension` ... `if cuda: extension = CUDAExtension`
                return node.test
    return None


def _rebinds_to_cuda(node: cst.If, cpu_names: set[str]) -> bool:
    for statement in node.body.body:
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if (isinstance(small, cst.Assign) and isinstance(small.value, cst.Name) and small.value.value == "CUDAExtension"
                    and any(isinstance(t.target, cst.Name) and t.target.value in cpu_names for t in small.targets)):
                return True
    return False


def _is_empty(node: cst.BaseExpression) -> bool:
    return ((isinstance(node, cst.Name) and node.value in ("None", "False"))
            or (isinstance(node, (cst.List, cst.Tuple)) and not node.elements)
            or string_value(node) == "")

