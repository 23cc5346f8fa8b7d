"""A scanned repository is untrusted: whatever it holds, `audit` never crashes, hangs, exhausts
memory, reads outside it, leaks processes or writes outside its own cache folder.

Every hostile input is generated here, in temporary folders (a committed copy would break other
tools). Time budgets are ratios to an ordinary input of the same size, never absolute times."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from auditor.config.settings import Settings
from auditor.pipeline.scan import scan

ROOT = Path(__file__).resolve().parent.parent
SYNC = "import torch\ntorch.cuda.synchronize()\n"  # LK204 on line 2


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def run_scan(root: Path, **options) -> object:
    options.setdefault("cache", False)
    options.setdefault("jobs", 1)
    return scan([str(root)], Settings(**options))


def findings_of(result, path: str) -> list[tuple[int, str]]:
    return [(f.line, f.rule) for f in result.findings if f.path == path]


def errors_of(result) -> dict[str, tuple[str, str]]:
    return {e.path: (e.kind, e.message) for e in result.errors}


def audit(*args: str, cwd: Path, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "auditor", *args], cwd=cwd, env=full_env, capture_output=True,
                          timeout=300, **kwargs)


def ratio(worst, normal, repeat: int = 3, attempts: int = 2) -> float:
    """Best-of time of `worst` over best-of time of `normal`; measured again (up to `attempts`
    times) while it looks too large, the smallest kept: a pause of the machine (another job, a
    collection) slows one measurement, a super-linear cost slows every one."""
    def best(function) -> float:
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            function()
            times.append(time.perf_counter() - start)
        return max(min(times), 1e-4)

    found = best(worst) / best(normal)
    for _ in range(attempts - 1):
        if found < 2.5:  # below every bound the tests use (3 and up): nothing to measure again
            break
        found = min(found, best(worst) / best(normal))
    return found


def test_setup_cfg_line_of_blanks_is_linear():
    """configparser's option regex backtracked quadratically on a long line of blanks (10 s for
    3,000); the line parser reads it in the time of an ordinary file of the same size."""
    from auditor.readers.setup_cfg import parse_ini

    blanks = "[options]\ninstall_requires =\n    torch\n" + ("x" + " " * 20_000 + "y\n") * 5
    normal = "[options]\ninstall_requires =\n    torch\n" + ("    pkg" + "x" * 19_995 + "\n") * 5
    assert ratio(lambda: parse_ini(blanks), lambda: parse_ini(normal)) < 20


def chain(shape: str, n: int) -> str:
    body = {
        "and": "y = (" + " and\n".join(["a"] * n) + ")\n",
        "or": "y = (" + " or\n".join(["a"] * n) + ")\n",
        "elif": "if a:\n    pass\n" + "".join(f"elif a{i}:\n    pass\n" for i in range(n)),
        "strings": "y = (" + "\n".join(['"a"'] * n) + ")\n",
        "lambda": "f = " + "lambda: " * n + "1\n",
        "not": "y = " + "not " * n + "a\n",
        "ternary": "y = (" + " if c else\n".join(["a"] * n) + ")\n",
        "subscripts": "y = a" + "[0]" * n + "\n",
        "calls": "y = a" + ".b()" * n + "\n",
    }[shape]
    return SYNC + body


# -- crashes and blow-ups -------------------------------------------------------------------------

def test_long_valid_chains_are_checked_not_crashed(tmp_path):
    """`and`/`or` chains of 7,500 terms overflowed libcst's stack (a segfault killing the run);
    600 `elif`, 500 adjacent strings, a 3,000-term `and` were "too deeply nested to check". All
    compile in CPython, so all are checked now, on the large-stack thread."""
    files = {f"{shape}_{n}.py": chain(shape, n)
             for shape, n in [("and", 7500), ("or", 7500), ("and", 3000), ("elif", 600), ("strings", 500)]}
    result = run_scan(write(tmp_path, files))
    assert result.errors == []
    for name in files:
        assert findings_of(result, name) == [(2, "LK204")], name


def test_chains_cpython_refuses_or_that_would_take_minutes_are_error_entries(tmp_path):
    """10,000 `x if c else` terms took 8 GB and aborted; lambda/not chains blow up too. CPython
    refuses them; a subscript chain it accepts would cost libcst tens of seconds. Each is one
    `parse` error, quickly, and the other files keep their findings."""
    files = {"lambda.py": chain("lambda", 5000), "ternary.py": chain("ternary", 10_000),
             "not.py": chain("not", 5000), "subscripts.py": chain("subscripts", 2000), "good.py": SYNC}
    start = time.perf_counter()
    result = run_scan(write(tmp_path, files))
    assert time.perf_counter() - start < 60
    errors = errors_of(result)
    assert set(errors) == {"lambda.py", "ternary.py", "not.py", "subscripts.py"}
    assert all(kind == "parse" and "not scanned" in message for kind, message in errors.values())
    assert "4000 deep" in errors["subscripts.py"][1]
    assert findings_of(result, "good.py") == [(2, "LK204")]


def test_the_crash_case_through_a_real_process(tmp_path):
    """The issue's exact case: exit 139 and no report before; now a report with the finding."""
    write(tmp_path, {"chain.py": chain("and", 7500), "other.py": "import torch\nm.cuda()\n"})
    proc = audit(".", "--format", "json", "--no-cache", cwd=tmp_path, text=True)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert {(f["path"], f["rule"]) for f in report["findings"]} == {("chain.py", "LK204"), ("other.py", "LK102")}


def test_memory_is_bounded_by_syntax_units(tmp_path):
    """A 9 MB file under the size limit took 40 s and 3 GB: the guard counts syntax units (what
    libcst allocates nodes for) and refuses files over MAX_PARSE_UNITS before parsing."""
    from auditor.sandbox.parse_guard import MAX_PARSE_UNITS

    lines = MAX_PARSE_UNITS // 5 + 100  # `x = a.b(c)`: = . ( ) and the line end, 5 units a line
    files = {"huge.py": SYNC + "x = a.b(c)\n" * lines, "fine.py": SYNC + "x = a.b(c)\n" * (lines // 4)}
    result = run_scan(write(tmp_path, files))
    kind, message = errors_of(result)["huge.py"]
    assert kind == "too-large" and "syntax units" in message
    assert findings_of(result, "fine.py") == [(2, "LK204")]


def test_guard_costs_little_and_flags_few_ordinary_files():
    """The screen sends a file to CPython's parse only when its counts allow a deep chain: none
    of the demo repository's files, and none of a large ordinary module."""
    from auditor.sandbox.parse_guard import _Counts

    demo = sorted((ROOT / "fixtures" / "demo-repo").rglob("*.py"))
    assert demo and all(_Counts(path.read_bytes()).screen() is None for path in demo)
    ordinary = ("def f(self, x):\n    return self.layer.norm(x) + self.bias * 2 - y[0]\n" * 1500).encode()
    assert _Counts(ordinary).screen() is not None  # 3,000 `+`/`-`: could be one chain
    assert _Counts(ordinary.replace(b"+", b",").replace(b"- ", b", ")).screen() is None


def test_newer_grammar_in_a_flagged_file_is_parsed_in_isolation(tmp_path):
    """A file CPython 3.11 cannot parse (PEP 695) but the screen flags: libcst parses it in an
    isolated child with memory and time limits, and its findings count."""
    source = "import torch\ntype Vector = list[float]\ntorch.cuda.synchronize()\n" + "x = -1\n" * 900
    result = run_scan(write(tmp_path, {"new.py": source}))
    if sys.version_info >= (3, 12):
        pytest.skip("this interpreter parses PEP 695 itself")
    assert result.errors == [] and findings_of(result, "new.py") == [(3, "LK204")]


def test_a_broken_file_with_a_huge_statement_is_refused_without_parsing(tmp_path):
    """The fuzz found it: a file CPython rejects (an unclosed bracket) and that holds a chain of
    7,500 calls went to libcst in isolation and used the whole deadline. Python's tokenizer shows
    the statement is too long: a `parse` error at once, with CPython's reason."""
    source = SYNC + "x = foo(\ny = a" + ".b()" * 7500 + "\n"
    start = time.perf_counter()
    result = run_scan(write(tmp_path, {"broken.py": source}))
    assert time.perf_counter() - start < 20
    kind, message = errors_of(result)["broken.py"]
    assert kind == "parse" and "never closed" in message and "too many to parse safely" in message


def test_isolated_child_reports_crash_memory_and_deadline():
    from auditor.sandbox.isolate import IsolationFailure, run_isolated

    assert run_isolated(sum, [1, 2, 3], timeout=30) == 6
    with pytest.raises(IsolationFailure) as crash:
        run_isolated(lambda: os.kill(os.getpid(), signal.SIGSEGV), timeout=30)  # getpid() in the child
    assert crash.value.kind == "crash" and "SIGSEGV" in crash.value.message
    with pytest.raises(IsolationFailure) as memory:
        run_isolated(bytearray, 3 * 1024**3, timeout=30, memory_bytes=256 * 1024**2)
    assert memory.value.kind == "crash" and "memory" in memory.value.message
    with pytest.raises(IsolationFailure) as slow:
        run_isolated(time.sleep, 30, timeout=1)
    assert slow.value.kind == "timeout"


def test_a_file_that_kills_a_worker_is_isolated_never_rerun_here(tmp_path, monkeypatch):
    """A worker dies on one file: that file is checked again in an isolated child (where it dies
    again and becomes a `crash` entry), the other files still report, and this process, which
    would die too, never checks it."""
    from auditor.pipeline import parallel, runtime

    for name, value in (("SERIAL_BYTES", 0), ("SERIAL_FILES", 0), ("CHUNK_MAX_FILES", 1)):
        monkeypatch.setattr(parallel, name, value)
    monkeypatch.setattr(parallel, "available_cores", lambda: 2)
    monkeypatch.delenv("PRE_COMMIT", raising=False)
    here = os.getpid()
    original = runtime.Runtime.check_with_digest

    def check(self, source, hashing, expected=None):
        if source.display == "killer.py":
            assert os.getpid() != here, "the file that killed a worker was checked in the main process"
            import faulthandler

            faulthandler.disable()  # pytest's handler would print the dying worker's stack
            os.kill(os.getpid(), signal.SIGSEGV)
        return original(self, source, hashing, expected)

    monkeypatch.setattr(runtime.Runtime, "check_with_digest", check)  # workers are forked: they inherit it
    files = {"killer.py": SYNC, **{f"ok{i}.py": SYNC for i in range(6)}}
    result = run_scan(write(tmp_path, files), jobs=2)
    kind, message = errors_of(result)["killer.py"]
    assert kind == "crash" and "SIGSEGV" in message
    assert all(findings_of(result, f"ok{i}.py") == [(2, "LK204")] for i in range(6))
    assert any("worker process died" in w for w in result.warnings)


# -- special files and includes ---------------------------------------------------------------------

def test_fifos_devices_and_links_out_are_error_entries(tmp_path):
    """A FIFO named x.py hung the run forever; a .py link to /dev/zero read as clean."""
    write(tmp_path, {"good.py": SYNC, "secret/outside.py": SYNC})
    repo = tmp_path / "repo"
    write(repo, {"good.py": SYNC})
    os.mkfifo(repo / "fifo.py")
    (repo / "zero.py").symlink_to("/dev/zero")
    (repo / "out.py").symlink_to(tmp_path / "secret" / "outside.py")
    (repo / "inside.py").symlink_to(repo / "good.py")
    result = run_scan(repo)
    errors = errors_of(result)
    assert errors["fifo.py"][0] == "read" and "named pipe" in errors["fifo.py"][1]
    assert "outside the scanned folder" in errors["zero.py"][1]
    assert "outside the scanned folder" in errors["out.py"][1]
    assert {f.path for f in result.findings} == {"good.py", "inside.py"}


def test_ignore_files_that_are_pipes_or_links_are_not_read(tmp_path):
    """Discovery reads .gitignore files too: a FIFO one would hang the walk, one linked to
    /dev/zero would grow without end. As git does, links are not followed."""
    repo = write(tmp_path / "repo", {"a.py": SYNC, "sub/b.py": SYNC, ".git/info/.keep": ""})
    os.mkfifo(repo / ".gitignore")
    os.mkfifo(repo / ".git" / "info" / "exclude")
    (repo / "sub" / ".gitignore").symlink_to("/dev/zero")
    result = run_scan(repo)
    assert {f.path for f in result.findings} == {"a.py", "sub/b.py"}


def test_project_files_read_for_context_are_never_followed_or_waited_on(tmp_path):
    """What the project says about its files (its name in pyproject.toml, the CUDAExtension names
    in setup.py: auditor/analysis/project.py) is read from regular files only: a FIFO pyproject
    would hang every file's context, a setup.py linked out would be read outside the tree."""
    write(tmp_path, {"setup.py": "CUDAExtension('secret_ext', ['k.cu'])\n"})
    repo = write(tmp_path / "repo", {"a.py": SYNC, "pkg/__init__.py": "", "pkg/b.py": "import secret_ext\n"})
    os.mkfifo(repo / "pyproject.toml")
    (repo / "setup.py").symlink_to(tmp_path / "setup.py")
    result = run_scan(repo)
    assert findings_of(result, "a.py") == [(2, "LK204")]
    assert not findings_of(result, "pkg/b.py")  # the linked-out setup.py named no extension of this project


def test_includes_never_leave_the_scanned_folder(tmp_path):
    """`-r ../secrets.conf` and `-r /etc/...` were read and a line of their text landed in a
    snippet; now the include line is an `include` error and nothing outside is read."""
    write(tmp_path, {"secrets.conf": "nvidia-cudnn-cu12  # password=hunter2\n"})
    repo = write(tmp_path / "repo", {"requirements.txt": "-r ../secrets.conf\n-c /etc/hostname\n-r sub/more.in\ntorch\n",
                                     "sub/more.in": "cupy-cuda12x\n"})
    os.mkfifo(repo / "sub" / "pipe.in")
    (repo / "sub" / "more.in").write_text("cupy-cuda12x\n-r pipe.in\n-r /dev/zero\n")
    result = run_scan(repo, select=["LK5"])
    dump = json.dumps([f.to_dict() for f in result.findings] + [e.to_dict() for e in result.errors])
    assert "hunter2" not in dump and "password" not in dump and "cudnn" not in dump
    include_errors = sorted(e.message for e in result.errors if e.kind == "include")
    assert include_errors == [
        "line 1: include '../secrets.conf' points outside the scanned folder; not read",
        "line 2: include '/etc/hostname' points outside the scanned folder; not read",
        "line 3: include '/dev/zero' points outside the scanned folder; not read",
    ]
    assert errors_of(result)["sub/pipe.in"][0] == "read"
    assert [(f.path, f.rule) for f in result.findings] == [("sub/more.in", "LK504")]


def test_conda_pip_includes_stay_inside_the_scanned_folder(tmp_path):
    write(tmp_path, {"secrets.txt": "nvidia-cudnn-cu12  # token=hunter2\n"})
    repo = write(tmp_path / "repo", {
        "env/environment.yml": "dependencies:\n  - pip:\n    - -r ../reqs/base.in\n    - -r ../../secrets.txt\n",
        "reqs/base.in": "cupy-cuda12x\n"})
    result = run_scan(repo, select=["LK5"])
    dump = json.dumps([f.to_dict() for f in result.findings] + [e.to_dict() for e in result.errors])
    assert "hunter2" not in dump and "cudnn" not in dump
    assert any(e.kind == "include" and "../../secrets.txt" in e.message for e in result.errors)
    assert ("reqs/base.in", "LK504") in {(f.path, f.rule) for f in result.findings}


# -- writes outside the tree ---------------------------------------------------------------------------

def test_a_symlinked_cache_folder_is_never_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "results-0123456789abcdef01234567.bin").write_text("not ours")
    repo = write(tmp_path / "repo", {"a.py": SYNC, ".git/HEAD": "x"})
    (repo / ".lockin_auditor_cache").symlink_to(elsewhere, target_is_directory=True)
    result = run_scan(repo, cache=True)
    assert findings_of(result, "a.py") == [(2, "LK204")]
    assert any("symbolic link" in w for w in result.warnings)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["results-0123456789abcdef01234567.bin"]


def test_links_planted_inside_the_cache_write_nothing_where_they_point(tmp_path):
    from auditor.cache.folder import CACHEDIR_TAG

    target = tmp_path / "target"
    target.mkdir()
    repo = write(tmp_path / "repo", {"a.py": SYNC, ".git/HEAD": "x"})
    cache = repo / ".lockin_auditor_cache"
    cache.mkdir()
    (cache / "CACHEDIR.TAG").write_text(CACHEDIR_TAG)
    run_scan(repo, cache=True)
    (result_file,) = cache.glob("results-*.bin")
    result_file.unlink()
    result_file.symlink_to(target / "planted.bin")  # dangling: writing through it would create it
    (cache / ".gitignore").symlink_to(target / "gitignore")
    (repo / "a.py").write_text(SYNC + "m.cuda()\n")
    again = run_scan(repo, cache=True)
    assert len(again.findings) == 2
    assert list(target.iterdir()) == []
    assert result_file.is_file() and not result_file.is_symlink()  # replaced by a real file


def test_cache_dir_that_is_not_ours_is_refused(tmp_path, capsys, monkeypatch):
    """`--cache-dir ""` or `.` turned the project into a cache: a catch-all .gitignore hid every
    new file from git and later runs read 0 files."""
    from auditor.cli import main

    repo = write(tmp_path, {"a.py": SYNC, "README.md": "hello\n"})
    monkeypatch.chdir(repo)
    for value in ("", ".", str(repo)):
        assert main([".", "--cache-dir", value]) == 2
        _, err = capsys.readouterr()
        assert err.count("\n") == 1 and "--cache-dir" in err and "other files" in err
    assert sorted(p.name for p in repo.iterdir()) == ["README.md", "a.py"]


def test_an_empty_folder_is_adopted_without_a_catch_all_gitignore(tmp_path):
    repo = write(tmp_path / "repo", {"a.py": SYNC})
    empty = tmp_path / "empty"
    empty.mkdir()
    run_scan(repo, cache=True, cache_dir=str(empty))
    assert (empty / "CACHEDIR.TAG").is_file() and not (empty / ".gitignore").exists()
    fresh = tmp_path / "fresh"
    run_scan(repo, cache=True, cache_dir=str(fresh))
    assert (fresh / ".gitignore").read_text().strip().endswith("*")  # created here: ignored whole


def test_pruning_removes_only_the_results_files_it_wrote(tmp_path, monkeypatch):
    from auditor.cache import folder as cache_module

    monkeypatch.setattr(cache_module, "MAX_CACHE_FILES", 1)
    repo = write(tmp_path / "repo", {"a.py": SYNC})
    folder = tmp_path / "cache"
    run_scan(repo, cache=True, cache_dir=str(folder))
    keep = {"results-notes.txt", "results-1.bin", "results-0123456789ABCDEF01234567.bin"}
    for name in keep:
        (folder / name).write_text("someone else's")
    (folder / "results-aaaaaaaaaaaaaaaaaaaaaaaa.bin").mkdir()  # our name, but a folder: not ours
    run_scan(repo, cache=True, cache_dir=str(folder), select=["LK204"])  # a second settings key
    names = {p.name for p in folder.iterdir()}
    assert keep <= names and (folder / "results-aaaaaaaaaaaaaaaaaaaaaaaa.bin").is_dir()
    ours = [p for p in folder.glob("results-*.bin") if p.is_file() and p.name not in keep]
    assert len(ours) == 1  # MAX_CACHE_FILES: the older of the two settings keys was pruned


def test_a_gate_over_zero_files_fails(tmp_path, capsys):
    from auditor.cli import main

    (tmp_path / "notes.md").write_text("nothing to read\n")
    assert main([str(tmp_path), "--fail-under", "99", "--no-cache"]) == 1
    _, err = capsys.readouterr()
    assert "no file was audited" in err
    assert main([str(tmp_path), "--no-cache"]) == 0  # without a gate, an empty tree is fine


def test_checkout_dist_info_and_modules_are_never_loaded(tmp_path):
    """`python -m auditor` inside a checkout loaded the checkout's *.dist-info entry points and a
    `typer.py` there shadowed the real one: both ran the repository's code."""
    marker = tmp_path / "pwned"
    payload = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
    repo = write(tmp_path / "repo", {
        "typer.py": payload, "evil_rules.py": payload, "train.py": SYNC,
        "evil-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n",
        "evil-1.0.dist-info/entry_points.txt": "[lockin_auditor.rules]\nevil = evil_rules\n",
    })
    for args in (["-m", "auditor", ".", "--no-cache"], ["-m", "auditor", "rules"]):
        proc = subprocess.run([sys.executable, *args], cwd=repo, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert proc.returncode == 0, proc.stderr
        assert not marker.exists(), args
    from auditor.checks.registry import plugin_search_path

    assert "" not in plugin_search_path() and os.getcwd() not in plugin_search_path()


# -- slow paths: every reader is linear ---------------------------------------------------------------

def test_toml_header_scan_is_linear():
    """`[` and 5,000 blanks inside a multi-line string took 42 s of regex backtracking."""
    from auditor.readers.locate import Locator

    worst = '[project]\nname = "x"\ndescription = """\n' + ("[" + " " * 20_000 + "\n") * 5 + '"""\n'
    normal = '[project]\nname = "x"\ndescription = """\n' + ("x" * 20_001 + "\n") * 5 + '"""\n'
    assert ratio(lambda: Locator(worst), lambda: Locator(normal)) < 20


def _read_pyproject(text: str):
    from auditor.catalogue import load_catalogue
    from auditor.context import FileContext
    from auditor.readers.pyproject import read_pyproject

    return read_pyproject(FileContext("pyproject.toml", text, load_catalogue(), "pyproject"))


def test_pyproject_with_identical_or_many_entries_is_linear():
    """20,000 identical entries took 32 s and 200,000 dependencies 108 s (each value searched
    from the start of its table)."""
    same = "[project]\nname = 'x'\ndependencies = [\n" + '  "torch>=2.0",\n' * 4000 + "]\n"
    distinct = "[project]\nname = 'x'\ndependencies = [\n" + "".join(f'  "p{i:06d}>=2",\n' for i in range(4000)) + "]\n"
    assert len(_read_pyproject(same).requirements) == 4000
    assert ratio(lambda: _read_pyproject(same), lambda: _read_pyproject(distinct)) < 5
    half = "[project]\nname = 'x'\ndependencies = [\n" + "".join(f'  "p{i:06d}>=2",\n' for i in range(2000)) + "]\n"
    assert ratio(lambda: _read_pyproject(distinct), lambda: _read_pyproject(half)) < 4  # twice the input


def test_deeply_nested_data_files_are_parse_errors(tmp_path):
    """tomllib, json and the YAML reader recurse once per level: a RecursionError was an
    `internal` error; it is a `parse` error of that file."""
    deep_toml = "x = " + "[" * 5000 + "]" * 5000 + "\n"
    files = {"pyproject.toml": deep_toml, "configs/train.toml": "[tool]\ndevice = 'cuda'\n" + deep_toml,
             "ds_config.json": "[" * 50_000 + "]" * 50_000, "good.py": SYNC}
    result = run_scan(write(tmp_path, files))
    kinds = {path: kind for path, (kind, _) in errors_of(result).items()}
    assert kinds.get("pyproject.toml") == "parse" and "internal" not in kinds.values(), kinds
    assert findings_of(result, "good.py") == [(2, "LK204")]


def test_deeply_nested_configuration_is_a_configuration_error(tmp_path, capsys):
    from auditor.cli import main

    write(tmp_path, {"lockin-auditor.toml": "x = " + "[" * 5000 + "]" * 5000 + "\n", "a.py": SYNC})
    assert main([str(tmp_path), "--no-cache"]) == 2
    _, err = capsys.readouterr()
    assert "nested too deeply" in err and "internal" not in err


def test_cuda_comment_stripping_is_linear():
    """40,000 unterminated `/*` took 32 s."""
    from auditor.checks.cuda_source_file import strip_comments

    normal = "float x = a[i] * 2;  // scale \"it\"\n" * 2000  # comments and literals, as kernels have
    worst = ("/*" * len(normal))[:len(normal)]
    assert ratio(lambda: strip_comments(worst), lambda: strip_comments(normal)) < 40
    assert ratio(lambda: strip_comments(worst * 2), lambda: strip_comments(worst)) < 3  # linear
    quotes = ('"\\' * len(normal))[:len(normal)]
    assert ratio(lambda: strip_comments(quotes), lambda: strip_comments(normal)) < 40
    assert strip_comments("a /* b\nc") == "a \n"


def test_requirements_reader_is_linear(tmp_path):
    from auditor.catalogue import load_catalogue
    from auditor.context import FileContext
    from auditor.readers.requirements import read_requirements

    def read(text: str) -> None:
        read_requirements(FileContext("requirements.txt", text, load_catalogue(), "requirements"))

    worst = "torch\n" * 600
    normal = "".join(f"pk{i:03d}\n" for i in range(600))
    assert ratio(lambda: read(worst), lambda: read(normal), repeat=2) < 5


# -- lines, encodings and names --------------------------------------------------------------------------

def test_lone_cr_form_feed_and_line_separators_keep_lines_and_suppressions(tmp_path):
    files = {
        "cr.py": b"import torch  # lockin: ignore\rx = 1\rtorch.cuda.synchronize()\rm.cuda()\r",
        "ff.py": b"import torch\n# a \x0c form feed\ntorch.cuda.synchronize()  # lockin: ignore\nm.cuda()\n",
        "ls.py": "import torch\n# a \u2028 separator\ntorch.cuda.synchronize()\nm.cuda()  # lockin: ignore[LK102]\n".encode(),
        "requirements.txt": b"torch\n# \x0c\ncupy-cuda12x  # lockin: ignore[LK504]\npycuda\n",
    }
    result = run_scan(write(tmp_path, files))
    assert result.errors == []
    # line 1's directive covers line 1 only: it silences nothing there (LK001), not the lines below
    assert findings_of(result, "cr.py") == [(1, "LK001"), (3, "LK204"), (4, "LK102")]
    assert findings_of(result, "ff.py") == [(4, "LK102")]
    assert findings_of(result, "ls.py") == [(3, "LK204")]
    assert findings_of(result, "requirements.txt") == [(4, "LK505")]
    snippets = {f.path: f.snippet for f in result.findings if f.rule == "LK204"}
    assert snippets == {"cr.py": "torch.cuda.synchronize()", "ls.py": "torch.cuda.synchronize()"}


def test_coding_cookie_only_on_line_one_or_two_as_the_tokenizer_reads_them(tmp_path):
    """In a lone-CR file a comment on line 3 was read as the coding cookie ("unknown encoding")."""
    files = {
        "late.py": b"#!/usr/bin/env python\rx = 1\r# coding: klingon\rimport torch\rtorch.cuda.synchronize()\r",
        "early.py": b"#!/usr/bin/env python\r# -*- coding: latin-1 -*-\rimport torch\rs = '\xe9'; m.cuda()\r",
    }
    result = run_scan(write(tmp_path, files))
    assert result.errors == []
    assert findings_of(result, "late.py") == [(5, "LK204")] and findings_of(result, "early.py") == [(4, "LK102")]


def test_undecodable_file_names_are_escaped_the_same_everywhere(tmp_path):
    name = b"caf\xff.py"
    os.makedirs(tmp_path, exist_ok=True)
    with open(os.path.join(os.fsencode(tmp_path), name), "w") as handle:
        handle.write(SYNC)
    out = tmp_path.parent / f"{tmp_path.name}-out.json"
    proc = audit(str(tmp_path), "--format", "json", "--no-cache", "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_bytes().decode("utf-8"))
    assert [f["path"] for f in report["findings"]] == ["caf\\xff.py"]
    text = audit(str(tmp_path), "--no-cache", cwd=tmp_path)
    assert text.returncode == 0 and b"caf\\xff.py" in text.stdout
    stdout_json = audit(str(tmp_path), "--format", "json", "--no-cache", cwd=tmp_path)
    assert b"\xff" not in stdout_json.stdout and json.loads(stdout_json.stdout) == report


def test_files_the_prefilter_rules_out_still_report_decode_errors(tmp_path):
    files = {
        "utf16.py": "import torch\nmodel.cuda()\n".encode("utf-16"),
        "binary.py": b"\x7fELF\x00\x00 no tokens",
        "latin.py": b"x = '\xe9'\n",
        "fine.py": "x = 'é'\n".encode(),
        "cookie.py": b"# -*- coding: latin-1 -*-\nx = '\xe9'\n",
    }
    result = run_scan(write(tmp_path, files))
    assert {path: kind for path, (kind, _) in errors_of(result).items()} == {
        "utf16.py": "decode", "binary.py": "binary", "latin.py": "decode"}


# -- processes and the command line ------------------------------------------------------------------------

def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    stack = [pid]
    while stack:
        current = stack.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                children = {int(c) for c in (task / "children").read_text().split()}
            except OSError:
                continue
            stack.extend(children - found)
            found |= children
    return found


def _running(pid: int) -> bool:
    """Alive and not a zombie (a dead child the container's init has not reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_workers_die_with_the_main_process(tmp_path, how):
    """SIGKILL or SIGTERM to `audit` left the forkserver, its workers and the resource tracker
    running (about 230 MB, indefinitely)."""
    for i in range(60):
        (tmp_path / f"f{i}.py").write_text(SYNC + "x = a.b(c, d) + e\n" * 4000)
    (tmp_path / "big.py").write_text(SYNC + "# padding\n" * 30_000)  # over LARGE_FILE_BYTES: a forkserver
    proc = subprocess.Popen([sys.executable, "-m", "auditor", ".", "--no-cache", "--jobs", "2", "--format", "json"],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 60
    children: set[int] = set()
    while time.monotonic() < deadline and len(children) < 4 and proc.poll() is None:  # tracker, server, workers
        time.sleep(0.2)
        children = _descendants(proc.pid)
    assert proc.poll() is None, "the run ended before it could be killed"
    proc.send_signal(how)
    proc.wait(timeout=60)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(map(_running, children)):
        time.sleep(0.2)
    assert [pid for pid in children if _running(pid)] == []


def test_interrupt_exits_130_with_one_line(tmp_path):
    for i in range(60):
        (tmp_path / f"f{i}.py").write_text(SYNC + "x = a.b(c, d) + e\n" * 4000)
    proc = subprocess.Popen([sys.executable, "-c", "import signal, runpy, sys; signal.signal(signal.SIGINT, "
                             "signal.default_int_handler); sys.argv = ['audit', '.', '--no-cache']; "
                             "runpy.run_module('auditor', run_name='__main__')"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err == "audit: interrupted\n" and out == ""


@pytest.mark.parametrize(("args", "mentions"), [
    (["--fail-under", "nan"], "--fail-under"),
    (["--max-file-size", "inf"], "--max-file-size"),
    (["--max-file-size", "nan"], "--max-file-size"),
    (["--max-file-size", "1e30"], "--max-file-size"),
])
def test_non_numbers_are_usage_errors(tmp_path, capsys, args, mentions):
    from auditor.cli import main

    write(tmp_path, {"a.py": SYNC})
    assert main([str(tmp_path), "--no-cache", *args]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("audit: error: ") and mentions in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_failed_write_is_a_plain_error(tmp_path):
    write(tmp_path, {"a.py": SYNC})
    proc = audit(".", "--no-cache", "--format", "json", "-o", "/dev/full", cwd=tmp_path, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "cannot write /dev/full" in proc.stderr and "internal" not in proc.stderr
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "auditor", ".", "--no-cache"], cwd=tmp_path, stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2 and "cannot write" in proc.stderr and "Traceback" not in proc.stderr


def test_with_stderr_closed_warnings_never_reach_stdout(tmp_path):
    repo = write(tmp_path / "repo", {"a.py": SYNC, ".git/HEAD": "x"})
    (repo / ".lockin_auditor_cache").symlink_to(tmp_path, target_is_directory=True)  # a warning
    proc = subprocess.run([sys.executable, "-m", "auditor", ".", "--format", "json"], cwd=repo,
                          stdout=subprocess.PIPE, stderr=None, timeout=300, close_fds=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)},
                          preexec_fn=lambda: os.close(2))
    assert proc.returncode == 0
    report = json.loads(proc.stdout)
    assert any("symbolic link" in w for w in report["warnings"])


def test_content_cache_check_sees_a_same_size_edit_with_restored_mtime(tmp_path):
    repo = write(tmp_path / "repo", {"a.py": "import torch\nm.cuda()\n", ".git/HEAD": "x"})
    old = time.time_ns() - 3600 * 10**9
    os.utime(repo / "a.py", ns=(old, old))
    assert findings_of(run_scan(repo, cache=True), "a.py") == [(2, "LK102")]
    (repo / "a.py").write_text("import torch\nm.cpu_()\n")  # same size
    os.utime(repo / "a.py", ns=(old, old))
    assert findings_of(run_scan(repo, cache=True), "a.py") == [(2, "LK102")]  # stat mode: documented
    content = run_scan(repo, cache=True, cache_check="content")
    assert findings_of(content, "a.py") == [] and content.files_cached == 0
