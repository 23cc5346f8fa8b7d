"""No code from the scanned checkout runs, whichever process imports it.

CI runs `audit` with the untrusted checkout as the working directory. CPython puts the working
directory first on sys.path for `-c` and `-m`, and the pool's forkserver and resource tracker are
started as `python -c "from multiprocessing..."`: a checkout's `multiprocessing/` or `libcst/` ran
in them (issue 20, D1). Here every module any of our processes imports (the main process, the
forkserver, its workers, the resource tracker and the isolated children, measured, not listed by
hand) is shadowed in the working directory by a package that leaves a marker and then breaks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.pipeline.parallel import LARGE_FILE_BYTES, Task

ROOT = Path(__file__).resolve().parent.parent
SYNC = "import torch\ntorch.cuda.synchronize()\n"

# Imports every module a child could need: a serial scan of every file kind (the rules, readers
# and their parsers load lazily), the pool's child entry points and the isolated-child machinery.
_IMPORTED = """
import sys
from auditor.cli import main
import multiprocessing.forkserver, multiprocessing.resource_tracker, multiprocessing.spawn
import concurrent.futures.process, auditor._forkserver_init, auditor.sandbox.isolate, auditor.pipeline.parallel
for fmt in ("json", "text", "sarif", "markdown", "github", "junit", "gitlab"):
    main([sys.argv[1], "--no-cache", "--jobs", "1", "--format", fmt, "-o", sys.argv[2]])
print("\\n".join(sorted({name.partition(".")[0] for name in sys.modules})))
"""


def imported_top_level_modules(sample: Path) -> list[str]:
    proc = subprocess.run([sys.executable, "-I", "-c", _IMPORTED, str(sample), str(sample.parent / "report.json")],
                          capture_output=True, text=True, timeout=300, cwd=sample)
    assert proc.returncode == 0, proc.stderr
    return [name for name in proc.stdout.split() if name.isidentifier() and name != "__main__"]


def imported_by_python_m(folder: Path) -> list[str]:
    (folder / "probe_modules.py").write_text("import sys\nprint('\\n'.join(sorted(sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-m", "probe_modules"], capture_output=True, text=True, cwd=folder,
                          timeout=60)
    return [name.partition(".")[0] for name in proc.stdout.split() if name != "probe_modules"]


def hostile_checkout(root: Path, names: list[str], marker_dir: Path, big: bool = True) -> Path:
    """A checkout that shadows each module: importing one writes marker_dir/NAME, then fails."""
    for name in names:
        package = root / name
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text(
            f"open({str(marker_dir / name)!r}, 'w').close()\nraise ImportError('shadowed {name} imported')\n")
    src = root / "src"
    src.mkdir(parents=True)
    # One file over LARGE_FILE_BYTES: the pool forks its workers from a forkserver (and starts a
    # resource tracker); the others give the pool several chunks.
    (src / "big.py").write_text(SYNC + "# padding, no syntax units\n" * (LARGE_FILE_BYTES // 26 + 1 if big else 1))
    for i in range(4):
        (src / f"f{i}.py").write_text(SYNC + "x = a.b(c)\n" * (3000 if big else 10))
    # CPython 3.11 cannot parse it and the guard flags it: libcst parses it in an isolated child
    (src / "newer.py").write_text("import torch\ntype Vector = list[float]\ntorch.cuda.synchronize()\n" + "x = -1\n" * 900)
    for name, text in {"requirements.txt": "cupy-cuda12x\n", "Dockerfile": "FROM nvidia/cuda:12.1.0-base\n",
                       "conf/train.yaml": "device: cuda\n", "pyproject.toml": "[project]\nname = 'x'\n"}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_big_file_takes_the_forkserver_path():
    """The reproduction needs the forkserver: a file over LARGE_FILE_BYTES in a run big enough for a pool."""
    from auditor.discover.files import SourceFile
    from auditor.pipeline.parallel import _context

    tasks: list[Task] = [(0, SourceFile("/x/big.py", "big.py", "python"), LARGE_FILE_BYTES, None),
                         (1, SourceFile("/x/a.py", "a.py", "python"), 60_000, None)]
    assert _context(tasks).get_start_method() == "forkserver"


def _command(how: str) -> list[str]:
    if how == "console":  # the installed `audit` script: what CI runs
        script = Path(sys.executable).with_name("audit")
        if not script.exists():
            pytest.skip("no installed `audit` script beside this interpreter")
        return [str(script)]
    return [sys.executable, "-m", "auditor"]


@pytest.mark.parametrize("how", ["console", "module"])
def test_no_module_of_the_checkout_runs_in_any_process(tmp_path, how):
    sample = tmp_path / "sample"
    sample.mkdir()
    hostile_checkout(sample, [], tmp_path, big=False)
    names = imported_top_level_modules(sample)
    assert {"multiprocessing", "libcst", "auditor", "typer", "rich"} <= set(names)
    if how == "module":  # what Python imports for `-m` before our code runs (README: use -I or `audit`)
        names = sorted(set(names) - set(imported_by_python_m(tmp_path)) - {"auditor"})
    markers = tmp_path / "markers"
    markers.mkdir()
    repo = hostile_checkout(tmp_path / "repo", names, markers)
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([*_command(how), "src", "--no-cache", "--jobs", "2", "--format", "json"], cwd=repo,
                          env=env, capture_output=True, text=True, timeout=300)
    assert sorted(p.name for p in markers.iterdir()) == [], "a module of the checkout ran"
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["warnings"] == [] and proc.stderr == ""
    assert {(f["path"], f["rule"]) for f in report["findings"]} >= {("src/big.py", "LK204"), ("src/f0.py", "LK204"),
                                                                   ("src/newer.py", "LK204")}


def test_child_interpreters_get_isolated_mode_whatever_this_process_has():
    from multiprocessing import util

    from auditor.sandbox.interpreter import isolate_child_interpreters, isolated_flags

    assert isolated_flags(["-B", "-E", "-s", "-W", "error"]) == ["-B", "-W", "error", "-I"]
    isolate_child_interpreters()
    isolate_child_interpreters()  # idempotent: wrapped once
    flags = util._args_from_interpreter_flags()
    assert flags.count("-I") == 1 and flags[-1] == "-I"


def test_trusted_path_drops_what_the_working_directory_controls(tmp_path):
    from auditor.sandbox.interpreter import trusted_path

    own = str(ROOT)
    path = ["", ".", "src", str(tmp_path), str(tmp_path / "lib"), own, "/usr/lib/python3.11"]
    assert trusted_path(path, cwd=str(tmp_path)) == [str(tmp_path / "lib"), own, "/usr/lib/python3.11"]
    assert own in trusted_path([own], cwd=own)  # the auditor's own code already runs: it stays


def test_a_pool_server_that_dies_starting_finishes_in_one_process(tmp_path, monkeypatch, capsys):
    """D29: a forkserver that died at start-up gave EOFError, which click reports as Ctrl-C:
    "audit: interrupted", exit 130, no report. It is a pool failure: the run finishes here."""
    import multiprocessing.forkserver

    from auditor.cli import main

    def dead_server(*args, **kwargs):
        raise EOFError("unexpected EOF")  # what reading from a server that exited gives

    monkeypatch.setattr(multiprocessing.forkserver, "connect_to_new_process", dead_server)
    monkeypatch.delenv("PRE_COMMIT", raising=False)
    repo = hostile_checkout(tmp_path / "repo", [], tmp_path)
    monkeypatch.chdir(repo)
    assert main(["src", "--no-cache", "--jobs", "2", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert any("parallel checking failed (EOFError" in w for w in report["warnings"]), report["warnings"]
    assert {f["path"] for f in report["findings"]} >= {"src/big.py", "src/f0.py"}
    assert "interrupted" not in err


def test_an_end_of_data_anywhere_is_an_internal_error_not_an_interrupt(tmp_path, monkeypatch, capsys):
    from auditor import run
    from auditor.cli import main

    def broken(*args, **kwargs):
        raise EOFError("Ran out of input")

    monkeypatch.setattr(run, "execute", broken)
    (tmp_path / "a.py").write_text(SYNC)
    assert main([str(tmp_path), "--no-cache"]) == 2
    _, err = capsys.readouterr()
    assert err.count("\n") == 1 and "internal error" in err and "interrupted" not in err
