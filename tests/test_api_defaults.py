"""A package's API takes the device from its caller: parameter and dataclass-field defaults, a lone
`def cuda()` method, and a library imported only inside one function (auditor.analysis.placement).
Each form has a trap that does not protect."""

from __future__ import annotations

PACKAGE = {"pyproject.toml": '[project]\nname = "pkg"\nversion = "0"\n', "pkg/__init__.py": ""}


def _findings(scan_source, code: str, path: str = "pkg/utils.py", package: bool = True):
    files = {**(PACKAGE if package else {}), path: code}
    result = scan_source(files)
    assert not result.errors, result.errors
    return sorted(result.findings, key=lambda f: (f.line, f.column))


def _one(scan_source, code: str, rule: str, **kw):
    path = kw.get("path", "pkg/utils.py")
    found = [f for f in _findings(scan_source, code, **kw) if f.rule == rule and f.path.endswith(path)]
    assert len(found) == 1, found
    return found[0]


# -- parameter defaults of the package's API -------------------------------------------------------
def test_a_public_functions_device_default_nothing_here_calls_works_for_callers_passing_one(scan_source):
    f = _one(scan_source, 'import torch\n\ndef make_loader(ds, device=torch.device("cuda")):\n    return ds\n', "LK101")
    assert f.context == "optional" and f.guard == "option" and f.targets["cpu"] == "works"
    assert "`make_loader(device=...)`" in f.message and "package API" in f.message


def test_an_api_default_that_already_falls_back_works_where_the_caller_picks_the_device(scan_source):
    code = ('import torch\n\ndef load(name, device="cuda" if torch.cuda.is_available() else "cpu"):\n'
            '    return torch.jit.load(name, map_location=device)\n')
    f = _one(scan_source, code, "LK103")
    assert f.context == "optional" and f.guard == "option" and "`load(device=...)`" in f.message
    assert f.targets["tpu"] == "works" and f.targets["mps"] == "works" and f.severity == "info"


def test_trap_a_fallback_default_a_call_in_the_module_relies_on_still_degrades(scan_source):
    code = ('import torch\n\ndef load(name, device="cuda" if torch.cuda.is_available() else "cpu"):\n'
            '    return name\n\ndef build():\n    return load("m")\n')
    assert _one(scan_source, code, "LK103").targets["tpu"] == "degrades"


def test_trap_a_call_in_the_module_that_leaves_the_default_out_keeps_it_failing(scan_source):
    code = ('import torch\n\ndef make_loader(ds, device=torch.device("cuda")):\n    return ds\n\n'
            'def build(ds):\n    return make_loader(ds)\n')
    f = _one(scan_source, code, "LK101")
    assert f.context is None and f.targets["cpu"] == "raises"


def test_trap_private_functions_scripts_and_entry_points_are_not_api(scan_source):
    private = _one(scan_source, 'def _load(p, device="cuda"):\n    return p\n', "LK101", path="pkg/a.py")
    script = _one(scan_source, 'def load(p, device="cuda"):\n    return p\n', "LK101", path="load.py", package=False)
    entry = _one(scan_source, 'def main(device="cuda"):\n    return device\n', "LK101", path="pkg/b.py")
    nested = _one(scan_source, 'def outer():\n    def load(p, device="cuda"):\n        return p\n    return load\n', "LK101",
                  path="pkg/c.py")
    assert [f.targets["cpu"] for f in (private, script, entry, nested)] == ["raises"] * 4


def test_an_init_default_every_construction_in_the_module_passes_works(scan_source):
    code = ('import torch\n\nclass Prefetcher:\n    def __init__(self, loader, device=torch.device("cuda")):\n'
            '        self.device = device\n\ndef create(loader, device):\n    return Prefetcher(loader, device=device)\n')
    f = _one(scan_source, code, "LK101")
    assert f.context == "optional" and "`Prefetcher(device=...)`" in f.message and f.targets["cpu"] == "works"


def test_trap_an_init_default_a_construction_leaves_out_fails(scan_source):
    code = ('import torch\n\nclass Prefetcher:\n    def __init__(self, loader, device=torch.device("cuda")):\n'
            '        self.device = device\n\ndef create(loader):\n    return Prefetcher(loader)\n')
    assert _one(scan_source, code, "LK101").targets["cpu"] == "raises"


def test_a_dataclass_fields_default_is_its_constructors_parameter(scan_source):
    code = 'from dataclasses import dataclass\n\n@dataclass\nclass InitKwargs:\n    backend: str = "nccl"\n'
    f = _one(scan_source, code, "LK301")
    assert f.context == "optional" and "`InitKwargs(backend=...)`" in f.message and f.targets["cpu"] == "works"


def test_trap_a_plain_class_attribute_and_a_dataclass_built_without_the_field_fail(scan_source):
    plain = _one(scan_source, 'class Settings:\n    backend: str = "nccl"\n', "LK301", path="pkg/a.py")
    code = ('from dataclasses import dataclass\n\n@dataclass\nclass InitKwargs:\n    backend: str = "nccl"\n\n'
            'DEFAULT = InitKwargs()\n')
    built = _one(scan_source, code, "LK301")
    assert plain.targets["cpu"] == built.targets["cpu"] == "raises"


# -- a lone `def cuda()` method -----------------------------------------------------------------------
def test_ties_inside_a_classs_own_cuda_method_run_only_when_cuda_is_asked_for(scan_source):
    code = ('import torch\n\nclass Rotation:\n    def cuda(self):\n        return Rotation(self._mats.cuda())\n')
    f = _one(scan_source, code, "LK102")
    assert f.context == "backend-module" and set(f.targets.values()) == {"works"}
    assert "asks for CUDA by name" in f.message


def test_trap_a_cuda_call_in_another_method_or_a_module_function_named_cuda_still_raises(scan_source):
    method = _one(scan_source, 'class Rotation:\n    def move(self):\n        return self._mats.cuda()\n', "LK102",
                  path="pkg/a.py")
    function = _one(scan_source, 'def cuda(x):\n    return x.cuda()\n', "LK102")
    assert method.targets["cpu"] == function.targets["cpu"] == "raises"


# -- a library imported only inside one function -----------------------------------------------------
def test_a_function_that_alone_imports_torch_xla_is_an_opt_in_feature(scan_source):
    code = ('def wrap_model_xla_fsdp(model):\n    import torch_xla.core.xla_model as xm\n'
            '    return model.to(xm.xla_device())\n')
    found = [f for f in _findings(scan_source, code) if f.rule == "LK104"]
    assert found and all(f.context == "feature" for f in found)
    assert "`wrap_model_xla_fsdp()`" in found[0].message and "NVIDIA-only" not in found[0].message


def test_a_liger_patch_imported_lazily_is_a_feature_and_the_package_still_runs(scan_source):
    code = ('def apply_liger_kernel(model):\n    from liger_kernel.transformers import _apply_liger_kernel_to_instance\n'
            '    _apply_liger_kernel_to_instance(model=model)\n')
    result = scan_source({**PACKAGE, "pkg/liger.py": code})
    assert {f.context for f in result.findings if f.rule == "LK409"} == {"feature"}
    from auditor.portability.verdict import verdicts
    cpu = verdicts(result.findings)["cpu"]  # the feature's own verdict fails; the package runs without it
    assert cpu.verdict == "runs" and "1 feature" in cpu.reasons[0].why


def test_trap_a_library_imported_at_the_top_or_called_by_forward_is_the_main_path(scan_source):
    top = 'from liger_kernel.transformers import apply\n\ndef patch(model):\n    apply(model)\n'
    forward = ('import torch\n\nclass Block(torch.nn.Module):\n    def forward(self, x):\n        return self.fused(x)\n\n'
               '    def fused(self, x):\n        from flash_attn import flash_attn_func\n        return flash_attn_func(x, x, x)\n')
    assert not any(f.context == "feature" for f in _findings(scan_source, top, path="pkg/top.py"))
    assert not any(f.context == "feature" for f in _findings(scan_source, forward, path="pkg/block.py"))


# -- the old-PyTorch branch of a portable call ---------------------------------------------------------
LEGACY = ("import torch\n\ndef autocast_dtype(device):\n    try:\n        return torch.get_autocast_dtype(device)\n"
          "    except (AttributeError, TypeError):\n        assert device == 'cuda'\n"
          "        return torch.get_autocast_gpu_dtype()\n")


def test_cuda_code_in_the_missing_api_handler_of_a_portable_try_runs_only_on_old_torch(scan_source):
    found = [f for f in _findings(scan_source, LEGACY, path="compat.py", package=False) if f.line in (7, 8)]
    assert found and all("optional" in f.context.split("+") and f.targets["mps"] == "degrades" for f in found)
    assert "catches only a missing API" in found[0].message


def test_trap_a_handler_for_any_error_or_a_try_that_is_cuda_code_itself_is_the_main_path(scan_source):
    broad = LEGACY.replace("except (AttributeError, TypeError)", "except Exception")
    cuda_try = LEGACY.replace("torch.get_autocast_dtype(device)", "torch.cuda.get_autocast_dtype(device)")
    for path, code in (("broad.py", broad), ("cuda_try.py", cuda_try)):
        found = [f for f in _findings(scan_source, code, path=path, package=False) if f.line in (7, 8)]
        assert found and not any("optional" in (f.context or "").split("+") for f in found), path
        assert {f.targets["mps"] for f in found if f.rule == "LK101"} == {"raises"}, path


# -- messages that say only what is true (item 4) ----------------------------------------------------
CUPY = ("try:\n    import cupy\nexcept ImportError:\n    cupy = None\n\n\nclass Sorter:\n    def __init__(self):\n"
        "        if cupy is None:\n            raise ImportError('cupy is required')\n        self.x = cupy.zeros(3)\n")


def test_an_optional_import_the_module_requires_is_not_called_a_fallback(scan_source):
    imported = next(f for f in _findings(scan_source, CUPY, path="pkg/cp.py") if f.line == 2)
    assert "fallback runs instead" not in imported.message
    assert "`if cupy is None: raise`, line 9" in imported.message and imported.context == "optional"


def test_trap_an_optional_import_with_a_real_fallback_keeps_its_message(scan_source):
    code = CUPY.replace("        if cupy is None:\n            raise ImportError('cupy is required')\n"
                        "        self.x = cupy.zeros(3)\n", "        self.x = cupy.zeros(3) if cupy else [0, 0, 0]\n")
    imported = next(f for f in _findings(scan_source, code, path="pkg/cp2.py") if f.line == 2)
    assert "the fallback runs instead" in imported.message
