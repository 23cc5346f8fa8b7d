"""Applying fixes: conflicts between edits, rounds until stable, imports left unused, validation
(a round that breaks the file is reverted), and writes that keep the file's bytes as they were
(encoding, BOM, line endings, mode) and refuse links, files outside the tree and files changed
since they were read."""

from __future__ import annotations

import os
import stat

import libcst as cst
import pytest

from auditor.config.settings import Settings
from auditor.fix import apply as fixer
from auditor.fix.apply import fix_paths, write_atomically
from auditor.fix.edits import TextEdit, apply_edits, select, to_offsets
from auditor.fix.imports import name_uses, remove_unused
from auditor.model import Edit, Fix
from auditor.pipeline.scan import scan

SYNC = "import torch\n\ndef step():\n    torch.cuda.synchronize()\n"
SYNC_FIXED = ("import torch\n\ndef step():\n    if torch.accelerator.is_available():\n"
              "        torch.accelerator.synchronize()\n")


def fix(*edits: tuple[int, int, int, int, str]) -> Fix:
    return Fix("safe", "m", tuple(Edit(*e) for e in edits))


# -- edits ---------------------------------------------------------------------------------------------
def test_offsets_and_out_of_range_edits():
    text = "ab\ncd\n"
    assert to_offsets(fix((2, 1, 2, 3, "X")), text) == [TextEdit(3, 5, "X")]
    assert to_offsets(fix((3, 1, 3, 1, "e\n")), text) == [TextEdit(6, 6, "e\n")]  # the empty last line
    assert to_offsets(fix((4, 1, 4, 2, "")), text) is None  # no such line: the text changed
    assert to_offsets(fix((1, 1, 1, 3, "x"), (1, 2, 1, 3, "y")), text) is None  # a fix overlapping itself


def test_conflicting_fixes_wait_for_the_next_round_and_shared_edits_merge():
    text = "a = f(x)\n"
    imports = (1, 1, 1, 1, "import torch\n")
    first = fix((1, 5, 1, 9, "g(x)"), imports)
    overlapping = fix((1, 7, 1, 8, "y"))
    sharing = fix((1, 1, 1, 2, "b"), imports)
    other_import = fix((1, 1, 1, 1, "from torch import nn\n"))
    taken, edits = select([first, overlapping, sharing, other_import], text)
    assert taken == [0, 2, 3]
    assert apply_edits(text, edits) == "import torch\nfrom torch import nn\nb = g(x)\n"


def test_insertions_touch_replacements_without_overlapping():
    text = "x = torch.cuda.sync()\n"
    guard = fix((1, 5, 1, 5, "("), (1, 5, 1, 20, "acc.sync"), (1, 22, 1, 22, " if ok else 0)"))
    taken, edits = select([guard], text)
    assert taken == [0] and apply_edits(text, edits) == "x = (acc.sync() if ok else 0)\n"
    assert select([fix((1, 5, 1, 5, "a")), fix((1, 5, 1, 5, "b"))], text)[0] == [0]  # two inserts at one place


# -- imports left unused ------------------------------------------------------------------------------
def test_only_imports_the_round_left_unused_go():
    before = ("import torch\nfrom torch import cuda, nn  # keep\nfrom torch.cuda.amp import (autocast,\n    GradScaler)\n"
              "import numpy as np\ntry:\n    from torch.cuda import synchronize\nexcept ImportError:\n    pass\n"
              "__all__ = ['nn']\ncuda.x(); autocast(); synchronize(); GradScaler(); nn.Linear; np.zeros\n")
    after = before.replace("cuda.x(); autocast(); synchronize(); ", "").replace("nn.Linear; np.zeros", "x")
    result = remove_unused(name_uses(cst.parse_module(before)), cst.parse_module(after), after)
    assert result == ("import torch\nfrom torch import nn  # keep\nfrom torch.cuda.amp import (GradScaler)\n"
                      "import numpy as np\ntry:\n    pass\nexcept ImportError:\n    pass\n"
                      "__all__ = ['nn']\nGradScaler(); x\n")  # numpy is not ours; `nn` lives on in __all__
    cst.parse_module(result)


# -- files ---------------------------------------------------------------------------------------------
def run_fix(root, *, unsafe=True, write=True, **options):
    options = Settings(cache=False, jobs=1, torch_version="2.13", **options)
    result = scan([str(root)], options)
    return fix_paths(result, unsafe=unsafe, write=write, max_bytes=options.max_bytes)


def test_safe_only_leaves_unsafe_fixes(tmp_path):
    (tmp_path / "a.py").write_text(SYNC + "from torch.cuda.amp import GradScaler\ns = GradScaler()\n", encoding="utf-8")
    run = run_fix(tmp_path, unsafe=False)
    assert run.fixed_count == 1
    text = (tmp_path / "a.py").read_text(encoding="utf-8")
    assert "torch.cuda.synchronize()" in text and 's = torch.amp.GradScaler("cuda")' in text
    assert "from torch.cuda.amp" not in text


def test_an_import_another_module_reimports_stays(tmp_path):
    """Issue 19, pattern 7: `from utils import autocast` elsewhere still needs utils.py's import
    once its own use is rewritten; an import nobody else reads goes as before."""
    amp = "from torch.cuda.amp import autocast\n\ndef run(model):\n    with autocast():\n        return model()\n"
    (tmp_path / "utils.py").write_text(amp, encoding="utf-8")
    (tmp_path / "solo.py").write_text(amp, encoding="utf-8")
    (tmp_path / "train.py").write_text("from utils import autocast, run\nimport solo as s\nprint(s.run)\n", encoding="utf-8")
    run_fix(tmp_path, unsafe=False)
    utils, solo = ((tmp_path / name).read_text(encoding="utf-8") for name in ("utils.py", "solo.py"))
    assert "torch.amp.autocast(" in utils and "from torch.cuda.amp import autocast\n" in utils
    assert "torch.amp.autocast(" in solo and "from torch.cuda.amp" not in solo


def test_diff_writes_nothing(tmp_path):
    (tmp_path / "a.py").write_text(SYNC, encoding="utf-8")
    run = run_fix(tmp_path, write=False)
    assert (tmp_path / "a.py").read_text(encoding="utf-8") == SYNC
    assert run.diff().startswith("--- a/a.py\n+++ b/a.py\n") and "+        torch.accelerator.synchronize()\n" in run.diff()


def test_line_endings_bom_encoding_and_mode_are_kept(tmp_path):
    crlf = tmp_path / "crlf.py"
    crlf.write_bytes(SYNC.replace("\n", "\r\n").encode())
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + SYNC.encode())
    latin = tmp_path / "latin.py"
    latin.write_bytes(("# -*- coding: latin-1 -*-\n# caf\xe9\n" + SYNC).encode("latin-1"))
    os.chmod(latin, 0o750)
    run = run_fix(tmp_path)
    assert len(run.changed) == 3 and all(f.written for f in run.files)
    assert crlf.read_bytes() == SYNC_FIXED.replace("\n", "\r\n").encode()
    assert bom.read_bytes() == b"\xef\xbb\xbf" + SYNC_FIXED.encode()
    assert latin.read_bytes() == ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + SYNC_FIXED).encode("latin-1")
    assert stat.S_IMODE(latin.stat().st_mode) == 0o750
    assert not [p for p in os.listdir(tmp_path) if "lockin-" in p]  # no temporary file left
    assert not run_fix(tmp_path).changed  # a second run changes nothing


def test_a_file_changed_since_it_was_read_is_not_overwritten(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(SYNC, encoding="utf-8")
    assert write_atomically(str(path), b"new", b"something else").startswith("not fixed: the file changed on disk")
    assert path.read_text(encoding="utf-8") == SYNC
    assert write_atomically(str(path), b"new", SYNC.encode()) is None and path.read_bytes() == b"new"


def test_symlinks_are_never_written_through(tmp_path):
    """A link out of the scanned folder is not even read (a scan error); one inside it is read
    through its target, and the fixer still refuses to write through the link."""
    target = tmp_path / "outside.py"
    target.write_text(SYNC, encoding="utf-8")
    repo = tmp_path / "repo"
    repo.mkdir()
    os.symlink(target, repo / "link.py")
    run = run_fix(repo)
    assert not run.changed
    assert target.read_text(encoding="utf-8") == SYNC and os.path.islink(repo / "link.py")
    inside = repo / "sub" / "inner.py"
    inside.parent.mkdir()
    inside.write_text(SYNC, encoding="utf-8")
    (repo / "link.py").unlink()
    os.symlink(inside, repo / "link.py")
    run = run_fix(repo)
    assert any("symlink" in e.message and e.path == "link.py" for e in run.errors)
    assert os.path.islink(repo / "link.py")


def test_a_round_that_breaks_the_file_keeps_its_other_fixes_and_is_reported(tmp_path, monkeypatch):
    from auditor.checks import cuda_synchronize
    from auditor.fix.plan import FixPlan

    (tmp_path / "a.py").write_text(SYNC + "from torch.cuda.amp import GradScaler\ns = GradScaler()\n", encoding="utf-8")

    def broken(self, report, rewriter):
        return FixPlan("safe", "breaks", [rewriter.replace(report.node, "torch.accelerator.synchronize(")])

    monkeypatch.setattr(cuda_synchronize.CudaSynchronize, "fix", broken)
    (tmp_path / "b.py").write_text(SYNC, encoding="utf-8")
    run = run_fix(tmp_path, unsafe=False)
    outcome, alone = run.files
    # the round's fixes are tried one by one: the GradScaler rewrite is kept, the broken one dropped
    message = outcome.error.message
    assert message.startswith("round 1: 1 of 2 fixes not applied (LK204 at 4:5)") and "does not parse" in message
    assert outcome.applied and all(rule != "LK204" for rule, _ in outcome.applied)
    assert (tmp_path / "a.py").read_text(encoding="utf-8") == SYNC + 's = torch.amp.GradScaler("cuda")\n'
    # a round whose only fix breaks the file is reverted whole
    assert "round 1 reverted" in alone.error.message and "does not parse" in alone.error.message
    assert (tmp_path / "b.py").read_text(encoding="utf-8") == SYNC


def test_a_result_that_parses_but_does_not_compile_is_reverted(tmp_path, monkeypatch):
    from auditor.checks import cuda_synchronize
    from auditor.fix.plan import FixPlan

    (tmp_path / "a.py").write_text(SYNC, encoding="utf-8")

    def no_compile(self, report, rewriter):  # `return` outside a function parses but does not compile
        statement = rewriter.lone_statement(report.node)
        return FixPlan("safe", "bad", [rewriter.insert_before(statement, "nonlocal q\n    ")])

    monkeypatch.setattr(cuda_synchronize.CudaSynchronize, "fix", no_compile)
    (outcome,) = run_fix(tmp_path, unsafe=False).files
    assert "does not compile" in outcome.error.message and not outcome.changed


def test_rounds_stop_at_the_limit(tmp_path, monkeypatch):
    from auditor.checks import cuda_synchronize
    from auditor.fix.plan import FixPlan

    (tmp_path / "a.py").write_text(SYNC, encoding="utf-8")

    def forever(self, report, rewriter):  # the call stays, so there is always one more fix
        return FixPlan("safe", "again", [rewriter.insert_after(rewriter.lone_statement(report.node), "\n    pass")])

    monkeypatch.setattr(cuda_synchronize.CudaSynchronize, "fix", forever)
    (outcome,) = run_fix(tmp_path, unsafe=False).files
    assert outcome.rounds == fixer.MAX_ROUNDS and "still fixable" in outcome.error.message


def test_dependency_files_keep_their_display_fixes_and_lose_stale_suppressions(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch==2.1.0+cu121\nnumpy  # lockin: ignore[LK504]\n", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"  # noqa: LK504\n', encoding="utf-8")
    run = run_fix(tmp_path)
    assert sorted(f.path for f in run.changed) == ["pyproject.toml", "requirements.txt"]
    assert (tmp_path / "requirements.txt").read_text(encoding="utf-8") == "torch==2.1.0+cu121\nnumpy\n"  # +cu121 stays
    assert (tmp_path / "pyproject.toml").read_text(encoding="utf-8") == '[project]\nname = "x"\n'
    assert not run_fix(tmp_path).changed


# -- the gate ------------------------------------------------------------------------------------------
def test_deselected_rules_still_hold_gated_fixes_back(tmp_path):
    (tmp_path / "a.py").write_text("import torch\nif torch.cuda.is_available():\n    model.cuda()\n", encoding="utf-8")
    result = scan([str(tmp_path)], Settings(select=["LK201"], cache=False, jobs=1, torch_version="2.13"))
    (finding,) = result.findings  # LK102 ran hidden: it is not reported
    assert finding.rule == "LK201" and finding.fix.applicability == "display"
    assert "LK102 at 3:11" in finding.fix.reason and "CUDA-clean" in finding.fix.reason


def test_context_policy_and_guarded_findings(monkeypatch):
    """A backend module keeps its unsafe fixes as suggestions; a guarded finding blocks by the rule's
    own effects (its guard may be the CUDA check being swapped); an optional one does not block."""
    from dataclasses import replace

    from auditor.checks.registry import full_catalogue, rule_by_code
    from auditor.fix.floor import TorchFloor
    from auditor.fix.plan import PlannedFix
    from auditor.fix.policy import finalize
    from auditor.model import Finding

    def finding(rule: str, line: int, context: str | None = None, degrades: bool = False) -> Finding:
        effects = {t: "degrades" for t in rule_by_code(rule).effects()} if degrades else rule_by_code(rule).effects()
        return Finding("a.py", line, 1, line, 5, rule, "n", "c", "major", "m", "s", effects, context=context)

    gated = Fix("unsafe", "swap", (Edit(1, 1, 1, 2, "x"),), "2.6")
    swap, sync = finding("LK201", 1), finding("LK204", 2, context="guarded", degrades=True)
    out = finalize([swap, sync], {id(swap): PlannedFix([(gated, True)])}, TorchFloor("2.13"), full_catalogue())
    assert out[0].fix.applicability == "display" and "LK204 at 2:1" in out[0].fix.reason
    optional = replace(sync, context="optional")
    out = finalize([swap, optional], {id(swap): PlannedFix([(gated, True)])}, TorchFloor("2.13"), full_catalogue())
    assert out[0].fix.applicability == "unsafe"
    backend = finding("LK201", 1, context="backend-module")
    out = finalize([backend], {id(backend): PlannedFix([(gated, True)])}, TorchFloor("2.13"), full_catalogue())
    assert out[0].fix.applicability == "display" and "backend-module" in out[0].fix.reason
    # Contexts combine (`test+backend-module`, `test+optional`, `test+guarded`): each part counts.
    backend = finding("LK201", 1, context="test+backend-module")
    out = finalize([backend], {id(backend): PlannedFix([(gated, True)])}, TorchFloor("2.13"), full_catalogue())
    assert out[0].fix.applicability == "display" and "test+backend-module" in out[0].fix.reason
    optional = replace(sync, context="test+optional")
    out = finalize([swap, optional], {id(swap): PlannedFix([(gated, True)])}, TorchFloor("2.13"), full_catalogue())
    assert out[0].fix.applicability == "unsafe"


@pytest.mark.parametrize("jobs", [1, 2])
def test_parallel_scan_carries_the_floor_to_its_workers(tmp_path, monkeypatch, jobs):
    from auditor.pipeline import parallel

    for name in ("SERIAL_BYTES", "SERIAL_FILES"):
        monkeypatch.setattr(parallel, name, 0)
    monkeypatch.setattr(parallel, "CHUNK_MAX_FILES", 1)
    monkeypatch.delenv("PRE_COMMIT", raising=False)
    for index in range(4):
        (tmp_path / f"m{index}.py").write_text(SYNC, encoding="utf-8")
    result = scan([str(tmp_path)], Settings(cache=False, jobs=jobs, torch_version="2.5"))
    assert len(result.findings) == 4 and not result.warnings
    assert all(f.fix.reason and "torch 2.5 (from --torch-version)" in f.fix.reason for f in result.findings)


def test_a_bug_while_fixing_one_file_does_not_stop_the_others(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text(SYNC, encoding="utf-8")
    (tmp_path / "b.py").write_text(SYNC, encoding="utf-8")
    real = fixer.fix_file

    def flaky(runtime, source, *rest):
        if source.display == "a.py":
            raise KeyError("boom")
        return real(runtime, source, *rest)

    monkeypatch.setattr(fixer, "fix_file", flaky)
    run = run_fix(tmp_path)
    assert [f.path for f in run.changed] == ["b.py"] and "internal error (KeyError" in run.errors[0].message
    assert (tmp_path / "a.py").read_text(encoding="utf-8") == SYNC


# -- notebooks -------------------------------------------------------------------------------------------
def notebook(*cells: list[str], compact: bool = False) -> str:
    import json

    data = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": c}
                      for c in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    if compact:
        return json.dumps(data, separators=(",", ":"))
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def test_notebook_cells_are_fixed_in_place(tmp_path):
    path = tmp_path / "nb.ipynb"
    first = ["import torch\n", "x = 1  # ünïcode stays\n"]
    path.write_text(notebook(first, ["with torch.cuda.amp.autocast():\n", "    y = model(x)\n"]), encoding="utf-8")
    run = run_fix(tmp_path, unsafe=False)
    assert run.fixed_count == 1 and not run.errors
    expected = notebook(first, ['with torch.amp.autocast("cuda", dtype=torch.float16):\n', "    y = model(x)\n"])
    assert path.read_text(encoding="utf-8") == expected  # everything else byte for byte
    assert not run_fix(tmp_path).changed


def test_notebook_fixes_stay_in_their_cell(tmp_path):
    """A fix that would add `import torch` to another cell is left out; a `!nvidia-smi` line keeps the
    accelerator swaps back like a CUDA call would."""
    (tmp_path / "a.ipynb").write_text(notebook(["from torch.cuda.amp import autocast\n"], ["x = 1\n"],
                                               ["with autocast():\n", "    pass\n"]), encoding="utf-8")
    (tmp_path / "b.ipynb").write_text(notebook(["!nvidia-smi\n"], ["import torch\n", "torch.cuda.synchronize()\n"]),
                                      encoding="utf-8")
    result = scan([str(tmp_path)], Settings(cache=False, jobs=1, torch_version="2.13"))
    fixes = {(f.path, f.rule, f.cell): f.fix for f in result.findings}
    assert fixes[("a.ipynb", "LK209", 3)] is None  # its `import torch` would go into cell 2
    held = fixes[("b.ipynb", "LK204", 2)]
    assert held.applicability == "display" and "LK603 at cell 1:1:" in held.reason
    assert not run_fix(tmp_path).changed


def test_a_notebook_round_that_breaks_keeps_its_other_fixes(tmp_path, monkeypatch):
    from auditor.checks import cuda_synchronize
    from auditor.fix.plan import FixPlan

    def broken(self, report, rewriter):
        return FixPlan("safe", "breaks", [rewriter.replace(report.node, "torch.accelerator.synchronize(")])

    monkeypatch.setattr(cuda_synchronize.CudaSynchronize, "fix", broken)
    path = tmp_path / "nb.ipynb"
    amp = ["import torch\n", "with torch.cuda.amp.autocast():\n", "    y = 1\n"]
    path.write_text(notebook(amp, ["torch.cuda.synchronize()\n"]), encoding="utf-8")
    (outcome,) = run_fix(tmp_path, unsafe=False).files
    assert outcome.error.message.startswith("round 1: 1 of 2 fixes not applied (LK204 at 1:1 (cell 2))"), outcome.error
    fixed = ["import torch\n", 'with torch.amp.autocast("cuda", dtype=torch.float16):\n', "    y = 1\n"]
    assert path.read_text(encoding="utf-8") == notebook(fixed, ["torch.cuda.synchronize()\n"])


def test_a_notebook_in_another_json_layout_is_not_rewritten(tmp_path):
    path = tmp_path / "nb.ipynb"
    text = notebook(["import torch\n", "s = torch.cuda.amp.GradScaler()\n"], compact=True)
    path.write_text(text, encoding="utf-8")
    (outcome,) = run_fix(tmp_path).files
    assert "JSON layout" in outcome.error.message and path.read_text(encoding="utf-8") == text


def test_swaps_that_do_not_apply_say_why(scan_source):
    """Issue 19: every suggestion that is not applied says why (a lambda, unpacked arguments, a
    `torch.cuda.device(...)` outside a `with`)."""
    src = ("import torch\n"
           "free = lambda: torch.cuda.empty_cache()\n"
           "torch.cuda.synchronize(*devices)\n"
           "ctx = torch.cuda.device(1)\n")
    result = scan_source({"a.py": src}, cache=False, jobs=1, torch_version="2.13")
    reasons = {f.line: f.fix.reason for f in result.findings if f.fix is not None and f.fix.applicability == "display"}
    assert "not a statement of its own" in reasons[2]
    assert "unpacked arguments" in reasons[3]
    assert "`with` statement" in reasons[4]


@pytest.mark.parametrize("patch", ["torch.cuda.is_available = lambda: False",
                                   'setattr(torch.cuda, "is_available", lambda: False)',
                                   'monkeypatch.setattr("torch.cuda.is_available", lambda: False)'])
def test_a_monkeypatched_cuda_api_is_not_swapped(tmp_path, patch):
    """Issue 19, pattern 5: the file replaces the CUDA function; the accelerator call would bypass
    the replacement (and the patch itself must not move to torch.accelerator)."""
    src = f"import torch\n\n{patch}\nuse = torch.cuda.is_available()\n"
    (tmp_path / "a.py").write_text(src, encoding="utf-8")
    run_fix(tmp_path)
    assert (tmp_path / "a.py").read_text(encoding="utf-8") == src
    (tmp_path / "b.py").write_text("import torch\nuse = torch.cuda.is_available()\n", encoding="utf-8")
    run_fix(tmp_path)
    assert "torch.accelerator.is_available()" in (tmp_path / "b.py").read_text(encoding="utf-8")
