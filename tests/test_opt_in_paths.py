"""Opt-in paths of a package that the main run never takes (issue 15 items 2 and 3), each with a
trap that does not protect: a private method called only under a guard, a mode the user turns on
(`is_deepspeed_zero3_enabled()`), a distributed-launch flag, a GPU option that may be on off NVIDIA,
a function that requires a runtime, a config lookup's fallback, a base-class hook's default, and
`CUDA_HOME` read by a module that builds nothing."""

from __future__ import annotations

import pytest

from auditor.portability.verdict import verdicts
from tests.test_guard_kinds import assert_main_path, by_line

PACKAGE = {"pkg/__init__.py": ""}


def scan_package(scan_source, source: str, name: str = "pkg/layer.py"):
    return scan_source({**PACKAGE, name: source})


# -- a private method called only under guards ------------------------------------------------------

METHOD = ("import torch\n\n\nclass Layer:\n"
          "    def _gather(self, w):\n"
          "        return torch.device('cuda', torch.cuda.current_device())\n\n"
          "    def update(self, w):\n"
          "        if {test}:\n            return self._gather(w)\n"
          "        return w\n")


def test_a_private_method_called_only_in_a_mode_the_user_turns_on_is_that_mode(scan_source):
    result = scan_package(scan_source, METHOD.format(test="is_deepspeed_zero3_enabled()"))
    selection = by_line(result, "LK203")[6]
    assert selection.context == "optional" and selection.guard == "option", selection
    assert "runs only in the mode that `is_deepspeed_zero3_enabled()` (line 9) tests for" in selection.message
    assert selection.targets["cpu"] == "degrades" and selection.targets["mps"] == "degrades"


def test_a_private_method_called_only_under_an_availability_check_is_guarded(scan_source):
    result = scan_package(scan_source, METHOD.format(test="torch.cuda.is_available()"))
    selection = by_line(result, "LK203")[6]
    assert selection.context == "guarded" and selection.targets["cpu"] != "raises", selection


@pytest.mark.parametrize("source", [
    # trap: also called with no `if` around it
    METHOD.format(test="is_deepspeed_zero3_enabled()") + "\n    def run(self, w):\n        return self._gather(w)\n",
    # trap: passed as a value (a callback), so when it runs is unknown
    METHOD.format(test="is_deepspeed_zero3_enabled()") + "\n    def hook(self):\n        register(self._gather)\n",
    # trap: a public method: callers elsewhere may call it anywhere
    METHOD.format(test="is_deepspeed_zero3_enabled()").replace("_gather", "gather"),
    # trap: the mode's negation is the main path
    METHOD.format(test="not is_deepspeed_zero3_enabled()"),
    # trap: PyTorch's own state is no mode a user turns on
    METHOD.format(test="torch.is_grad_enabled()"),
])
def test_trap_a_method_on_the_main_path_keeps_its_ties(source, scan_source):
    assert_main_path([by_line(scan_package(scan_source, source), "LK203")[6]])


# -- a distributed launch the user picks -------------------------------------------------------------

def test_a_distributed_flag_is_the_launch_mode_the_user_picked(scan_source):
    source = ("import torch.distributed as dist\n\n\ndef setup(args):\n"
              "    if args.distributed:\n        dist.init_process_group('nccl')\n")
    backend = by_line(scan_source({"train.py": source}), "LK301")[6]
    assert backend.context == "optional" and "multi-process launch that `args.distributed`" in backend.message
    assert backend.targets["cpu"] == "degrades"


@pytest.mark.parametrize("test", ["not args.distributed", "args.no_distributed", "args.world"])
def test_trap_a_flag_that_is_no_distributed_launch_keeps_its_ties(test, scan_source):
    source = ("import torch.distributed as dist\n\n\ndef setup(args):\n"
              f"    if {test}:\n        dist.init_process_group('nccl')\n")
    assert_main_path([by_line(scan_source({"train.py": source}), "LK301")[6]])


# -- a GPU option a user may turn on off NVIDIA --------------------------------------------------------

def test_a_gpu_option_degrades_where_it_may_be_on_instead_of_failing(scan_source):
    source = ("def merge(module, b):\n    if module.ephemeral_gpu_offload:\n        b = b.to('cuda')\n    return b\n")
    device = by_line(scan_package(scan_source, source), "LK101")[3]
    assert device.context.split("+")[0] == "optional" and "`module.ephemeral_gpu_offload` option (line 2)" in device.message
    assert device.targets["mps"] == "degrades" and device.targets["tpu"] == "works", device  # no GPU there


def test_trap_a_cuda_option_still_skips_the_targets_it_cannot_be_on(scan_source):
    source = ("def merge(args, b):\n    if args.use_cuda:\n        b = b.to('cuda')\n    return b\n")
    device = by_line(scan_package(scan_source, source), "LK101")[3]
    assert device.context == "guarded" and device.targets["mps"] == "works" and device.targets["rocm"] == "works"


# -- a function that requires a runtime ----------------------------------------------------------------

REQUIRED = ("import torch\n\n\ndef loftq_init(weight):\n"
            "    if is_bnb_available():\n        import bitsandbytes as bnb\n"
            "    else:\n        raise ValueError('install bitsandbytes')\n"
            "    device = 'xpu' if is_xpu_available() else 'cuda'\n"
            "    return bnb.nn.Params4bit(weight).to(device)\n\n\n"
            "def forward(x):\n    return x\n")


def test_every_tie_of_a_function_that_requires_a_runtime_is_its_feature(scan_source):
    result = scan_package(scan_source, REQUIRED)
    device = by_line(result, "LK101")[9]
    assert "feature" in device.context.split("+") and "`loftq_init()`" in device.message, device
    assert verdicts(result.findings)["cpu"].verdict != "fails"  # the feature fails, not the package


def test_a_function_that_imports_an_opt_in_library_at_its_top_is_that_feature(scan_source):
    source = REQUIRED.replace("    if is_bnb_available():\n        import bitsandbytes as bnb\n"
                              "    else:\n        raise ValueError('install bitsandbytes')\n",
                              "    import bitsandbytes as bnb\n\n\n")
    found = by_line(scan_package(scan_source, source), "LK101")
    device = found[min(found)]
    assert "feature" in device.context.split("+") and "`loftq_init()`" in device.message, device


@pytest.mark.parametrize("source", [
    # trap: the else goes on without the runtime
    REQUIRED.replace("raise ValueError('install bitsandbytes')", "bnb = None"),
    # trap: a plain lazy import of a library that is no opt-in may only defer its cost
    REQUIRED.replace("    if is_bnb_available():\n        import bitsandbytes as bnb\n"
                     "    else:\n        raise ValueError('install bitsandbytes')\n", "    import deep_ep as bnb\n"),
])
def test_trap_a_runtime_the_function_does_not_require_leaves_its_other_ties(source, scan_source):
    found = by_line(scan_package(scan_source, source), "LK101")
    device = found[min(found)]
    assert device.context is None or "feature" not in device.context.split("+"), device


# -- a config lookup's fallback, a base-class hook's default ----------------------------------------------

def test_the_fallback_of_a_config_lookup_is_a_default_the_config_replaces(scan_source):
    source = ("def build(cfg):\n    return Runner(env_cfg=cfg.get('env_cfg', dict(dist_cfg=dict(backend='nccl'))))\n")
    backend = by_line(scan_package(scan_source, source), "LK301")[2]
    assert backend.context == "optional" and "fallback of `cfg.get('env_cfg', ...)`" in backend.message
    assert backend.targets["cpu"] == "works"


@pytest.mark.parametrize("source", [
    "import torch.distributed as dist\nBACKENDS = {}\n\n\ndef build(name):\n"
    "    dist.init_process_group(BACKENDS.get(name, 'nccl'))\n",  # trap: a lookup in a table, not a config
    "import torch.distributed as dist\n\n\ndef build(cfg):\n"
    "    dist.init_process_group(cfg.get(key, 'nccl'))\n",  # trap: a computed key names no setting
])
def test_trap_a_lookup_that_is_no_setting_keeps_its_default(source, scan_source):
    found = by_line(scan_package(scan_source, source), "LK301")
    assert_main_path([found[min(found)]])


def test_trap_a_lookup_default_that_calls_cuda_runs_before_the_lookup(scan_source):
    source = ("import torch\n\n\ndef build(kwargs):\n"
              "    return kwargs.get('device', torch.cuda.current_device())\n")
    found = by_line(scan_package(scan_source, source), "LK203")
    assert_main_path([found[5]])


def test_a_hook_a_base_class_calls_gets_its_values_from_the_caller(scan_source):
    source = ("class DDPStrategy(BaseStrategy):\n"
              "    def _setup_distributed(self, launcher='pytorch', backend='nccl', **kwargs):\n"
              "        init_dist(launcher, backend, **kwargs)\n")
    backend = by_line(scan_package(scan_source, source), "LK301")[2]
    assert backend.context == "optional" and "`_setup_distributed(backend=...)`" in backend.message


def test_trap_a_private_method_of_a_class_with_no_base_is_no_hook(scan_source):
    source = ("class Strategy:\n"
              "    def _setup_distributed(self, launcher='pytorch', backend='nccl', **kwargs):\n"
              "        init_dist(launcher, backend, **kwargs)\n")
    found = by_line(scan_package(scan_source, source), "LK301")
    assert found[2].context is None and found[2].targets["cpu"] == "raises"


# -- CUDA_HOME looked up by a module that builds nothing ---------------------------------------------------

def test_cuda_home_read_by_a_module_that_builds_nothing_is_a_lookup(scan_source):
    source = ("def _get_cuda_home():\n    from torch.utils.cpp_extension import CUDA_HOME\n    return CUDA_HOME\n\n\n"
              "def _get_extension():\n    from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
              "    return BuildExtension, CUDAExtension\n")
    found = by_line(scan_package(scan_source, source, "pkg/utils/wrapper.py"), "LK402")
    assert found and all(f.context == "optional" and set(f.targets.values()) == {"works"} for f in found.values())
    assert "nothing in this module builds CUDA code with it" in found[2].message


@pytest.mark.parametrize("name, source", [
    ("pkg/ops.py", "from torch.utils.cpp_extension import CUDA_HOME, load\n\n\n"
                   "def build():\n    return load('k', ['k.cpp', 'k.cu'])\n"),  # trap: the module builds
    ("pkg/ops.py", "from torch.utils.cpp_extension import CUDA_HOME\n\nif CUDA_HOME is None:\n"
                   "    raise RuntimeError('needs the CUDA toolkit')\n"),  # trap: a missing toolkit raises
    ("setup.py", "from torch.utils.cpp_extension import CUDA_HOME\nprint(CUDA_HOME)\n"),  # trap: a setup script
    ("pkg/op_builder/fused.py", "from torch.utils.cpp_extension import CUDA_HOME\n"),  # trap: a builder folder
])
def test_trap_cuda_home_in_build_code_stays_a_build(name, source, scan_source):
    found = by_line(scan_package(scan_source, source, name), "LK402")
    assert found[1].context is None and found[1].targets["cpu"] == "raises", found[1]
