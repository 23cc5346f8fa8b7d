"""Guards that do not look like `torch.cuda` checks (issue 15 item 3), each with the kind it records
(JSON `guard`) and a trap that does not protect: HIP/ROCm build branches, option flags, availability
objects, environment checks, device ternaries, flags followed through their assignments, and a
package module's `if __name__ == "__main__":` demo block."""

from __future__ import annotations

import pytest

from auditor.portability.verdict import verdicts

OTHERS = ("tpu", "trainium", "mps", "xpu")


def by_line(result, rule: str) -> dict:
    assert not result.errors, result.errors
    return {f.line: f for f in result.findings if f.rule == rule}


def assert_main_path(findings) -> None:
    """A trap held: each finding stays on the main path and fails the verdict off NVIDIA."""
    findings = list(findings)
    assert findings and all(f.context is None and f.targets["cpu"] == "raises" for f in findings), findings
    assert verdicts(findings)["cpu"].verdict == "fails"


# -- HIP / ROCm build branches ---------------------------------------------------------------------

def test_the_non_hip_branch_of_a_build_does_not_fail_rocm(scan_source):
    src = ("import torch\nfrom torch.utils.cpp_extension import CUDAExtension\n"
           "IS_HIP = torch.version.hip is not None\n"
           "if IS_HIP:\n    flags = ['-O3']\n"
           "else:\n    ext = CUDAExtension('k', ['k.cu'])\n")
    ext = by_line(scan_source({"setup.py": src}), "LK402")[7]
    assert ext.context == "guarded" and "build" in ext.guard.split("+")
    assert ext.targets["rocm"] == "works" and ext.targets["cpu"] == "raises"


def test_a_build_target_compared_with_rocm(scan_source):
    src = ("import os\nfrom torch.utils.cpp_extension import CUDAExtension\n"
           "BUILD_TARGET = os.environ.get('BUILD_TARGET', 'auto')\n"
           "if BUILD_TARGET == 'rocm':\n    ext = None\n"
           "else:\n    ext = CUDAExtension('k', ['k.cu'])\n")
    ext = by_line(scan_source({"setup.py": src}), "LK402")[7]
    assert ext.context == "guarded" and ext.targets["rocm"] == "works" and ext.targets["xpu"] == "raises"


def test_trap_a_hip_branch_that_still_calls_nvcc_fails_rocm(scan_source):
    src = ("import subprocess, torch\nIS_HIP = torch.version.hip is not None\n"
           "if IS_HIP:\n    subprocess.run(['nvcc', '--version'])\n")
    nvcc = by_line(scan_source({"setup.py": src}), "LK603")[4]
    assert nvcc.targets["rocm"] == "raises" and "still raises on rocm" in nvcc.message


def test_a_build_scripts_private_platform_helpers_are_helpers(scan_source):
    # vLLM's setup.py: `def _is_cuda(): ...`, `elif _is_cuda(): torch.version.cuda.split(".")`
    src = ("import torch\n\n\ndef _is_cuda():\n    return torch.version.cuda is not None\n\n\n"
           "if _is_cuda():\n    major, minor = torch.version.cuda.split('.')\n")
    version = by_line(scan_source({"setup.py": src}), "LK414")[9]
    assert version.context == "guarded" and version.guard == "availability"
    assert "raises" not in (version.targets["rocm"], version.targets["cpu"])  # the CUDA branch is skipped there
    # trap: a private helper named for nothing guards nothing
    trap = src.replace("_is_cuda", "_configure")
    assert by_line(scan_source({"setup.py": trap}), "LK414")[9].context is None


# -- option flags and config booleans --------------------------------------------------------------

def test_option_flags_record_the_option_kind(scan_source):
    src = ("import torch\ndef f(args, cfg, m):\n"
           "    if args.cuda:\n        m = m.cuda()\n"
           "    if cfg.use_cuda_graphs:\n        g = torch.cuda.CUDAGraph()\n"
           "    if not args.no_cuda:\n        m = m.cuda()\n"
           "    return m\n")
    result = scan_source({"a.py": src})
    method, graph = by_line(result, "LK102"), by_line(result, "LK212")[6]
    for finding in (method[4], graph, method[8]):
        assert finding.context == "guarded" and finding.guard == "option", finding
        assert all(finding.targets[t] == "works" for t in (*OTHERS, "cpu"))


def test_trap_an_option_whose_body_is_pass_and_a_flag_that_is_always_true(scan_source):
    src = ("import torch\nUSE_CUDA = True\n"
           "def f(args, m):\n"
           "    if args.cuda:\n        pass\n"
           "    m = m.cuda()\n"
           "    if USE_CUDA:\n        m = m.cuda()\n"
           "    return m\n")
    found = by_line(scan_source({"a.py": src}), "LK102")
    for line in (6, 8):
        assert found[line].context is None and found[line].guard is None
        assert found[line].targets["cpu"] == "raises"


# -- availability objects and the environment ------------------------------------------------------

def test_availability_objects_and_package_flags(scan_source):
    src = ("import torch\n"
           "try:\n    import triton\n    HAS_TRITON = True\nexcept ImportError:\n    HAS_TRITON = False\n"
           "def f():\n"
           "    if HAS_TRITON:\n        torch.cuda.synchronize()\n")
    sync = by_line(scan_source({"a.py": src}), "LK204")[9]
    assert "package" in sync.guard.split("+") and sync.targets["cpu"] == "works"
    assert sync.targets["mps"] == "works"  # triton is not installed on MPS: the branch is skipped


def test_environment_checks(scan_source):
    src = ("import os, torch\n"
           "if 'CUDA_HOME' in os.environ:\n    torch.cuda.synchronize()\n"
           "if os.environ.get('FORCE_CUDA', '0') == '0':\n    pass\nelse:\n    torch.cuda.synchronize()\n"
           "if os.getenv('MY_SETTING'):\n    torch.cuda.synchronize()\n")
    found = by_line(scan_source({"a.py": src}), "LK204")
    for line in (3, 7):
        assert found[line].context == "guarded" and found[line].guard == "env"
        assert found[line].targets["cpu"] == "works" and found[line].targets["tpu"] == "works"
    assert found[3].targets["rocm"] == "works"  # CUDA_HOME is the CUDA toolkit's: ROCm takes the other path
    # trap: a variable whose name says nothing about devices guards nothing
    assert found[9].context is None and found[9].targets["cpu"] == "raises"


def test_a_flag_assigned_from_an_availability_check_is_followed(scan_source):
    src = ("import torch\nclass A:\n    def __init__(self):\n"
           "        self.has_gpu = torch.cuda.is_available()\n"
           "    def f(self):\n        if self.has_gpu:\n            torch.cuda.synchronize()\n")
    sync = by_line(scan_source({"a.py": src}), "LK204")[7]
    assert sync.context == "guarded" and sync.guard == "availability" and sync.targets["cpu"] == "works"


# -- device ternaries ------------------------------------------------------------------------------

def test_a_ternary_that_returns_cpu_and_mps_for_those_values(scan_source):
    src = ("import torch\ndef g(x, flag):\n"
           "    return x.to(flag if flag in ('cpu', 'mps') else 'cuda')\n"
           "def h(x, flag):\n"
           "    return x.to(flag if flag == 'cuda' else 'cuda')\n")
    found = by_line(scan_source({"a.py": src}), "LK101")
    assert found[3].targets["cpu"] == "works" and found[3].targets["mps"] == "works"
    assert "raising on cpu" not in found[3].message and "mps and cpu have their own branch" in found[3].message
    # trap: both branches are CUDA
    assert found[5].context is None and found[5].targets["cpu"] == "raises"


# -- demo blocks ----------------------------------------------------------------------------------

PYPROJECT = "[project]\nname = 'pkg'\n[tool.setuptools.packages.find]\ninclude = ['pkg*']\n"
MAIN = "import torch\nif __name__ == '__main__':\n    x = torch.zeros(2).cuda()\n"


def test_a_package_modules_main_block_is_demo_code_that_never_fails_a_verdict(scan_source):
    result = scan_source({"pyproject.toml": PYPROJECT, "pkg/__init__.py": "", "pkg/m.py": MAIN})
    demo = by_line(result, "LK102")[3]
    assert demo.context == "demo" and demo.targets["cpu"] == "raises"  # reported as it is
    assert "demo code" in demo.message
    assert verdicts([demo])["cpu"].verdict != "fails"


def test_trap_a_script_or_a_packages_dunder_main_is_the_program(scan_source):
    result = scan_source({"pyproject.toml": PYPROJECT, "pkg/__init__.py": "", "pkg/__main__.py": MAIN,
                          "run.py": MAIN})
    found = [f for f in result.findings if f.rule == "LK102"]
    assert {f.path for f in found} == {"pkg/__main__.py", "run.py"}
    assert all(f.context is None for f in found)
    assert verdicts(found)["cpu"].verdict == "fails"


# -- argparse defaults ----------------------------------------------------------------------------

def test_an_argparse_cuda_default_works_where_the_user_passes_the_device(scan_source):
    src = ("import argparse, torch\np = argparse.ArgumentParser()\n"
           "p.add_argument('-d', '--device', default='cuda', help='device')\n"
           "p.add_argument('--name', default='x')\n"
           "args = p.parse_args()\n"
           "x = torch.zeros(2, device='cuda')\n")
    found = by_line(scan_source({"train.py": src}), "LK101")
    default = found[3]
    # the user passes `--device mps`: only the default is NVIDIA's, so nothing is lost (info)
    assert default.context == "optional" and default.guard == "option" and default.severity == "info"
    assert default.targets["cpu"] == "works" and default.targets["mps"] == "works"
    assert "`--device` option" in default.message and "command line" in default.message
    assert verdicts([default])["mps"].verdict == "runs"
    # trap: a device the program hard-codes is no option the user can change
    assert found[6].context is None and found[6].targets["cpu"] == "raises"


def test_trap_a_default_of_another_call_is_no_option(scan_source):
    src = "import torch\ndef make(n, device='cuda'):\n    return n\nx = dict(default='cuda')\ny = torch.zeros(2, device='cuda')\n"
    found = by_line(scan_source({"a.py": src}), "LK101")
    assert all(f.context is None for f in found.values())


# -- guards written in a decorator or a module-level mark do not guard themselves ------------------

def test_a_skip_decorator_and_a_pytestmark_are_not_guarded_by_themselves(scan_source):
    marked = ("import pytest, torch\n"
              "pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason='CUDA')\n"
              "def test_a():\n    torch.cuda.synchronize()\n")
    decorated = ("import torch, unittest\n"
                 "class T(unittest.TestCase):\n"
                 "    @unittest.skipUnless(torch.cuda.is_available(), 'needs CUDA')\n"
                 "    def test_b(self):\n        torch.cuda.synchronize()\n")
    result = scan_source({"tests/test_m.py": marked, "tests/test_d.py": decorated})
    checks = {(f.path, f.line): f for f in result.findings if f.rule == "LK201"}
    for key in (("tests/test_m.py", 2), ("tests/test_d.py", 3)):
        assert checks[key].context == "test" and checks[key].guard is None, checks[key]
        assert "holds" not in checks[key].message
    syncs = {(f.path, f.line): f for f in result.findings if f.rule == "LK204"}
    assert syncs[("tests/test_m.py", 4)].context == syncs[("tests/test_d.py", 5)].context == "test+guarded"


# -- values followed in one module ------------------------------------------------------------------

def test_env_names_followed_through_local_assignments_and_tuple_unpacking(scan_source):
    src = ("import os\n"
           "key, value = 'NCCL_ASYNC_ERROR_HANDLING', '1'\n"
           "os.environ[key] = value\n"
           "name = 'NCCL_DEBUG'\n"
           "os.environ.setdefault(name, 'INFO')\n"
           "print(name)\n"
           "def setter(var):\n    os.environ[var] = '1'\n"
           "other = 'NCCL_DEBUG'\nother = 'HOME'\n"
           "os.environ[other] = '1'\n")
    found = by_line(scan_source({"a.py": src}), "LK304")
    assert sorted(found) == [3, 5]  # not the print, a parameter, nor a name assigned twice
    assert found[3].message.startswith("`NCCL_ASYNC_ERROR_HANDLING`") and found[5].message.startswith("`NCCL_DEBUG`")


def test_a_build_constant_imported_inside_a_function_is_a_build_guard(scan_source):
    src = ("import os\nclass B:\n    def extra_ldflags(self):\n"
           "        import torch.utils.cpp_extension\n"
           "        CUDA_HOME = torch.utils.cpp_extension.CUDA_HOME\n"
           "        if CUDA_HOME is None:\n            ldflags = ['-laio']  # the ROCm case\n"
           "        else:\n            ldflags = [os.path.join(CUDA_HOME, 'lib64')]\n"
           "        return ldflags\n")
    lib = by_line(scan_source({"op_builder/a.py": src}), "LK402")[9]
    assert lib.context == "guarded" and "build" in lib.guard.split("+") and lib.targets["cpu"] == "works"


# -- messages true for the code (item 4) -----------------------------------------------------------

def test_a_class_that_raises_without_its_optional_import_has_no_fallback(scan_source):
    src = ("try:\n    import cupy\nexcept ImportError:\n    cupy = None\n\n"
           "class CupyComm:\n    def __init__(self):\n"
           "        if cupy is None:\n            raise ImportError('CupyComm needs cupy')\n"
           "        self.stream = cupy.cuda.Stream()\n\n"
           "def g():\n    if cupy is None:\n        return None\n    return cupy.zeros(3)\n\n"
           "def h():\n    return cupy.ones(3)\n")
    found = by_line(scan_source({"a.py": src}), "LK404")
    required = found[10]
    assert required.context == "optional" and "fallback runs" not in required.message
    assert "raises (`if cupy is None: raise`, line 8)" in required.message
    # traps: an early return is a way around it, and a use with no test says nothing of a raise
    assert "raises" not in found[15].message and "raises" not in found[18].message


def test_a_cuda_named_class_of_a_flat_repository_is_not_called_another_librarys(scan_source):
    result = scan_source({"cuda_graphs.py": "import torch\nclass CudaGraphRunner:\n    pass\n",
                          "train.py": "from cuda_graphs import CudaGraphRunner\nr = CudaGraphRunner()\n"})
    found = [f for f in result.findings if f.rule == "LK298"]
    assert found and all("another library's CUDA" not in f.message for f in found)
    assert all("by its name" in f.message for f in found)


# -- `x or "cuda"` fallbacks ----------------------------------------------------------------------

def test_a_cuda_fallback_of_a_value_a_caller_gives_works_where_the_value_is_given(scan_source):
    src = ("import os, torch\n"
           "DEVICE = os.environ.get('DEV') or 'cuda'\n"
           "def f(args, x, dev):\n"
           "    y = x.to(args.device or 'cuda')\n"
           "    z = torch.zeros(2, device=dev or 'cuda:0')\n"
           "    d = get_device_type() or 'cuda'\n"
           "    return x.to(d)\n")
    found = by_line(scan_source({"a.py": src}), "LK101")
    assert sorted(found) == [2, 4, 5, 6]
    for finding in found.values():
        assert finding.context == "optional" and finding.guard == "option" and finding.severity == "info"
        assert finding.targets["cpu"] == "works" and finding.targets["mps"] == "works"
    assert "only the fallback of `get_device_type()` (line 6)" in found[6].message
    assert verdicts(list(found.values()))["mps"].verdict == "runs"


def test_trap_a_literal_before_or_gives_nothing_and_a_cuda_first_is_the_value(scan_source):
    src = ("import torch\ndef f(x, dev):\n"
           "    a = x.to('' or 'cuda')\n"
           "    b = x.to(None or 'cuda')\n"
           "    c = x.to('cuda' or dev)\n"
           "    return a, b, c\n")
    found = by_line(scan_source({"a.py": src}), "LK101")
    assert sorted(found) == [3, 4, 5]
    assert_main_path(found.values())


# -- env names passed through a small helper that sets them ----------------------------------------

def test_env_names_passed_to_a_helper_that_sets_them(scan_source):
    src = ("import os\n"
           "def set_if_unset(value, name):\n    os.environ.setdefault(name, value)\n"
           "class Launcher:\n"
           "    def put(self, value, key):\n        os.environ[key] = value\n"
           "    def go(self):\n        self.put('eth0', 'NCCL_SOCKET_IFNAME')\n"
           "set_if_unset('1', 'NCCL_DEBUG')\n"
           "set_if_unset(name='NCCL_IB_DISABLE', value='1')\n"
           "later('1', 'NCCL_P2P_DISABLE')\n"
           "def later(value, var):\n    os.environ[var] = value\n")
    found = by_line(scan_source({"a.py": src}), "LK304")
    assert sorted(found) == [8, 9, 10, 11]  # a method's `self`, a keyword, a helper defined below its call
    assert found[9].message.startswith("`NCCL_DEBUG`") and found[10].message.startswith("`NCCL_IB_DISABLE`")


def test_trap_a_function_that_sets_another_variable_is_no_helper(scan_source):
    src = ("import os\n"
           "def tag(name, value):\n    os.environ['MY_TAG'] = value\n    return name\n"
           "def read(table, key):\n    return table[key]\n"
           "tag('run', 'NCCL_DEBUG')\n"
           "read({}, 'NCCL_DEBUG')\n"
           "elsewhere('1', 'NCCL_DEBUG')\n")
    found = by_line(scan_source({"a.py": src}), "LK304")
    assert not found  # its parameter never names the variable; a mapping that is not os.environ; no helper here


# -- parameter defaults every call overrides --------------------------------------------------------

DEFAULTS = ("import torch\n\n"
            "def load(path, device='cuda'):\n    return torch.load(path, map_location=device)\n\n"
            "def build(cfg, *, device='cuda:0'):\n    return torch.zeros(2, device=device)\n\n"
            "class Runner:\n    def run(self, x, device='cuda'):\n        return x.to(device)\n\n"
            "    def go(self, x, dev):\n        return self.run(x, dev)\n\n"
            "def main(args):\n"
            "    m = load(args.ckpt, args.device)\n"  # by position
            "    b = build(args, device=args.device)\n"  # by keyword
            "    c = load('x', device='cpu')\n"
            "    return Runner().go(m, args.device), b, c\n")


def test_a_parameter_default_every_call_in_the_module_overrides_works(scan_source):
    found = by_line(scan_source({"a.py": DEFAULTS}), "LK101")
    for line in (3, 6, 10):  # a function by position and keyword (torch.load is no call of it), a keyword-only one, a method
        assert found[line].context == "optional" and found[line].guard == "option", found[line]
        assert found[line].targets["cpu"] == "works" and found[line].severity == "info"
    assert "the default of `load(device=...)` (line 3), which every call in this module passes" in found[3].message
    assert verdicts([found[3], found[6], found[10]])["mps"].verdict == "runs"


def test_trap_a_call_that_leaves_the_default_or_a_name_used_otherwise_keeps_it_on_the_main_path(scan_source):
    src = ("import torch\n\n"
           "def load(path, device='cuda'):\n    return torch.load(path, map_location=device)\n\n"
           "def make(device='cuda'):\n    return torch.zeros(2, device=device)\n\n"
           "def kw(device='cuda'):\n    return torch.zeros(2, device=device)\n\n"
           "def unused(device='cuda'):\n    return torch.zeros(2, device=device)\n\n"
           "def main(args, opts):\n"
           "    load(args.ckpt, device=args.device)\n"
           "    load(args.ckpt)\n"  # the default is used
           "    make(device=args.device)\n"
           "    hooks = [make]\n"  # called by someone else, with who knows what
           "    kw(**opts)\n"
           "    return hooks\n")
    found = by_line(scan_source({"a.py": src}), "LK101")
    assert_main_path(found[line] for line in (3, 6, 9, 12))


# -- settings a config exec replaces, and a multi-process launch mode --------------------------------

def test_a_setting_above_a_config_exec_is_a_default_the_user_replaces(scan_source):
    src = ("import torch\n"
           "backend = 'nccl'\n"
           "device = 'cuda'\n"
           "dtype = 'bfloat16' if torch.cuda.is_available() else 'float16'\n"
           "exec(open('configurator.py').read())\n"
           "late = 'cuda'\n"
           "x = torch.zeros(2, device=device).to(late)\n")
    result = scan_source({"train.py": src})
    device, late = by_line(result, "LK101")[3], by_line(result, "LK101")[6]
    assert device.context == "optional" and device.guard == "option" and device.targets["cpu"] == "works"
    assert "the default of the `device` setting, which `exec(...)` (line 5)" in device.message
    assert by_line(result, "LK301")[2].context == "optional"
    # a check that computes a value is no written-out setting: it is the ternary's guard
    assert by_line(result, "LK201")[4].context == "guarded"
    assert_main_path([late])  # trap: assigned after the exec, nothing replaces it


def test_trap_an_exec_with_its_own_globals_or_none_at_all_replaces_nothing(scan_source):
    src = ("import torch\ndevice = 'cuda'\nexec(code, {})\nx = torch.zeros(2, device=device)\n")
    assert_main_path(by_line(scan_source({"train.py": src}), "LK101").values())


def test_code_under_a_launchers_variable_runs_only_in_that_launch_mode(scan_source):
    src = ("import os, torch\n"
           "ddp = int(os.environ.get('RANK', -1)) != -1\n"
           "if ddp:\n    torch.cuda.set_device(0)\n"
           "if os.environ.get('LOCAL_RANK') is not None:\n    torch.cuda.set_device(1)\n"
           "if int(os.environ.get('RANK', 0)) == 0:\n    torch.cuda.set_device(2)\n")
    found = by_line(scan_source({"train.py": src}), "LK203")
    for line in (4, 6):
        assert found[line].context == "optional" and found[line].guard == "option", found[line]
        assert found[line].targets["cpu"] == "degrades" and "multi-process launch" in found[line].message
    assert "`ddp` (line 3)" in found[4].message
    assert_main_path([found[8]])  # trap: rank zero, or a plain run (the default 0): the main path



def test_a_module_global_read_from_a_launchers_variable_is_that_launch_mode(scan_source):
    src = ("import os, torch\n"
           "LOCAL_RANK = int(os.getenv('LOCAL_RANK', '-1'))\n"
           "if LOCAL_RANK != -1:\n    torch.cuda.set_device(LOCAL_RANK)\n")
    found = by_line(scan_source({"train.py": src}), "LK203")[4]
    assert found.context == "optional" and found.guard == "option" and found.targets["cpu"] == "degrades"
    assert "`LOCAL_RANK != -1` (line 3)" in found.message


@pytest.mark.parametrize("files", [
    # trap: assigned twice, the test reads the last value, not the launcher's
    {"train.py": "import os, torch\nLOCAL_RANK = int(os.getenv('LOCAL_RANK', '-1'))\nLOCAL_RANK = 3\n"
                 "if LOCAL_RANK != -1:\n    torch.cuda.set_device(LOCAL_RANK)\n"},
    # trap: an imported name's value is another file's; nothing here says what it holds
    {"train.py": "import torch\nfrom utils import LOCAL_RANK\nif LOCAL_RANK != -1:\n    torch.cuda.set_device(0)\n"},
    # trap: the default is not the value tested against, so a plain run takes the branch
    {"train.py": "import os, torch\nLOCAL_RANK = int(os.getenv('LOCAL_RANK', '0'))\n"
                 "if LOCAL_RANK != -1:\n    torch.cuda.set_device(0)\n"},
])
def test_trap_a_global_not_followed_to_a_launchers_variable(files, scan_source):
    assert_main_path(by_line(scan_source(files), "LK203").values())


# -- an availability check that decides a branch is the guard itself --------------------------------

def test_an_availability_check_deciding_a_branch_is_the_guard_and_keeps_its_effects(scan_source):
    src = ("import torch\n"
           "if torch.cuda.is_available():\n    torch.manual_seed(0)\n"
           "has_gpu = torch.cuda.is_available()\n"
           "n = 8 if not torch.cuda.is_available() else 2\n"
           "while torch.cuda.is_available() and n:\n    n -= 1\n"
           "configure(gpu=torch.cuda.is_available())\n"
           "flags = [torch.cuda.is_available(), n]\n")
    found = by_line(scan_source({"train.py": src}), "LK201")
    for line in (2, 4, 5, 6):
        assert found[line].context == "guarded" and found[line].guard == "availability", line
        assert found[line].targets["tpu"] == "degrades" and found[line].severity == "major", line
    assert found[8].context is None  # trap: an argument, not a test
    assert found[9].context is None  # trap: one item of a value, not the whole value


# -- the branch of a PyTorch version test that only an older release takes --------------------------

def test_the_old_pytorch_branch_of_a_version_test_is_optional(scan_source):
    src = ("import torch\nfrom packaging import version\nfrom accelerate.utils import is_torch_version\n"
           "s = torch.Stream() if is_torch_version('>=', '2.7') else torch.cuda.Stream()\n"
           "if not is_torch_greater_or_equal('2.6'):\n    torch.cuda.empty_cache()\n"
           "if version.parse(torch.__version__) < version.parse('2.0'):\n    torch.cuda.manual_seed(0)\n"
           "if torch.__version__ >= (2, 4):\n    pass\nelse:\n    torch.cuda.synchronize()\n"
           "if TORCH_VERSION_AT_LEAST_2_5:\n    pass\nelse:\n    torch.cuda.synchronize()\n")
    result = scan_source({"train.py": src})
    found = [f for f in result.findings if f.rule.startswith("LK2")]
    assert [f.line for f in found] == [4, 6, 8, 12, 16]
    for f in found:
        assert f.context == "optional" and f.guard == "fallback" and f.targets["cpu"] != "raises", f
        assert "only an older PyTorch takes" in f.message
    assert "`is_torch_version('>=', '2.7')` (line 4)" in found[0].message


@pytest.mark.parametrize("test", [
    "is_torch_version('>=', '3.5')",  # trap: newer than every target's PyTorch: the else may still run
    "is_torch_version('==', '2.1')",  # trap: equality picks no side
    "is_torch_version('>=', MIN_VERSION)",  # trap: the release is not written out
    "my_version >= '2.4'",  # trap: not PyTorch's version
])
def test_trap_a_version_test_that_does_not_leave_cuda_to_an_old_pytorch(test, scan_source):
    src = f"import torch\nif {test}:\n    pass\nelse:\n    torch.cuda.synchronize()\n"
    assert_main_path(by_line(scan_source({"train.py": src}), "LK204").values())


def test_trap_the_current_branch_of_a_version_test_stays_the_main_path(scan_source):
    src = "import torch\nif is_torch_version('>=', '2.4'):\n    torch.cuda.synchronize()\n"
    assert_main_path(by_line(scan_source({"train.py": src}), "LK204").values())


# -- a literal that a later `if` of its block replaces -----------------------------------------------

def test_a_literal_a_later_if_replaces_is_a_default(scan_source):
    src = ("import torch\nimport torch.distributed as dist\n\n"
           "def backend_for(device_type):\n    backend = 'nccl'\n"
           "    if device_type in dist.Backend.default_device_backend_map:\n"
           "        backend = dist.Backend.default_device_backend_map[device_type]\n    return backend\n\n"
           "def pick(args):\n    device = 'cuda'\n    if args.cpu:\n        device = 'cpu'\n"
           "    return torch.zeros(1, device=device)\n\n"
           "device = 'cuda'\nif not torch.cuda.is_available():\n    device = 'cpu'\n")
    result = scan_source({"train.py": src})
    backend = by_line(result, "LK301")[5]
    devices = by_line(result, "LK101")
    for f in (backend, devices[11], devices[16]):
        assert f.context == "optional" and f.guard == "option" and f.targets["cpu"] == "degrades", f
    assert "the `if device_type in dist.Backend.default_device_backend_map` below (line 6)" in backend.message
    assert "the `if args.cpu` below (line 12)" in devices[11].message


@pytest.mark.parametrize("src", [
    # trap: the replacement is CUDA too
    "import torch\ndevice = 'cuda'\nif rank:\n    device = f'cuda:{rank}'\nx = torch.zeros(1, device=device)\n",
    # trap: the `if` comes before the literal, which has the last word
    "import torch\nif cpu:\n    device = 'cpu'\ndevice = 'cuda'\nx = torch.zeros(1, device=device)\n",
    # trap: the `if` replaces another name
    "import torch\ndevice = 'cuda'\nif cpu:\n    other = 'cpu'\nx = torch.zeros(1, device=device)\n",
])
def test_trap_a_literal_no_later_if_replaces_stays_the_main_path(src, scan_source):
    found = [f for f in scan_source({"train.py": src}).findings if f.rule == "LK101" and "'cuda'" in f.snippet]
    assert_main_path(f for f in found if f.snippet.startswith("device"))


# -- a branch only a profiling or debugging option turns on ------------------------------------------

def test_a_branch_a_profiling_or_debugging_option_turns_on_is_optional(scan_source):
    src = ("import torch\n\ndef step(self, args, rank):\n"
           "    if args.profile:\n        torch.cuda.synchronize()\n"
           "    if self.is_rank_zero and rank == 0 and self.profiler_profile_memory and rank < 3:\n"
           "        torch.cuda.memory._record_memory_history(enabled=None)\n"
           "    if cfg.debugMode:\n        torch.cuda.synchronize()\n")
    result = scan_source({"train.py": src})
    found = [f for f in result.findings if f.rule in ("LK204", "LK206")]
    assert [f.line for f in found] == [5, 7, 9]
    for f in found:
        assert f.context == "optional" and f.guard == "option" and f.targets["tpu"] == "degrades", f
    assert "the `self.profiler_profile_memory` option (line 6) turns on profiling or debugging" in found[1].message


@pytest.mark.parametrize("test", [
    "not args.debug",  # trap: the normal run takes this branch
    "args.debug or rank",  # trap: an `or` runs without the option too
    "torch.backends.cudnn.benchmark",  # trap: a torch setting, not the project's option
    "args.mode == 'profile'",  # trap: a comparison, not a flag
    "self.debugger_attached_count",  # trap: no such word alone (debugger is not debug)
])
def test_trap_no_diagnostic_option_decides_the_branch(test, scan_source):
    src = f"import torch\n\ndef step(self, args, rank):\n    if {test}:\n        torch.cuda.synchronize()\n"
    assert_main_path(by_line(scan_source({"train.py": src}), "LK204").values())


# -- a function its module calls only under guards --------------------------------------------------

def test_a_function_the_module_calls_only_under_guards_is_judged_under_them(scan_source):
    src = ("import torch\n\ndef _pin(rank):\n    torch.cuda.set_device(rank)\n\n"
           "def _sync():\n    torch.cuda.synchronize()\n\n"
           "def _graphs():\n    torch.cuda.synchronize()\n\n"
           "def main(args):\n    if torch.cuda.is_available():\n        _pin(0)\n"
           "    if args.profile:\n        _sync()\n"
           "    if args.use_cuda_graphs:\n        _graphs()\n    elif torch.cuda.is_available() and args.x:\n        _graphs()\n")
    result = scan_source({"pkg/__init__.py": "", "pkg/train.py": src})
    pin = by_line(result, "LK203")[4]
    assert pin.context == "guarded" and pin.guard == "availability" and pin.targets["tpu"] == "degrades", pin
    assert pin.targets["cpu"] != "raises" and "`torch.cuda.is_available()` holds (line 13)" in pin.message
    sync, graphs = by_line(result, "LK204")[7], by_line(result, "LK204")[10]
    assert sync.context == "optional" and "`args.profile` option (line 15)" in sync.message
    assert graphs.targets["cpu"] != "raises" and graphs.context is not None, graphs  # both calls' guards: CUDA only


@pytest.mark.parametrize("src", [
    # trap: one call with no `if` around it
    "import torch\n\ndef _pin():\n    torch.cuda.set_device(0)\n\ndef main(a):\n    if a:\n        _pin()\n    _pin()\n",
    # trap: passed as a value, so who calls it and when is unknown
    "import torch\n\ndef _pin():\n    torch.cuda.set_device(0)\n\ndef main(a):\n    if torch.cuda.is_available():\n"
    "        _pin()\n    run(callback=_pin)\n",
    # trap: a public function of a package: callers elsewhere may call it anywhere
    "import torch\n\ndef pin():\n    torch.cuda.set_device(0)\n\ndef main(a):\n    if torch.cuda.is_available():\n        pin()\n",
    # trap: the call sits in the `else` of the guard, which runs where the guard does not hold
    "import torch\n\ndef _pin():\n    torch.cuda.set_device(0)\n\ndef main(a):\n    if not torch.cuda.is_available():\n"
    "        pass\n    else:\n        _pin()\n",
])
def test_trap_a_function_not_called_only_under_guards_keeps_its_ties(src, scan_source):
    found = by_line(scan_source({"pkg/__init__.py": "", "pkg/train.py": src}), "LK203")
    assert_main_path([found[4]])
