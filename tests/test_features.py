"""Opt-in features (context `feature`): a function whose body is the only place a file imports an
NVIDIA-only runtime fails on its own verdict, and its component runs as its main path does (the
reasons name the feature); a top-level import of the same runtime is the main path's and still fails it."""

from __future__ import annotations

import pytest
from repo_report import report

PYPROJECT = '[project]\nname = "lib"\n'
EXPORT = ("import torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n\n"
          "    def to_tensorrt(self, path):\n        import torch_tensorrt\n\n"
          "        engine = torch_tensorrt.compile(self, inputs=[torch.ones(1)])\n"
          "        torch_tensorrt.save(engine, path)\n")


def test_a_lazy_tensorrt_export_is_a_feature_and_the_package_runs_without_it(tmp_path, capsys):
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/model.py": EXPORT}, capsys)
    found = [f for f in document["findings"] if f["rule"] == "LK411"]
    assert found and all(f["context"] == "feature" for f in found)
    assert "`to_tensorrt()` (line 8)" in found[0]["message"]
    assert all(f["targets"]["cpu"] == "raises" for f in found)  # the feature itself still fails there
    for target in ("rocm", "cpu", "tpu"):
        verdict = document["verdicts"][target]
        assert verdict["verdict"] == "runs", target
        assert verdict["reasons"][0]["why"].startswith("1 feature is NVIDIA-only: the TensorRT runtime (lib/model.py:")
    (package,) = [c for c in document["components"] if c["name"] == "lib"]
    (feature,) = package["features"]
    assert feature["path"] == "lib/model.py" and feature["rule"] == "LK411"
    assert feature["verdicts"]["cpu"] == "fails" and set(feature["verdicts"]) == set(document["targets"])


def test_a_top_level_import_is_the_main_path(tmp_path, capsys):
    # trap: the same function, but the module imports the runtime at its top: the main path needs it
    top = "import torch_tensorrt\n" + EXPORT
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/model.py": top}, capsys)
    assert all(f["context"] != "feature" for f in document["findings"] if f["rule"] == "LK411")
    assert document["verdicts"]["cpu"]["verdict"] == "fails"
    assert all(not c["features"] for c in document["components"])


def test_a_lazy_import_outside_a_function_is_not_a_feature(tmp_path, capsys):
    # trap: indented, but in a module-level block that always runs
    block = "import sys\nif sys.platform == 'linux':\n    import tensorrt as trt\n    builder = trt.Builder(trt.Logger())\n"
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/build.py": block}, capsys)
    assert all(f["context"] != "feature" for f in document["findings"] if f["rule"] == "LK411")
    assert document["verdicts"]["cpu"]["verdict"] == "fails"


def test_a_feature_beside_a_main_path_failure_does_not_hide_it(tmp_path, capsys):
    files = {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/model.py": EXPORT,
             "lib/train.py": "import torch\nx = torch.zeros(3, device='cuda')\n"}
    document = report(tmp_path, files, capsys)
    assert document["verdicts"]["cpu"]["verdict"] == "fails"
    assert {r["path"] for r in document["verdicts"]["cpu"]["reasons"]} == {"lib/train.py"}


APEX_STEP = ("import torch\n\n\ndef apex_training_step(model, optimizer):\n"
             "    try:\n        from apex import amp as apex_amp\n"
             "    except ModuleNotFoundError:\n        raise ModuleNotFoundError('install apex to use amp_mode=apex')\n\n"
             "    def update(loss):\n        with apex_amp.scale_loss(loss, optimizer) as scaled:\n"
             "            scaled.backward()\n\n    return update\n")
APEX_AT_TOP = ("import torch\ntry:\n    from apex import amp\nexcept ImportError:\n    amp = None\n\n\n"
               "def update(loss, optimizer):\n    with amp.scale_loss(loss, optimizer) as scaled:\n        scaled.backward()\n")


def test_a_step_builder_importing_apex_is_a_feature_its_nested_step_too(tmp_path, capsys):
    """A function that imports the runtime (ignite's `amp_mode='apex'` step builder): the step it
    returns uses the name, and belongs to the same feature, named for the function that imports."""
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/engine.py": APEX_STEP},
                      capsys)
    found = [f for f in document["findings"] if f["path"] == "lib/engine.py" and f["line"] in (6, 11)]
    assert {f["line"] for f in found} == {6, 11} and all("feature" in f["context"].split("+") for f in found)
    assert all("`apex_training_step()`" in f["message"] for f in found)
    assert document["verdicts"]["cpu"]["verdict"] == "runs"


def test_a_module_level_optional_import_used_in_a_function_is_no_feature(tmp_path, capsys):
    """Trap: the import is the module's (optional, in try/except at its top), not the function's."""
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/engine.py": APEX_AT_TOP},
                      capsys)
    found = [f for f in document["findings"] if f["path"] == "lib/engine.py"]
    assert found and all("feature" not in (f["context"] or "").split("+") for f in found)


# -- backends chosen by name (issue 15 item 2: a backend module imported lazily by a dispatcher) ----

DISPATCH = ("import os\nENGINE = os.getenv('ENGINE', 'ck')\n\n\n"
            "def attention(q):\n"
            "    if ENGINE == 'ck':\n        return q * 2\n"
            "    elif ENGINE == 'triton':\n        from .flash_attn_triton import triton_attention\n\n"
            "        return triton_attention(q)\n"
            "    elif ENGINE in ('deepep', 'hybridep'):\n        import deep_ep\n        return deep_ep.Buffer()\n"
            "    return q\n")
TRITON_BACKEND = ("import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef kernel(x):\n    pass\n\n\n"
                  "def triton_attention(q):\n    kernel[(1,)](q)\n    return q\n")


def test_a_backend_chosen_by_name_is_a_feature_and_so_is_the_module_it_imports(tmp_path, capsys):
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/attn/__init__.py": DISPATCH,
                                 "lib/attn/flash_attn_triton.py": TRITON_BACKEND}, capsys)
    deep = [f for f in document["findings"] if f["path"] == "lib/attn/__init__.py" and f["line"] in (13, 14)]
    assert len(deep) == 2 and all(f["context"] == "feature" for f in deep)
    assert "the branch for the `deepep/hybridep` choice (line 12)" in deep[0]["message"]
    kernels = [f for f in document["findings"] if f["path"] == "lib/attn/flash_attn_triton.py"]
    assert kernels and all("feature" in f["context"].split("+") for f in kernels)
    assert all(f["targets"]["cpu"] == "raises" for f in kernels)  # the backend itself fails there
    assert "imported only in the branch of a choice by name (lib/attn/__init__.py:9)" in kernels[0]["message"]
    for target in ("cpu", "tpu", "mps"):
        verdict = document["verdicts"][target]
        assert verdict["verdict"] == "runs", target
        # Triton also runs on ROCm: the features fail here, they are not NVIDIA-only
        assert verdict["reasons"][0]["why"].startswith(f"2 features fail on {target.upper()}: "), target
    (package,) = [c for c in document["components"] if c["name"] == "lib"]
    assert {f["path"] for f in package["features"]} == {"lib/attn/__init__.py", "lib/attn/flash_attn_triton.py"}


def test_trap_a_device_branch_a_flag_value_and_a_branch_importing_nothing_are_no_choice(tmp_path, capsys):
    src = ("import os, torch\n\n\ndef f(engine):\n"
           "    if os.getenv('USE_DEEP_EP') == '1':\n        import deep_ep\n        deep_ep.Buffer()\n"
           "    if engine == 'triton':\n        torch.cuda.synchronize()\n")
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/m.py": src}, capsys)
    found = [f for f in document["findings"] if f["path"] == "lib/m.py"]
    assert found and not any("the branch for the" in f["message"] for f in found)
    # deep_ep imported only in f() makes its own lines f()'s opt-in; the synchronize beside it stays main
    sync = [f for f in found if f["rule"] == "LK204"]
    assert sync and all("feature" not in (f["context"] or "").split("+") for f in sync)
    assert document["verdicts"]["cpu"]["verdict"] == "fails"


def test_trap_a_feature_the_main_path_calls_unconditionally_is_not_optional(tmp_path, capsys):
    """Item 6: the same export function, but the module calls it on import (or the model's forward
    does): the main path needs it. A helper that calls it is no main path of its own."""
    calls = EXPORT + "\n\nENGINE = Model().to_tensorrt('m.engine')\n"
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/model.py": calls}, capsys)
    found = [f for f in document["findings"] if f["rule"] == "LK411"]
    assert found and all(f["context"] != "feature" for f in found)
    assert document["verdicts"]["cpu"]["verdict"] == "fails"


def test_a_feature_called_from_forward_is_the_main_path_but_not_from_another_helper(tmp_path, capsys):
    in_forward = EXPORT.replace("        return x * 2\n", "        self.to_tensorrt('m.engine')\n        return x * 2\n")
    helper = EXPORT + "\n\ndef export_all(models):\n    return [m.to_tensorrt('m.engine') for m in models]\n"
    for source, feature in ((in_forward, False), (helper, True)):
        document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/model.py": source}, capsys)
        found = [f for f in document["findings"] if f["rule"] == "LK411"]
        assert found and all((f["context"] == "feature") == feature for f in found), source


REGISTRY = ("import torch\n\n\nclass NcclDispatcher:\n    def send(self, x):\n        return x\n\n\n"
            "class DeepEPDispatcher:\n    def send(self, x):\n        import deep_ep\n"
            "        buffer = deep_ep.Buffer()\n        return x.cuda()\n\n\n"
            "DISPATCHERS = {'alltoall': NcclDispatcher, 'deepep': DeepEPDispatcher}\n\n\n"
            "def dispatcher(name):\n    return DISPATCHERS[name]()\n")


def test_a_backend_listed_by_name_in_a_registry_is_a_feature(tmp_path, capsys):
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/moe.py": REGISTRY}, capsys)
    found = [f for f in document["findings"] if f["path"] == "lib/moe.py"]
    assert {f["line"] for f in found} >= {11, 12, 13}
    assert all("feature" in f["context"].split("+") for f in found if f["line"] in (11, 12, 13))
    cuda = next(f for f in found if f["line"] == 13)  # not only the runtime's own uses: the whole backend
    assert "`DeepEPDispatcher` (line 9), which the module lists only as the `deepep` choice" in cuda["message"]
    assert document["verdicts"]["cpu"]["verdict"] == "runs"


def test_trap_a_registered_backend_the_module_also_builds_directly_is_the_main_path(tmp_path, capsys):
    direct = REGISTRY + "\nDEFAULT = DeepEPDispatcher()\n"
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/moe.py": direct}, capsys)
    cuda = next(f for f in document["findings"] if f["path"] == "lib/moe.py" and f["line"] == 13)
    assert cuda["context"] is None and document["verdicts"]["cpu"]["verdict"] == "fails"


# -- a class that registers itself by name (lightning's strategies) ---------------------------------
SELF_REGISTERED = ("import torch\n\n\nclass Strategy:\n    pass\n\n\n"
                   "class GraphStrategy(Strategy):\n"
                   "    def setup(self, module):\n"
                   "        with torch.cuda.stream(torch.cuda.Stream()):\n"
                   "            return module\n\n"
                   "    @classmethod\n"
                   "    def register_strategies(cls, registry):\n"
                   "        for name in ('graph', 'graph_spawn'):\n"
                   "            registry.register(name, cls, description='x')\n"
                   "        registry.register('graph_find_unused', cls)\n")


def test_a_class_that_registers_itself_by_name_is_an_opt_in_backend(tmp_path, capsys):
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/graph.py": SELF_REGISTERED}, capsys)
    found = [f for f in document["findings"] if f["path"] == "lib/graph.py" and f["line"] == 10]
    assert found and all(f["context"] == "feature" for f in found)
    assert all(f["targets"]["cpu"] == "raises" for f in found)  # the backend itself still fails there
    assert "`GraphStrategy` (line 8), which registers itself in a registry by name (the `graph_find_unused` choice)" \
        in found[0]["message"]
    assert document["verdicts"]["cpu"]["verdict"] == "runs"
    # CUDA streams run on ROCm (HIP): a feature that fails on the CPU, not an NVIDIA-only one
    assert document["verdicts"]["cpu"]["reasons"][0]["why"].startswith("1 feature fails on CPU: CUDA streams or events")


def test_a_decorator_registration_with_its_key_is_one_too_but_not_a_keyless_one(tmp_path, capsys):
    body = "    def setup(self, module):\n        return module.cuda()\n"
    keyed = f"import torch\nfrom lib.reg import STRATEGIES\n\n\n@STRATEGIES.register('fast')\nclass Fast:\n{body}"
    keyless = keyed.replace("@STRATEGIES.register('fast')", "@STRATEGIES.register()")
    for source, feature in ((keyed, True), (keyless, False)):
        files = {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/reg.py": "STRATEGIES = {}\n", "lib/fast.py": source}
        document = report(tmp_path, files, capsys)
        (cuda,) = [f for f in document["findings"] if f["path"] == "lib/fast.py" and f["rule"] == "LK102"]
        assert (cuda["context"] == "feature") is feature, source
        assert document["verdicts"]["cpu"]["verdict"] == ("runs" if feature else "fails")


def test_trap_a_class_registered_as_the_default_or_built_at_the_top_is_the_main_path(tmp_path, capsys):
    default = SELF_REGISTERED.replace("registry.register('graph_find_unused', cls)", "registry.register('default', cls)")
    built = SELF_REGISTERED + "\n\nSTRATEGY = GraphStrategy()\n"
    for source in (default, built):
        document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/graph.py": source}, capsys)
        found = [f for f in document["findings"] if f["path"] == "lib/graph.py" and f["line"] == 10]
        assert found and all(f["context"] is None for f in found), source
        assert document["verdicts"]["cpu"]["verdict"] == "fails"


def test_trap_a_class_registered_under_a_device_name_is_no_opt_in_feature(tmp_path, capsys):
    # `register("cuda", cls)` is the CUDA accelerator of a dispatch layer: its siblings judge it, not a choice
    device = SELF_REGISTERED.replace("registry.register('graph_find_unused', cls)", "registry.register('cuda', cls)")
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/graph.py": device}, capsys)
    found = [f for f in document["findings"] if f["path"] == "lib/graph.py" and f["line"] == 10]
    assert found and all(f["context"] is None for f in found)


# -- every tie in a feature's function is the feature's -----------------------------------------------
def test_a_cuda_default_in_the_signature_of_a_feature_function_is_the_feature(tmp_path, capsys):
    source = EXPORT.replace("def to_tensorrt(self, path):", "def to_tensorrt(self, path, device='cuda'):")
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/model.py": source}, capsys)
    (default,) = [f for f in document["findings"] if f["rule"] == "LK101"]
    assert default["context"] == "feature" and "`to_tensorrt()` (line 8)" in default["message"]
    assert document["verdicts"]["cpu"]["verdict"] == "runs"


def test_trap_a_scripts_main_importing_a_runtime_is_the_program_not_a_feature(tmp_path, capsys):
    script = ("import torch\n\n\ndef report_gpus(model):\n    import pynvml\n\n    pynvml.nvmlInit()\n"
              "    return model.to('cuda')\n\n\nif __name__ == '__main__':\n    report_gpus(torch.nn.Linear(1, 1))\n")
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/gpus.py": script}, capsys)
    (device,) = [f for f in document["findings"] if f["rule"] == "LK101"]
    assert "feature" not in (device["context"] or "").split("+")
    main = script.replace("def report_gpus", "def main").replace("report_gpus(torch", "main(torch")
    main = main.replace("if __name__ == '__main__':\n    main(torch.nn.Linear(1, 1))\n", "")
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/gpus.py": main}, capsys)
    (device,) = [f for f in document["findings"] if f["rule"] == "LK101"]
    assert device["context"] is None  # an entry point's body is the program, never called here or not


LAZY_GLOBAL = ("import torch\n\n_fwd = None\n\n\ndef _ensure_flash_mla():\n    global _fwd\n"
               "    if _fwd is not None:\n        return\n    from flash_mla import flash_mla_sparse_fwd as f\n"
               "    _fwd = f\n\n\ndef sparse_attention(q, k, v):\n    _ensure_flash_mla()\n"
               "    out, lse = _fwd(q, k, v)\n    return out\n")


def test_a_global_a_loader_function_binds_lazily_is_that_loaders_feature(tmp_path, capsys):
    # Megatron's FlashMLA: `_fwd = None`, set by `_ensure_flash_mla()` (the only import), called later
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/attn.py": LAZY_GLOBAL}, capsys)
    found = [f for f in document["findings"] if f["rule"] == "LK409"]
    assert [f["line"] for f in found] == [10, 16]
    assert all(f["context"] == "feature" and "`_ensure_flash_mla()` (line 6)" in f["message"] for f in found)
    assert document["verdicts"]["rocm"]["verdict"] == "runs"


def test_trap_a_global_bound_at_the_top_or_by_a_function_without_the_import_is_the_main_path(tmp_path, capsys):
    # the loader does not import the runtime: the global comes from the module's top-level import
    eager = ("import torch\nfrom flash_mla import flash_mla_sparse_fwd\n\n_fwd = None\n\n\ndef _ensure():\n"
             "    global _fwd\n    _fwd = flash_mla_sparse_fwd\n\n\ndef lazy_elsewhere():\n"
             "    from flash_mla import flash_mla_sparse_fwd as g\n    return g\n\n\n"
             "def sparse_attention(q, k, v):\n    _ensure()\n    return flash_mla_sparse_fwd(q, k, v)\n")
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/attn.py": eager}, capsys)
    main_path = [f for f in document["findings"] if f["rule"] == "LK409" and f["context"] != "feature"]
    assert main_path and document["verdicts"]["rocm"]["verdict"] == "fails"


XLA_STEP = ("import torch\n\n\ndef train_step(model, batch):\n    return model(batch).sum()\n\n\n"
            "def xla_step(model, batch, optimizer):\n    import torch_xla.core.xla_model as xm\n\n"
            "    loss = model(batch).sum()\n    xm.optimizer_step(optimizer)\n    return loss\n")


def test_a_feature_only_xla_targets_run_is_their_own_path_and_costs_the_others_nothing(tmp_path, capsys):
    # ignite's and lightning's TPU steps: ROCm, MPS and the CPU do not lose what only TPU runs
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/step.py": XLA_STEP}, capsys)
    (package,) = [c for c in document["components"] if c["name"] == "lib"]
    (feature,) = package["features"]
    assert feature["verdicts"]["tpu"] != "fails" and feature["verdicts"]["rocm"] == "fails"
    for target in ("rocm", "mps", "cpu"):
        assert document["verdicts"][target]["verdict"] == "runs", target


def test_a_tensorrt_feature_is_named_in_every_verdict_but_lowers_none(tmp_path, capsys):
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/model.py": EXPORT}, capsys)
    for target in ("rocm", "tpu", "cpu"):  # the feature's own verdict fails; its package runs as it is
        verdict = document["verdicts"][target]
        assert verdict["verdict"] == "runs" and "feature" in verdict["reasons"][0]["why"], target


# -- folders of experimental code ------------------------------------------------------------------
CUDA_MODULE = "import torch\n\n\ndef step(x):\n    torch.cuda.synchronize()\n    return x.cuda()\n"


def test_a_module_in_an_experimental_folder_is_an_opt_in_feature(tmp_path, capsys):
    files = {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/core.py": "import torch\n",
             "lib/prototype/__init__.py": "", "lib/prototype/fast.py": CUDA_MODULE,
             "recipes/dev/train.py": CUDA_MODULE, "recipes/configs/dev/run.yaml": "device: cuda\n",
             "tests/prototype/test_fast.py": CUDA_MODULE}
    document = report(tmp_path, files, capsys)
    assert all(f["context"] == "test" for f in document["findings"] if f["path"].startswith("tests/"))
    fast = [f for f in document["findings"] if f["path"] == "lib/prototype/fast.py"]
    assert fast and all(f["context"] == "feature" and f["targets"]["cpu"] == "raises" for f in fast)
    assert "is in `lib/prototype/`, a folder of experimental code" in fast[0]["message"]
    assert all("feature" in f["context"] for f in document["findings"] if f["path"].startswith("recipes/"))
    for target in ("cpu", "mps", "tpu"):
        assert document["verdicts"][target]["verdict"] == "runs", target
    (package,) = [c for c in document["components"] if c["name"] == "lib"]
    assert {f["path"] for f in package["features"]} == {"lib/prototype/fast.py"}


@pytest.mark.parametrize("path", [
    "lib/devices/fast.py",  # trap: a word that only starts like one
    "lib/fast_dev.py",  # trap: a module named for it, not a folder
    "dev/fast.py",  # trap: a repository's top folder (its tooling) is a component, not a feature
])
def test_trap_no_experimental_folder_below_the_top(path, tmp_path, capsys):
    files = {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/devices/__init__.py": "", path: CUDA_MODULE}
    document = report(tmp_path, files, capsys)
    found = [f for f in document["findings"] if f["path"] == path]
    assert found and all("feature" not in (f["context"] or "") for f in found), found


# -- a branch that imports a runtime lazily ------------------------------------------------------------
LORA_MERGE = ("import torch\n\n\nclass LoRALinear(torch.nn.Module):\n    def merge(self) -> None:\n"
              "        lora = self.get_lora_AB()\n        if self.linear.weight.dtype == torch.uint8:\n"
              "            import bitsandbytes as bnb\n\n"
              "            weight = bnb.functional.dequantize_4bit(self.linear.weight.data)\n"
              "            self.linear.weight = bnb.nn.Params4bit(weight + lora)\n"
              "            self.linear.weight.cuda(lora.device)\n"
              "        else:\n            self.linear.weight.data = lora.cuda()\n"
              "        if self.r > 0:\n            self.scale = torch.ones(1).cuda()\n")


def test_the_ties_of_a_branch_that_imports_a_runtime_lazily_are_that_features(tmp_path, capsys):
    document = report(tmp_path, {"pyproject.toml": PYPROJECT, "lib/__init__.py": "", "lib/lora.py": LORA_MERGE}, capsys)
    by_line = {f["line"]: f for f in document["findings"] if f["path"] == "lib/lora.py"}
    assert by_line[12]["rule"] == "LK102" and by_line[12]["context"] == "feature"
    assert "`merge()`" in by_line[12]["message"] and "`bitsandbytes`" in by_line[12]["message"]
    assert by_line[14]["context"] is None  # trap: the else branch is the main path's
    assert by_line[16]["context"] is None  # trap: a branch that imports nothing
