"""The results cache: warm runs re-parse nothing, changes are always seen, and a broken cache
only costs speed (a warning), never a crash or a wrong result."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from auditor.cache.folder import CACHE_DIR_NAME, CACHEDIR_TAG, project_root
from auditor.cache.results import _decode, _encode
from auditor.config.settings import Settings
from auditor.pipeline.scan import scan

ROOT = Path(__file__).resolve().parent.parent
BAD = "import torch\nmodel.cuda()\ntorch.cuda.synchronize()\n"
GOOD = "import numpy\n"
OLD_NS = time.time_ns() - 3600 * 10**9  # an hour ago: the stat is trusted


def make_repo(tmp_path: Path, files: dict[str, str], age: bool = True) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        if age:
            os.utime(path, ns=(OLD_NS, OLD_NS))
    return repo


def run(path: Path, **options):
    return scan([str(path)], Settings(jobs=1, **options))


def rows(result) -> list[dict]:
    return [f.to_dict() for f in result.findings]


def test_warm_run_reuses_everything(tmp_path):
    repo = make_repo(tmp_path, {"a.py": BAD, "b.py": GOOD, "requirements.txt": "cupy-cuda12x\n"})
    cold = run(repo)
    warm = run(repo)
    assert cold.files_parsed >= 1 and cold.files_cached == 0
    assert warm.files_parsed == 0 and warm.files_cached == len(warm.files) == 3
    assert rows(cold) == rows(warm) and cold.errors == warm.errors
    assert not warm.warnings


def test_cache_folder_is_tagged_and_ignored(tmp_path):
    repo = make_repo(tmp_path, {"src/a.py": BAD})
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    run(repo / "src")  # the project root is found above the scanned folder
    folder = repo / CACHE_DIR_NAME
    assert (folder / "CACHEDIR.TAG").read_text() == CACHEDIR_TAG
    assert (folder / ".gitignore").read_text().strip().endswith("*")
    assert list(folder.glob("results-*"))
    assert project_root(str(repo / "src")) == str(repo)


def test_changed_content_is_rechecked(tmp_path):
    repo = make_repo(tmp_path, {"a.py": GOOD})
    assert rows(run(repo)) == []
    (repo / "a.py").write_text(BAD, encoding="utf-8")
    changed = run(repo)
    assert changed.files_parsed == 1 and rows(changed)
    assert rows(changed) == rows(run(repo, cache=False))


def test_touched_but_identical_file_is_not_parsed_again(tmp_path):
    repo = make_repo(tmp_path, {"a.py": BAD})
    first = run(repo)
    later = OLD_NS + 10**9
    os.utime(repo / "a.py", ns=(later, later))
    again = run(repo)
    assert again.files_parsed == 0 and again.files_cached == 1 and rows(again) == rows(first)


def test_racy_entry_is_verified_by_content(tmp_path):
    """A file written just before the scan may change again within the same mtime tick."""
    repo = make_repo(tmp_path, {"a.py": "import torch\nx = 1\n"}, age=False)
    stamp = (repo / "a.py").stat().st_mtime_ns
    assert rows(run(repo)) == []
    (repo / "a.py").write_text("model.cuda()\n#....\n", encoding="utf-8")  # same size
    os.utime(repo / "a.py", ns=(stamp, stamp))  # and the same mtime
    assert [f["rule"] for f in rows(run(repo))] == [f["rule"] for f in rows(run(repo, cache=False))] != []


def test_deleted_file_leaves_the_results(tmp_path):
    repo = make_repo(tmp_path, {"a.py": BAD, "b.py": BAD})
    assert {f.path for f in run(repo).findings} == {"a.py", "b.py"}
    (repo / "b.py").unlink()
    assert {f.path for f in run(repo).findings} == {"a.py"}


def test_rule_selection_has_its_own_cache(tmp_path):
    repo = make_repo(tmp_path, {"a.py": BAD})
    every = {f.rule for f in run(repo).findings}
    only = {f.rule for f in run(repo, select=["LK102"]).findings}
    assert only == {"LK102"} and every > only
    assert {f.rule for f in run(repo).findings} == every


def test_corrupt_cache_warns_and_gives_correct_results(tmp_path):
    repo = make_repo(tmp_path, {"a.py": BAD})
    expected = rows(run(repo))
    (path,) = (repo / CACHE_DIR_NAME).glob("results-*")
    good = path.read_bytes()
    flipped = good[:-5] + bytes([good[-5] ^ 0xFF]) + good[-4:]
    wrong_shape = _encode({"format": 2, "key": "x", "files": []})
    for junk in (b"{not json", b"", b"\x00\xff", good[:len(good) // 2], flipped, wrong_shape):
        path.write_bytes(junk)
        result = run(repo)
        assert rows(result) == expected
        assert any("cache" in w for w in result.warnings), junk
        assert rows(run(repo)) == expected  # and the next run has a good cache again


def test_malformed_entry_is_not_trusted(tmp_path):
    repo = make_repo(tmp_path, {"a.py": BAD})
    expected = rows(run(repo))
    (path,) = (repo / CACHE_DIR_NAME).glob("results-*")
    data = _decode(path.read_bytes())
    data["files"]["a.py"][5] = [["broken"]]
    path.write_bytes(_encode(data))
    result = run(repo)
    assert rows(result) == expected and result.warnings


def test_unwritable_cache_dir_warns(tmp_path):
    repo = make_repo(tmp_path, {"a.py": BAD})
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    result = run(repo, cache_dir=str(blocker / "cache"))
    assert rows(result) == rows(run(repo, cache=False))
    assert any("cannot write the cache" in w for w in result.warnings)


def test_no_cache_writes_nothing(tmp_path):
    repo = make_repo(tmp_path, {"a.py": BAD})
    run(repo, cache=False)
    assert not (repo / CACHE_DIR_NAME).exists()


def test_cache_dir_option(tmp_path):
    repo = make_repo(tmp_path, {"a.py": BAD})
    elsewhere = tmp_path / "elsewhere"
    run(repo, cache_dir=str(elsewhere))
    warm = run(repo, cache_dir=str(elsewhere))
    assert warm.files_cached == 1 and (elsewhere / "CACHEDIR.TAG").exists()
    assert not (repo / CACHE_DIR_NAME).exists()


def test_partial_scan_keeps_other_entries(tmp_path):
    repo = make_repo(tmp_path, {"src/a.py": BAD, "tests/b.py": BAD})
    run(repo)
    scan([str(repo / "src" / "a.py")], Settings(jobs=1))
    assert run(repo).files_cached == 2


def test_warm_run_does_not_import_libcst(tmp_path):
    repo = make_repo(tmp_path, {"a.py": BAD, "b.py": GOOD})
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from auditor.config.settings import Settings\n"
        "from auditor.pipeline.scan import scan\n"
        f"r = scan([{str(repo)!r}], Settings(jobs=1))\n"
        "print(r.files_parsed, r.files_cached, len(r.findings), 'libcst' in sys.modules)\n"
    )
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert first[3] == "True" and second[:2] == ["0", "2"] and second[2] == first[2]
    assert second[3] == "False"


def test_warm_command_line_run_imports_neither_libcst_nor_rich_nor_the_rules(tmp_path):
    """What `audit PATH --format json` loads when the cache serves every file: the heavy modules
    stay function-level imports for this (tests/test_imports.py)."""
    repo = make_repo(tmp_path, {"a.py": BAD, "b.py": GOOD, "requirements.txt": "flash-attn\n"})
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['audit', 'scan', {str(repo)!r}, '--format', 'json', '--output', {str(tmp_path / 'r.json')!r}]\n"
        "try:\n    runpy.run_module('auditor', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('libcst', 'rich') or m.startswith('auditor.checks')\n"
        "         or m in ('auditor.context', 'auditor.pipeline.runtime', 'auditor.python.scan')]\n"
        "print(sorted(heavy))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cold = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd=repo)
    assert "libcst" in cold.stdout  # the cold run did check the files
    warm = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd=repo)
    assert warm.stdout.strip() == "[]", warm.stdout + warm.stderr


def test_changed_files_the_prefilter_rules_out_need_no_rules_nor_libcst(tmp_path):
    """The cache keeps its prefilter: a pre-commit run over edited files without any lock-in token
    decides them without loading the rules (and libcst); one with a token still gets checked."""
    repo = make_repo(tmp_path, {"a.py": BAD, "b.py": GOOD, "c.py": GOOD})
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from auditor.config.settings import Settings\n"
        "from auditor.pipeline.scan import scan\n"
        f"r = scan([{str(repo / 'b.py')!r}, {str(repo / 'c.py')!r}], Settings(jobs=1))\n"
        "print(r.files_parsed, len(r.findings), 'libcst' in sys.modules, 'auditor.checks.registry' in sys.modules)\n"
    )
    run(repo)
    (repo / "b.py").write_text(GOOD + "y = numpy.ones(3)\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0", "0", "False", "False"]
    (repo / "c.py").write_text(BAD, encoding="utf-8")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[:3] == ["1", str(len(rows(run(repo / "a.py")))), "True"]


def test_runs_side_by_side_keep_each_others_entries(tmp_path):
    """pre-commit runs batches of files in parallel processes: each saves the cache, and the last
    save must not drop the entries the other batch wrote meanwhile."""
    from auditor.cache.results import open_cache
    from auditor.config.keys import DEFAULT_MAX_BYTES
    from auditor.model import FileResult, Finding

    repo = make_repo(tmp_path, {"a.py": BAD, "b.py": BAD, "c.py": BAD})
    run(repo)
    first, second = (open_cache(str(repo), None, None, None, DEFAULT_MAX_BYTES) for _ in range(2))
    finding = Finding("a.py", 1, 1, 1, 2, "LK102", "n", "device", "major", "m", "s", {"cpu": "raises"})
    first.store(FileResult("a.py", findings=[finding], parsed=True), 10, 1, "digest-a")
    second.store(FileResult("b.py", parsed=True), 20, 2, "digest-b")
    first.save()
    time.sleep(0.01)  # a later mtime, as a real second save has
    second.save()
    merged = open_cache(str(repo), None, None, None, DEFAULT_MAX_BYTES)
    assert merged.entries["a.py"][2] == "digest-a" and merged.entries["b.py"][2] == "digest-b"
    assert merged.lookup("a.py", 10, 1).findings[0].targets == {"cpu": "raises"}
    assert merged.lookup("b.py", 20, 2).findings == []
    assert merged.entries["c.py"] == first.entries["c.py"]


def _age_tree(repo: Path) -> None:
    for path in [repo, *repo.rglob("*")]:
        os.utime(path, ns=(OLD_NS, OLD_NS))


def _walks(monkeypatch) -> list[str]:
    from auditor.discover import walk as discover

    listed: list[str] = []
    original = discover._Walk.visit

    def visit(self, directory, *args, **kwargs):
        listed.append(directory)
        return original(self, directory, *args, **kwargs)

    monkeypatch.setattr(discover._Walk, "visit", visit)
    return listed


def test_warm_run_reuses_the_discovery_until_a_folder_changes(tmp_path, monkeypatch):
    repo = make_repo(tmp_path, {"src/a.py": BAD, "src/deep/b.py": GOOD, "requirements.txt": "torch\n"})
    run(repo)  # creates the cache folder, which changes the project folder
    _age_tree(repo)
    cold = run(repo)
    listed = _walks(monkeypatch)
    warm = run(repo)
    assert listed == [] and [f.display for f in warm.files] == [f.display for f in cold.files]
    assert rows(warm) == rows(cold)
    (repo / "src" / "deep" / "c.py").write_text(BAD, encoding="utf-8")  # a new file: its folder's mtime moves
    assert "src/deep/c.py" in [f.display for f in run(repo).files] and listed
    _age_tree(repo)
    run(repo)
    listed.clear()
    (repo / "src" / "a.py").unlink()
    assert "src/a.py" not in [f.display for f in run(repo).files] and listed


def test_changed_gitignore_or_recent_folders_mean_a_new_walk(tmp_path, monkeypatch):
    repo = make_repo(tmp_path, {"a.py": BAD, "gen/b.py": BAD, ".gitignore": "*.log\n"})
    run(repo)
    _age_tree(repo)
    run(repo)
    listed = _walks(monkeypatch)
    (repo / ".gitignore").write_text("gen/\n", encoding="utf-8")
    os.utime(repo, ns=(OLD_NS, OLD_NS))  # only the file's own stat shows the edit
    assert [f.display for f in run(repo).files] == ["a.py"] and listed
    listed.clear()
    (repo / "new").mkdir()  # modified just now: never stored, so every run walks again
    run(repo)
    run(repo)
    assert listed.count(str(repo)) == 2


def test_a_run_on_one_file_keeps_the_tree_for_the_next_whole_run(tmp_path, monkeypatch):
    repo = make_repo(tmp_path, {"a.py": BAD, "src/b.py": GOOD})
    run(repo)
    _age_tree(repo)
    run(repo)
    listed = _walks(monkeypatch)
    run(repo / "a.py")  # a pre-commit batch of one file
    assert run(repo).files_cached == 2 and listed == []


def test_a_finding_round_trips_with_context_cell_and_fix(tmp_path):
    """Every field of a finding, the fix's edits included, comes back from the cache as stored."""
    from auditor.cache.results import open_cache
    from auditor.config.keys import DEFAULT_MAX_BYTES
    from auditor.model import Edit, FileResult, Finding, Fix

    repo = make_repo(tmp_path, {"a.py": BAD})
    cache = open_cache(str(repo), None, None, None, DEFAULT_MAX_BYTES)
    fix = Fix("display", "use torch.amp", (Edit(1, 1, 1, 5, "torch.amp"), Edit(2, 1, 3, 1, "")), "2.4",
              "needs torch >= 2.4; the project supports torch 2.3")
    finding = Finding("a.py", 1, 1, 1, 2, "LK209", "n", "cuda-api", "minor", "m", "s", {"cpu": "degrades"}, "2.4",
                      "snip", context="guarded", cell=2, fix=fix)
    cache.store(FileResult("a.py", findings=[finding], parsed=True), 10, 1, "digest-a")
    cache.save()
    again = open_cache(str(repo), None, None, None, DEFAULT_MAX_BYTES)
    (loaded,) = again.lookup("a.py", 10, 1).findings
    assert loaded.to_dict() == finding.to_dict() and loaded.fix == fix
