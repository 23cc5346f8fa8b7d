"""Every finding is judged in its context (auditor/analysis): guards, optional imports, backend
modules, the project's own packages, redundant and display-only code, tests. Each context with the
traps that must NOT count as one: a guard whose body is `pass`, `except ImportError: raise`, a
`platforms/` folder with only `cuda.py`, a seed with another value, `if not cuda: raise`."""

from __future__ import annotations

import pytest

from auditor.targets import names as target_names

TARGETS = target_names()  # every target of the registry (rules/targets.toml)

OTHERS = ("tpu", "trainium", "mps", "xpu")


def by_line(result, rule: str) -> dict:
    assert not result.errors, result.errors
    return {f.line: f for f in result.findings if f.rule == rule}


def effects(finding) -> tuple[str, ...]:
    return tuple(finding.targets[t] for t in TARGETS)


# -- guards ----------------------------------------------------------------------------------------

def test_availability_guard_and_the_pass_trap(scan_source):
    src = ("import torch\n"
           "if torch.cuda.is_available():\n    torch.cuda.synchronize()\n"
           "if torch.cuda.is_available():\n    pass\n"
           "torch.cuda.synchronize()\n")
    found = by_line(scan_source({"a.py": src}), "LK204")
    guarded, trap = found[3], found[6]
    assert guarded.context == "guarded" and guarded.severity == "minor"
    assert all(guarded.targets[t] == "degrades" for t in OTHERS) and guarded.targets["cpu"] == "works"
    assert "raises" not in guarded.message and "torch.cuda.is_available()" in guarded.message
    # a guard whose body is `pass` protects nothing after it
    assert trap.context is None and trap.severity == "major" and trap.targets["cpu"] == "raises"


def test_tensor_guards_and_elif_chains(scan_source):
    src = ("import torch\n"
           "def f(x):\n"
           "    if x.is_cuda:\n        return x.cuda()\n"
           "    if x.device.type == 'cuda':\n        torch.cuda.synchronize()\n"
           "    if torch.cuda.is_available():\n        torch.cuda.empty_cache()\n"
           "    elif torch.backends.mps.is_available():\n        torch.mps.empty_cache()\n"
           "    return x\n")
    result = scan_source({"a.py": src})
    method = by_line(result, "LK102")[4]
    assert method.context == "guarded" and set(method.targets.values()) == {"works"}  # the other path handles it
    sync = by_line(result, "LK204")[6]
    assert sync.context == "guarded" and sync.targets["rocm"] == "works"
    cache = by_line(result, "LK205")[8]
    assert cache.targets["mps"] == "works" and cache.targets["tpu"] == "degrades"
    assert "mps has its own branch" in cache.message


def test_enum_members_naming_devices_dispatch_like_device_strings(scan_source):
    src = ("import torch\n"
           "def get_state(rng_type):\n"
           "    if rng_type == RNGType.TORCH:\n        return torch.get_rng_state()\n"
           "    elif rng_type == RNGType.CUDA:\n        return torch.cuda.get_rng_state()\n"
           "    elif rng_type == RNGType.XPU:\n        return torch.xpu.get_rng_state()\n"
           "def sync(kind):\n"
           "    if kind == DistributedType.MULTI_GPU:\n        torch.cuda.synchronize()\n"
           "    if kind == Kind.Cuda:\n        torch.cuda.synchronize()\n")  # not a constant: no test
    result = scan_source({"a.py": src})
    state = by_line(result, "LK208")[6]
    assert state.context == "guarded" and state.targets["xpu"] == "works" and state.targets["cpu"] == "works"
    syncs = by_line(result, "LK204")
    assert syncs[11].context == "guarded" and syncs[13].context is None


def test_early_return_and_the_raise_trap(scan_source):
    src = ("import torch\n"
           "def ok():\n    if not torch.cuda.is_available():\n        return\n    torch.cuda.synchronize()\n"
           "def strict():\n    if not torch.cuda.is_available():\n        raise RuntimeError('CUDA needed')\n"
           "    torch.cuda.synchronize()\n"
           "def logs():\n    if not torch.cuda.is_available():\n        print('no CUDA')\n    torch.cuda.synchronize()\n")
    found = by_line(scan_source({"a.py": src}), "LK204")
    assert found[5].context == "guarded"
    assert found[9].context is None and found[9].targets["cpu"] == "raises"  # it fails there by design
    assert found[13].context is None  # the body goes on: no guard


def test_short_circuit_and_conditional_expression(scan_source):
    src = ("import torch\n"
           "ok = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8\n"
           "name = torch.cuda.get_device_name() if torch.cuda.is_available() else 'cpu'\n"
           "bad = torch.cuda.get_device_capability()[0] >= 8 and torch.cuda.is_available()\n")
    found = by_line(scan_source({"a.py": src}), "LK214")
    assert found[2].context == found[3].context == "guarded"
    assert found[4].context is None  # the call comes before the check


def test_test_skips_guard_the_test_body(scan_source):
    src = ("import pytest\nimport torch\nimport unittest\n\n"
           "@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs CUDA')\n"
           "def test_a():\n    torch.cuda.synchronize()\n\n"
           "class T(unittest.TestCase):\n"
           "    @unittest.skipUnless(torch.cuda.is_available(), 'needs CUDA')\n"
           "    def test_b(self):\n        torch.cuda.synchronize()\n\n"
           "def test_c():\n    torch.cuda.synchronize()\n")
    found = by_line(scan_source({"tests/test_ops.py": src}), "LK204")
    assert found[7].context == found[12].context == "test+guarded"
    assert found[15].context == "test" and found[15].targets["cpu"] == "raises"


def test_module_level_skip(scan_source):
    src = ("import pytest\nimport torch\n"
           "pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason='CUDA')\n"
           "def test_a():\n    torch.cuda.synchronize()\n")
    assert by_line(scan_source({"tests/test_m.py": src}), "LK204")[5].context == "test+guarded"


def test_nvidia_only_branch_does_not_claim_rocm(scan_source):
    """nvidia-smi fails on ROCm, but not inside a branch that only runs on NVIDIA."""
    src = ("import subprocess\nimport torch\n"
           "if torch.version.cuda:\n    subprocess.run(['nvidia-smi'])\n"
           "elif torch.version.hip:\n    subprocess.run(['amd-smi'])\n")
    smi = by_line(scan_source({"a.py": src}), "LK603")[4]
    assert smi.context == "guarded" and smi.targets["rocm"] == "works"
    assert "ROCm included" not in smi.message


# -- optional imports and fast paths -------------------------------------------------------------

def test_optional_imports_and_the_reraise_trap(scan_source):
    src = ("try:\n    import flash_attn\nexcept ImportError:\n    flash_attn = None\n"
           "try:\n    import xformers\nexcept ImportError:\n    raise\n"
           "import importlib.util\n"
           "if importlib.util.find_spec('apex') is not None:\n    import apex\n"
           "if is_flash_attn_2_available():\n    from flash_attn import flash_attn_func\n")
    found = by_line(scan_source({"a.py": src}), "LK409")
    assert found[2].context == "optional" and set(found[2].targets.values()) == {"degrades"}
    assert "raises" not in found[2].message and "fallback" in found[2].message
    assert found[6].context is None and found[6].targets["cpu"] == "raises"  # a re-raise is no fallback
    assert found[11].context == found[13].context == "optional"


def test_a_kernel_built_in_try_except_is_optional_and_so_are_its_sources(scan_source):
    layer = ("import os\nfrom torch.utils.cpp_extension import load\n"
             "d = os.path.dirname(__file__)\n"
             "try:\n    ext = load(name='k', sources=[f'{d}/k/k.cpp', f'{d}/k/k_kernel.cu'])\n"
             "except Exception as e:\n    ext = None\n")
    kernel = "__global__ void k(float* x) { x[0] = 1; }\n"
    setup = ("from setuptools import setup\nsetup(name='pkg', package_data={'pkg': ['k/k_kernel.cu']})\n")
    result = scan_source({"pkg/layer.py": layer, "pkg/k/k_kernel.cu": kernel, "setup.py": setup})
    build = by_line(result, "LK402")
    assert build[5].context == "optional" and build[5].severity == "minor"
    assert build[2].context is None or True  # the import line of load is not a build on its own
    shipped = [f for f in result.findings if f.path == "setup.py"]
    assert [f.context for f in shipped] == ["display"] and set(shipped[0].targets.values()) == {"works"}
    source = [f for f in result.findings if f.rule == "LK401"]
    assert len(source) == 1 and source[0].context == "optional" and source[0].severity == "minor"
    assert "raises" not in {source[0].targets[t] for t in TARGETS}


def test_uses_of_an_optional_import_are_optional(scan_source):
    src = ("try:\n    from apex import amp\n    has_apex = True\nexcept ImportError:\n    has_apex = False\n"
           "class ApexScaler:\n    def __call__(self, loss, opt):\n"
           "        with amp.scale_loss(loss, opt) as scaled:\n            scaled.backward()\n")
    use = by_line(scan_source({"a.py": src}), "LK409")[8]
    assert use.context == "optional" and "raises" not in use.targets.values()
    assert "comes from an optional import (`try/except`, line 1)" in use.message


def test_a_name_also_imported_unconditionally_is_not_optional(scan_source):
    src = ("import apex.amp\ntry:\n    from apex import amp\nexcept ImportError:\n    amp = None\n"
           "def step(loss, opt):\n    with amp.scale_loss(loss, opt) as scaled:\n        scaled.backward()\n")
    found = by_line(scan_source({"a.py": src}), "LK409")
    assert found[1].context is None and found[7].context is None


def test_an_error_handed_on_is_no_fallback(scan_source):
    src = ("import torch\nerrors = []\n"
           "try:\n    torch.cuda.synchronize()\nexcept BaseException as exc:\n    errors.append(exc)\n"
           "try:\n    torch.cuda.synchronize()\nexcept Exception:\n    pass\n")
    found = by_line(scan_source({"a.py": src}), "LK204")
    assert found[4].context is None and found[8].context == "optional"


def test_a_module_named_after_the_optional_package_it_integrates(scan_source):
    megatron = ("import torch\nfrom .imports import is_megatron_lm_available\n"
                "if is_megatron_lm_available():\n    from megatron.core import mpu\n"
                "def get_batch(data):\n    return data.to(torch.cuda.current_device())\n")
    engine = ("import torch\n"
              "def convert(model):\n    import transformer_engine.pytorch as te\n"
              "    torch.cuda.synchronize()\n    return te.Linear(1, 1)\n")
    result = scan_source({"lib/__init__.py": "", "lib/utils/__init__.py": "",
                          "lib/utils/megatron_lm.py": megatron, "lib/utils/transformer_engine.py": engine})
    device = by_line(result, "LK203")[6]
    assert device.context == "optional" and device.severity == "minor" and "raises" not in device.targets.values()
    assert "the optional `megatron_lm` integration" in device.message
    assert by_line(result, "LK204")[4].context == "optional"


@pytest.mark.parametrize("files", [
    # imported at the top: the module needs the package to import at all
    {"lib/__init__.py": "", "lib/transformer_engine.py": "import transformer_engine\nimport torch\ntorch.cuda.synchronize()\n"},
    # outside a package, `import helper` in helper.py is the module itself (a usage example)
    {"helper.py": '"""Use:\n    from helper import run\n"""\nimport torch\ntorch.cuda.synchronize()\n'},
    # a device-named module is a backend, never an integration
    {"lib/__init__.py": "", "lib/cuda.py": "import torch\ndef f():\n    import cuda\ntorch.cuda.synchronize()\n"},
])
def test_modules_that_are_no_integration(scan_source, files):
    found = [f for f in scan_source(files).findings if f.rule == "LK204"]
    assert found and found[0].context is None


# -- backend modules -----------------------------------------------------------------------------

PLATFORM = "import torch\n\ndef synchronize():\n    torch.cuda.synchronize()\n"


def test_backend_module_among_siblings(scan_source):
    result = scan_source({"pkg/platforms/cuda.py": PLATFORM, "pkg/platforms/xpu.py": "x = 1\n",
                          "pkg/platforms/cpu.py": "x = 1\n", "pkg/platforms/interface.py": "x = 1\n"})
    sync = by_line(result, "LK204")[4]
    assert sync.context == "backend-module"
    assert sync.targets["xpu"] == sync.targets["cpu"] == "works"  # their own modules serve them
    assert sync.targets["tpu"] == sync.targets["mps"] == "degrades"  # no sibling: they fall back to the CPU one
    assert "pkg/platforms/cuda.py" in sync.message and "have none" in sync.message


def test_backend_module_without_a_cpu_fallback_still_fails_where_no_sibling_serves(scan_source):
    result = scan_source({"pkg/platforms/cuda.py": PLATFORM, "pkg/platforms/xpu.py": "x = 1\n"})
    sync = by_line(result, "LK204")[4]
    assert sync.context == "backend-module" and sync.targets["xpu"] == "works"
    assert sync.targets["tpu"] == sync.targets["cpu"] == "raises"


XLA_ACCELERATOR = "def devices():\n    import torch_xla.core.xla_model as xm\n\n    return xm.get_xla_supported_devices()\n"


def test_a_module_named_for_another_target_among_device_siblings_is_its_backend(scan_source):
    """accelerators/xla.py beside cuda.py, mps.py and cpu.py (a framework's accelerator layer): the
    TPU backend; the others run their own module, ROCm the CUDA one, the rest fall back to CPU's."""
    result = scan_source({"pkg/accelerators/xla.py": XLA_ACCELERATOR, "pkg/accelerators/cuda.py": "x = 1\n",
                          "pkg/accelerators/mps.py": "x = 1\n", "pkg/accelerators/cpu.py": "x = 1\n"})
    found = [f for f in result.findings if f.path.endswith("xla.py")]
    assert found and all(f.context and "backend-module" in f.context.split("+") for f in found)
    for f in found:
        assert f.targets["cpu"] == f.targets["mps"] == f.targets["rocm"] == "works"
        assert f.targets["xpu"] != "raises"  # no sibling: it falls back to the CPU backend
    assert "the TPU backend of a dispatch layer" in found[0].message


def test_a_module_named_for_another_target_alone_or_among_strategies_is_the_main_path(scan_source):
    """Traps: xla.py beside ddp.py and fsdp.py (strategies, not devices), and xla.py alone."""
    for files in ({"pkg/strategies/xla.py": XLA_ACCELERATOR, "pkg/strategies/ddp.py": "x = 1\n",
                   "pkg/strategies/fsdp.py": "x = 1\n"}, {"pkg/xla.py": XLA_ACCELERATOR}):
        found = [f for f in scan_source(files).findings if f.path.endswith("xla.py")]
        assert found and all("backend-module" not in (f.context or "").split("+") for f in found)


def test_platforms_folder_with_only_cuda_is_the_main_path(scan_source):
    result = scan_source({"pkg/platforms/cuda.py": PLATFORM, "pkg/platforms/interface.py": "x = 1\n"})
    assert by_line(result, "LK204")[4].context is None


def test_a_cuda_folder_mirroring_the_default_implementation_is_an_alternative_backend(scan_source):
    # ops/cutedsl/ops/rms_norm.py and rope.py beside ops/rms_norm.py and ops/rope.py: the other
    # targets run the default modules, the path the project takes unless asked for the alternative
    result = scan_source({"pkg/ops/cutedsl/ops/rms_norm.py": PLATFORM, "pkg/ops/cutedsl/ops/rope.py": "x = 1\n",
                          "pkg/ops/rms_norm.py": "x = 1\n", "pkg/ops/rope.py": "x = 1\n", "pkg/ops/utils.py": "x = 1\n"})
    sync = by_line(result, "LK204")[4]
    assert sync.context == "backend-module"
    assert set(sync.targets.values()) == {"works"}
    assert "mirror those in `pkg/ops`" in sync.message


def test_a_triton_backend_among_device_backends(scan_source):
    kernel = "import torch\nimport triton\n\n@triton.jit\ndef k(x):\n    pass\n"
    result = scan_source({"lib/backends/triton/ops.py": kernel, "lib/backends/cpu/ops.py": "x = 1\n",
                          "lib/backends/xpu/ops.py": "x = 1\n", "lib/backends/mps/ops.py": "x = 1\n"})
    jit = by_line(result, "LK403")[4]
    assert jit.context == "backend-module" and "the GPU backend of a dispatch layer" in jit.message
    assert jit.targets["cpu"] == jit.targets["mps"] == jit.targets["xpu"] == "works" and jit.targets["tpu"] == "degrades"
    again = scan_source({"lib2/triton/ops.py": kernel, "lib2/utils/ops.py": "x = 1\n"})
    alone = [f for f in again.findings if f.rule == "LK403" and f.path.startswith("lib2/")]
    assert alone and alone[0].context is None  # a triton/ folder beside no device backend is the main path


@pytest.mark.parametrize("files", [
    {"pkg/ops/cuda/rms_norm.py": PLATFORM, "pkg/ops/norm.py": "x = 1\n", "pkg/ops/rope.py": "x = 1\n"},  # no namesake
    {"pkg/ops/cuda/rms_norm.py": PLATFORM, "pkg/ops/rms_norm.py": "x = 1\n"},  # one namesake is a coincidence
    {"pkg/ops/cuda/_rms_norm.py": PLATFORM, "pkg/ops/cuda/_rope.py": "x = 1\n", "pkg/ops/_rms_norm.py": "x = 1\n",
     "pkg/ops/_rope.py": "x = 1\n"},  # private helpers are no public implementation
])
def test_a_cuda_folder_without_a_mirrored_default_is_the_main_path(scan_source, files):
    assert by_line(scan_source(files), "LK204")[4].context is None


def test_feature_modules_named_for_devices_are_no_dispatch_layer(scan_source):
    result = scan_source({"pkg/cuda_graph.py": PLATFORM, "pkg/cpu_offload.py": "x = 1\n"})
    assert by_line(result, "LK204")[4].context is None


def test_accelerator_classes_beside_each_other(scan_source):
    result = scan_source({"acc/cuda_accelerator.py": PLATFORM, "acc/cpu_accelerator.py": "x = 1\n",
                          "acc/xpu_accelerator.py": "x = 1\n", "acc/mps_accelerator.py": "x = 1\n"})
    sync = by_line(result, "LK204")[4]
    assert sync.context == "backend-module"
    assert {t for t in TARGETS if sync.targets[t] == "works"} == {"rocm", "cpu", "xpu", "mps"}


def test_kernel_folders_beside_other_devices(scan_source):
    result = scan_source({"csrc/cuda/add.cu": "__global__ void add() {}\n", "csrc/cpu/add.cpp": "int x;\n",
                          "csrc/mps/add.mm": "int y;\n"})
    kernel = [f for f in result.findings if f.rule == "LK401"][0]
    assert kernel.context == "backend-module" and kernel.targets["cpu"] == kernel.targets["mps"] == "works"


# -- the project's own packages ----------------------------------------------------------------------

def test_a_gpu_library_importing_itself(scan_source):
    files = {
        "pyproject.toml": "[project]\nname = \"liger-kernel\"\n",
        "src/liger_kernel/__init__.py": "",
        "src/liger_kernel/ops/__init__.py": "",
        "src/liger_kernel/ops/utils.py": "def ensure_contiguous(f):\n    return f\n",
        "src/liger_kernel/ops/rms_norm.py": ("from liger_kernel.ops.utils import ensure_contiguous\n"
                                             "from liger_kernel.ops.triton_kernels import rms_kernel\n"
                                             "from .cuda_ext import fused\n\n"
                                             "@ensure_contiguous\ndef f(x):\n    return rms_kernel(x)\n"),
        "app/pyproject.toml": "[project]\nname = \"app\"\n",  # another project: a user of the library
        "app/train.py": "from liger_kernel.transformers import apply_liger_kernel_to_llama\n",
    }
    result = scan_source(files)
    mine = [f for f in result.findings if f.path == "src/liger_kernel/ops/rms_norm.py"]
    # helpers and calls into itself are no ties; its own GPU modules are an inventory line
    assert [(f.line, f.context) for f in mine] == [(2, "own-package"), (3, "own-package")]
    assert all(set(f.targets.values()) == {"works"} and f.severity == "info" for f in mine)
    assert "raises" not in mine[0].message
    # a user of the library (outside its packages) is a real tie
    user = [f for f in result.findings if f.path == "app/train.py"]
    assert user and user[0].context is None and user[0].targets["cpu"] == "raises"


def test_generic_module_names_are_gpu_modules_beside_cuda_code_or_inside_a_gpu_package(scan_source):
    files = {
        "setup.py": ("from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n"
                     "setup(name='q', ext_modules=[CUDAExtension('q._C', ['csrc/k.cu'])])\n"),
        "q/__init__.py": "",
        "q/plain.py": "from q.kernel import matmul\n",  # nothing else GPU-ish here: no inventory line
        "q/fast.py": "import torch\nfrom q.kernel import matmul\ny = torch.cuda.current_device()\n",
        "q/tri.py": "from .triton_utils.kernels import silu\n",  # kernels inside a Triton package
    }
    result = scan_source(files)
    own = {(f.path, f.line) for f in result.findings if f.rule == "LK409" and f.context == "own-package"}
    assert own == {("q/fast.py", 2), ("q/tri.py", 1)}


def test_own_compiled_extension_is_reported(scan_source):
    files = {
        "setup.py": ("from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n"
                     "setup(name='det', ext_modules=[CUDAExtension(\n    'det._C', ['csrc/nms.cu'])])\n"),
        "det/__init__.py": "",
        "det/ops/__init__.py": "",
        "det/ops/nms.py": "from .. import _C\n\ndef nms(b):\n    return _C.nms(b)\n",
        "app/run.py": "import det._C\n",
    }
    result = scan_source(files)
    inner = [f for f in result.findings if f.path == "det/ops/nms.py" and f.rule == "LK409"]
    assert inner and inner[0].line == 1 and inner[0].context == "own-package"  # its kernel counts where written
    assert [f.rule for f in result.findings if f.path == "app/run.py"] == ["LK409"]


# -- redundant and display-only ----------------------------------------------------------------------

def test_redundant_seeding_and_the_different_seed_trap(scan_source):
    src = ("import torch\n"
           "def seed_all(seed):\n    torch.manual_seed(seed)\n    torch.cuda.manual_seed_all(seed)\n"
           "    torch.cuda.manual_seed(seed + 1)\n")
    found = by_line(scan_source({"a.py": src}), "LK207")
    assert found[4].context == "redundant" and found[4].severity == "info"
    assert set(found[4].targets.values()) == {"works"}
    assert "unseeded" not in found[4].message and "torch.manual_seed(seed)" in found[4].message
    assert found[5].context is None and "unseeded" in found[5].message


def test_a_seed_changed_or_drawn_from_in_between_is_not_redundant(scan_source):
    """The context and the deletion fix (F22) share one judgement: "Delete it" only where it is done."""
    src = ("import torch\n"
           "def a(seed, rank):\n    torch.manual_seed(seed)\n    seed = seed + rank\n    torch.cuda.manual_seed_all(seed)\n"
           "def b(it):\n    torch.manual_seed(next(it))\n    torch.cuda.manual_seed_all(next(it))\n"
           "def c(s):\n    torch.manual_seed(s)\n    x = torch.randn(3)\n    torch.cuda.manual_seed_all(s)\n"
           "def d(s):\n    torch.cuda.manual_seed_all(s)\n    import random; random.seed(s)\n    torch.manual_seed(s)\n")
    found = by_line(scan_source({"a.py": src}), "LK207")
    assert [found[line].context for line in (5, 8, 12)] == [None, None, None]
    assert all(found[line].fix.reason.startswith("not removed") for line in (5, 8, 12))
    assert found[14].context == "redundant" and found[14].fix.applicability == "safe"


def test_display_in_messages_keeps_a_call_that_still_raises(scan_source):
    src = "import torch\nprint(f'GPU: {torch.cuda.get_device_name()}')\n"
    finding = by_line(scan_source({"a.py": src}), "LK214")[2]
    assert finding.context == "display" and finding.targets["cpu"] == "raises"
    assert "still raises" in finding.message


# -- tests, dependencies, scores and verdicts ---------------------------------------------------------------

def test_test_files_and_dependency_extras(scan_source):
    result = scan_source({"conftest.py": "import torch\nDEVICE = torch.device('cuda')\n",
                          "benchmarks/bench.py": "import torch\ntorch.cuda.synchronize()\n",
                          "pyproject.toml": ('[project]\nname = "x"\ndependencies = ["torch"]\n'
                                             '[project.optional-dependencies]\nfast = ["flash-attn"]\n')})
    contexts = {(f.path, f.rule): f.context for f in result.findings}
    assert contexts[("conftest.py", "LK101")] == "test"
    assert contexts[("benchmarks/bench.py", "LK204")] == "test"
    extra = [f for f in result.findings if f.path == "pyproject.toml"][0]
    assert extra.context == "optional" and "base install works without it" in extra.message


def test_no_message_claims_raises_where_nothing_raises(scan_source):
    src = ("import torch\n"
           "if torch.cuda.is_available():\n"
           "    torch.cuda.synchronize()\n    x = torch.zeros(3, device='cuda')\n    m = model.cuda()\n"
           "    torch.cuda.set_device(0)\n    s = torch.cuda.Stream()\n")
    result = scan_source({"a.py": src})
    guarded = [f for f in result.findings if f.line >= 3]
    assert len(guarded) >= 5
    for f in guarded:
        if "raises" not in f.targets.values():
            assert "raises" not in f.message, f.message


def test_verdicts_follow_contexts(scan_source):
    from auditor.portability.verdict import verdicts

    guarded = scan_source({"a.py": "import torch\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n"})
    v = verdicts(guarded.findings)
    # the CPU needs no GPU work and is where the check sends it: it runs; TPU loses its device
    assert v["cpu"].verdict == "runs" and v["tpu"].verdict == "runs-degraded"
    main = scan_source({"b.py": "import torch\ntorch.cuda.synchronize()\n"})
    v = verdicts(main.findings)
    assert v["cpu"].verdict == "fails" and v["rocm"].verdict == "runs"
    assert v["cpu"].reasons[0].path == "b.py" and v["cpu"].reasons[0].line == 2


def test_tests_never_fail_a_verdict(scan_source):
    from auditor.portability.verdict import verdicts

    result = scan_source({"tests/test_x.py": "import torch\ntorch.cuda.synchronize()\n"})
    assert {v.verdict for v in verdicts(result.findings).values()} == {"runs"}


# -- project facts and the cache -------------------------------------------------------------------

def _scan(root, cache_dir, *paths):
    import os

    from auditor.config.settings import Settings
    from auditor.pipeline.scan import scan

    targets = [str(p) for p in paths] or [str(root)]
    old = os.getcwd()
    os.chdir(root)
    try:
        return scan(targets, Settings(cache_dir=str(cache_dir), jobs=1))
    finally:
        os.chdir(old)


def test_a_new_sibling_module_changes_the_context_of_a_cached_backend_module(tmp_path):
    import os
    import time

    root = tmp_path / "repo"
    (root / "pkg" / "platforms").mkdir(parents=True)
    (root / "pkg" / "platforms" / "cuda.py").write_text(PLATFORM)
    (root / "pkg" / "platforms" / "interface.py").write_text("x = 1\n")
    old = time.time() - 60  # settled: the cache may keep the file list and the facts
    for path in [*root.rglob("*"), root]:
        os.utime(path, (old, old))
    cache = tmp_path / "cache"
    assert by_line(_scan(root, cache), "LK204")[4].context is None
    assert by_line(_scan(root, cache), "LK204")[4].context is None  # warm: from the cache
    (root / "pkg" / "platforms" / "xpu.py").write_text("x = 1\n")
    found = by_line(_scan(root, cache), "LK204")[4]
    assert found.context == "backend-module" and found.targets["xpu"] == "works"
    # a pre-commit style run on the one file agrees with the full run
    single = _scan(root, cache, root / "pkg" / "platforms" / "cuda.py")
    assert by_line(single, "LK204")[4].context == "backend-module"


def test_a_new_cuda_extension_in_setup_py_is_seen_by_a_warm_run(tmp_path):
    import os
    import time

    root = tmp_path / "repo"
    (root / "det" / "ops").mkdir(parents=True)
    (root / "det" / "__init__.py").write_text("")
    (root / "det" / "ops" / "__init__.py").write_text("")
    (root / "det" / "ops" / "nms.py").write_text("from .. import _C\n")
    (root / "setup.py").write_text("from setuptools import setup\nsetup(name='det')\n")
    old = time.time() - 60
    for path in [*root.rglob("*"), root]:
        os.utime(path, (old, old))
    cache = tmp_path / "cache"
    assert [f for f in _scan(root, cache).findings if f.path == "det/ops/nms.py"] == []
    (root / "setup.py").write_text("from setuptools import setup\nfrom torch.utils.cpp_extension import "
                                   "CUDAExtension\nsetup(name='det', ext_modules=[CUDAExtension('det._C', "
                                   "['k.cu'])])\n")
    found = [f for f in _scan(root, cache).findings if f.path == "det/ops/nms.py"]
    assert [f.rule for f in found] == ["LK409"]


def test_the_cuda_rng_setters_are_lazy_and_degrade_the_getters_raise(scan_source):
    source = ("import torch as th\n\n\ndef restore(state):\n    th.cuda.set_rng_state_all(state)\n"
              "    th.cuda.random.set_rng_state(state[0])\n    return th.cuda.get_rng_state()\n")
    result = scan_source({"pkg/__init__.py": "", "pkg/rng.py": source})
    found = by_line(result, "LK208")
    for line in (5, 6):
        assert found[line].targets["cpu"] == found[line].targets["tpu"] == "degrades"
        assert found[line].targets["rocm"] == "works"
    assert found[7].targets["cpu"] == "raises" and found[7].targets["rocm"] == "works"


def test_a_typing_alias_names_types_and_runs_nothing(scan_source):
    source = ("from typing import Union\nimport typing as t\nimport torch as th\n\n"
              "_CTX = Union[th.cuda.StreamContext, None]\n_ANY = t.Optional[th.cuda.Stream]\n"
              "STREAMS = CACHE[th.cuda.current_stream()]\n")
    result = scan_source({"pkg/__init__.py": "", "pkg/types.py": source})
    lines = {f.line for f in result.findings if f.path.endswith("types.py")}
    assert 5 not in lines and 6 not in lines
    assert 7 in lines  # trap: a subscript of anything else evaluates its index


# -- NVTX options and type aliases -------------------------------------------------------------------------
def test_an_nvtx_option_guards_its_branch(scan_source):
    source = ("import torch\n\n\nclass Profiler:\n    def start(self):\n        if self._emit_nvtx:\n"
              "            self.parent = torch.cuda.profiler.profile()\n        if self._emit_stats:\n"
              "            self.other = torch.cuda.profiler.profile()\n")
    result = scan_source({"pkg/__init__.py": "", "pkg/prof.py": source})
    found = by_line(result, "LK213")
    nvtx, stats = found[7], found[9]
    assert "guarded" in nvtx.context and nvtx.targets["cpu"] == "works" and nvtx.targets["rocm"] == "works"
    assert stats.context is None and stats.targets["cpu"] == "raises"  # trap: an option not about NVIDIA


# -- per-device methods: `def cuda(self)` beside `def cpu(self)` ----------------------------------------
MIXIN = ("import torch as th\n\n\nclass DeviceMixin(th.nn.Module):\n"
         "    def cuda(self, device=None):\n"
         "        return super().to(th.device('cuda', th.cuda.current_device()))\n\n"
         "    def cpu(self):\n        return super().to('cpu')\n")


def test_the_cuda_method_beside_a_cpu_method_is_a_backend_of_its_class(scan_source):
    result = scan_source({"pkg/__init__.py": "", "pkg/mixin.py": MIXIN})
    selection = by_line(result, "LK203")[6]
    assert selection.context == "backend-module"
    assert selection.targets["cpu"] == "works" and selection.targets["tpu"] == "degrades"
    assert "`DeviceMixin.cuda()`" in selection.message and "cpu has sibling" in selection.message


def test_a_cuda_method_alone_runs_only_when_cuda_is_asked_for_but_a_test_beside_a_cpu_test_is_the_main_path(scan_source):
    # `def cuda()` alone: the class's inherited `cpu()` / `to()` serve the other devices; the
    # `.cuda()` call that reaches it is reported where it is made
    alone = MIXIN.replace("    def cpu(self):\n        return super().to('cpu')\n", "    def half(self):\n        return self\n")
    result = scan_source({"pkg/__init__.py": "", "pkg/mixin.py": alone})
    selection = by_line(result, "LK203")[6]
    assert selection.context == "backend-module" and selection.targets["cpu"] == "works"
    tests = ("import torch\n\n\ndef test_cuda():\n    torch.cuda.set_device(0)\n\n\n"
             "def test_cpu():\n    torch.ones(1)\n")
    result = scan_source({"tests/test_devices.py": tests})
    assert by_line(result, "LK203")[5].context == "test"  # pytest runs both: neither is chosen


def test_cuda_graph_method_beside_cpu_offload_is_no_device_pair(scan_source):
    # trap: the other name parts differ, so these are two features, not one per-device choice
    source = ("import torch\n\n\nclass Runner:\n    def cuda_graph(self):\n        torch.cuda.set_device(0)\n\n"
              "    def cpu_offload(self):\n        return self\n")
    result = scan_source({"pkg/__init__.py": "", "pkg/runner.py": source})
    assert by_line(result, "LK203")[6].context is None


# -- isinstance of a device's backend class, and early returns for named devices ------------------------
def test_isinstance_of_a_class_named_for_a_device_is_a_device_test(scan_source):
    source = ("import torch\n\n\ndef sync(accelerator):\n    if isinstance(accelerator, CUDAAccelerator):\n"
              "        torch.cuda.synchronize()\n    if isinstance(accelerator, (CUDAAccelerator, Plain)):\n"
              "        torch.cuda.synchronize()\n")
    found = by_line(scan_source({"pkg/__init__.py": "", "pkg/acc.py": source}), "LK204")
    assert found[6].context == "guarded" and found[6].guard == "device" and found[6].targets["tpu"] == "works"
    assert found[8].context is None and found[8].targets["tpu"] == "raises"  # trap: one class is no device's


def test_an_early_return_for_a_named_device_serves_it_before_the_cuda_code(scan_source):
    source = ("import torch\n\n\nclass Connector:\n    def precision(self):\n"
              "        if isinstance(self.strategy, (SingleDeviceXLAStrategy, XLAFSDPStrategy)):\n"
              "            return XLAPrecision()\n"
              "        if isinstance(self.strategy, MPSDDPStrategy):\n            raise ValueError('no')\n"
              "        return Mixed(device=torch.device('cuda'))\n\n"
              "    def other(self):\n        if isinstance(self.strategy, XLAStrategy):\n"
              "            raise ValueError('not on XLA')\n        return Mixed(device=torch.device('cuda'))\n")
    found = by_line(scan_source({"pkg/__init__.py": "", "pkg/conn.py": source}), "LK101")
    assert found[10].targets["tpu"] == "works" and found[10].targets["cpu"] == "raises"
    assert found[10].targets["mps"] == "raises"  # the MPS branch raises: it serves nothing
    assert "tpu" in found[10].message and "own branch" in found[10].message
    assert found[15].context is None and found[15].targets["tpu"] == "raises"  # trap: a raise serves nothing
