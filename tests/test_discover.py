"""Discovery: what is read, what is skipped, how paths are reported, and how fast it is."""

from __future__ import annotations

import os
from pathlib import Path

from auditor.discover.files import file_kind
from auditor.discover.walk import discover


def make(root: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")


def found(root: Path, paths: list[str] | None = None, **kwargs) -> list[str]:
    return [f.display for f in discover(paths or [str(root)], str(root), **kwargs).files]


def test_kinds_by_name():
    assert file_kind("a/train.py") == "python"
    assert file_kind("stubs/x.pyi") == "python"
    assert file_kind("pkg/setup.py") == "setup-py"
    assert file_kind("pyproject.toml") == "pyproject"
    assert file_kind("setup.cfg") == "setup-cfg"
    assert file_kind("csrc/k.cu") == "cuda" and file_kind("csrc/k.cuh") == "cuda"
    assert file_kind("requirements-dev.txt") == "requirements"
    assert file_kind("requirements/base.txt") == "requirements"
    assert file_kind("constraints.in") == "requirements"
    assert file_kind("MANIFEST.in") is None
    assert file_kind("notes.txt") is None
    assert file_kind("notes.txt", explicit=True) == "requirements"
    assert file_kind("README.md") is None


def test_skips_tooling_folders(tmp_path):
    make(tmp_path, {
        "pkg/model.py": "", ".git/hooks/x.py": "", ".venv/lib/x.py": "", "venv/x.py": "",
        "lib/python3.11/site-packages/torch/x.py": "", "node_modules/x/y.py": "", "build/lib/x.py": "",
        "dist/x.py": "", "pkg.egg-info/x.py": "", "pkg/__pycache__/x.py": "", ".mypy_cache/x.py": "",
        ".tox/py/x.py": "", "myenv/pyvenv.cfg": "home = /usr\n", "myenv/lib/x.py": "",
        "tool-cache/CACHEDIR.TAG": "Signature: 8a477f597d28d172789f06886806bc55\n", "tool-cache/x.py": "",
    })
    assert found(tmp_path) == ["pkg/model.py"]


def test_scanned_virtualenv_itself_is_read(tmp_path):
    make(tmp_path, {"env/pyvenv.cfg": "", "env/x.py": ""})
    assert found(tmp_path / "env") == ["x.py"]


def test_gitignore_root_nested_negation_and_directory_patterns(tmp_path):
    make(tmp_path, {
        ".gitignore": "*.gen.py\ngenerated/\n/top_only.py\nvendor/*\n!vendor/keep.py\n",
        "a.py": "", "b.gen.py": "", "top_only.py": "", "sub/top_only.py": "",
        "generated/x.py": "", "deep/generated/y.py": "", "vendor/drop.py": "", "vendor/keep.py": "",
        "sub/.gitignore": "local.py\n!important.gen.py\n", "sub/local.py": "", "sub/important.gen.py": "",
        "other/local.py": "",
    })
    assert found(tmp_path) == [
        "a.py", "other/local.py", "sub/important.gen.py", "sub/top_only.py", "vendor/keep.py",
    ]


def test_directory_pattern_does_not_match_files(tmp_path):
    make(tmp_path, {".gitignore": "setup.py/\n", "setup.py": ""})
    assert found(tmp_path) == ["setup.py"]


def test_no_respect_gitignore(tmp_path):
    make(tmp_path, {".gitignore": "x.py\n", "x.py": ""})
    assert found(tmp_path, respect_gitignore=False) == ["x.py"]
    assert found(tmp_path) == []


def test_parent_gitignore_up_to_repository_root(tmp_path):
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("excluded.py\n")
    make(tmp_path, {
        ".gitignore": "secret/\n", "src/.gitignore": "*.tmp.py\n",
        "src/pkg/secret/x.py": "", "src/pkg/a.tmp.py": "", "src/pkg/excluded.py": "", "src/pkg/ok.py": "",
    })
    assert found(tmp_path / "src" / "pkg") == ["ok.py"]


def test_named_folder_ignored_from_above_is_still_scanned(tmp_path):
    # As ruff and ripgrep: a folder the user names is read even when a .gitignore above ignores
    # it (bench/.corpus/ listed in the project's .gitignore once hid a whole benchmark set);
    # the patterns still apply inside it, and --force-exclude leaves it out as git would.
    (tmp_path / ".git").mkdir()
    make(tmp_path, {".gitignore": "bench/.corpus/\n*.log.py\n", "bench/.corpus/set/a.py": "",
                    "bench/.corpus/set/sub/b.py": "", "bench/.corpus/set/c.log.py": ""})
    named = tmp_path / "bench" / ".corpus" / "set"
    assert found(named) == ["a.py", "sub/b.py"]
    assert found(named, force_exclude=True) == []
    assert found(tmp_path) == []


def test_parent_gitignore_ignored_outside_a_repository(tmp_path):
    # Without a .git folder there is no repository root, so folders above the scan do not apply.
    make(tmp_path, {".gitignore": "*.py\n", "proj/a.py": ""})
    assert found(tmp_path / "proj") == ["a.py"]


def test_explicit_files_always_read_and_several_paths(tmp_path, monkeypatch):
    make(tmp_path, {".gitignore": "ignored.py\nbuild/\n", "ignored.py": "", "build/gen.py": "",
                    "one/a.py": "", "two/b.py": "", "two/c.py": "", "notes.md": ""})
    monkeypatch.chdir(tmp_path)
    got = found(tmp_path, ["two", "ignored.py", "build/gen.py", "one/a.py", "notes.md", "one/a.py"])
    assert got == ["build/gen.py", "ignored.py", "one/a.py", "two/b.py", "two/c.py"]


def test_sorted_posix_display_paths_relative_to_root(tmp_path):
    make(tmp_path, {"z.py": "", "a/b/c.py": "", "a.py": "", "B.py": "", "a/a.py": ""})
    result = discover([str(tmp_path / "a"), str(tmp_path / "z.py")], str(tmp_path))
    displays = [f.display for f in result.files]
    assert displays == sorted(displays) == ["a/a.py", "a/b/c.py", "z.py"]
    assert all(Path(f.path).is_file() for f in result.files)


def test_excludes_by_name_and_by_path(tmp_path):
    make(tmp_path, {"a/test_x.py": "", "a/x.py": "", "b/x.py": "", "docs/conf.py": ""})
    assert found(tmp_path, excludes=("test_*", "b/x.py", "docs")) == ["a/x.py"]


def test_symlinks(tmp_path):
    """Links to files inside the scanned folder are read through their resolved path (the reader
    never follows a link); links out of it, to devices, loops and broken links are errors."""
    make(tmp_path, {"real/a.py": "", "outside/b.py": "", "repo/pkg/inner.py": ""})
    repo = tmp_path / "repo"
    (repo / "link.py").symlink_to(repo / "pkg" / "inner.py")
    (repo / "out.py").symlink_to(tmp_path / "real" / "a.py")
    (repo / "zero.py").symlink_to("/dev/zero")
    os.mkfifo(repo / "pipe")
    (repo / "piped.py").symlink_to(repo / "pipe")
    (repo / "linkdir").symlink_to(tmp_path / "outside", target_is_directory=True)
    (repo / "loop1.py").symlink_to(repo / "loop2.py")
    (repo / "loop2.py").symlink_to(repo / "loop1.py")
    (repo / "gone.py").symlink_to(tmp_path / "missing.py")
    (repo / "gone.md").symlink_to(tmp_path / "missing.md")
    result = discover([str(repo)], str(repo))
    assert [(f.display, f.path) for f in result.files] == [("link.py", str(repo / "pkg" / "inner.py")),
                                                           ("pkg/inner.py", str(repo / "pkg" / "inner.py"))]
    errors = {(e.path, e.kind) for e in result.errors}
    assert errors == {("loop1.py", "symlink-loop"), ("loop2.py", "symlink-loop"), ("gone.py", "read"),
                      ("out.py", "read"), ("zero.py", "read"), ("piped.py", "read")}
    messages = {e.path: e.message for e in result.errors}
    assert "outside the scanned folder" in messages["out.py"] and "outside" in messages["zero.py"]
    assert "not a regular file" in messages["piped.py"]
    assert all(e.message for e in result.errors)


def test_gitignored_broken_link_is_not_an_error(tmp_path):
    make(tmp_path, {".gitignore": "gone.py\n"})
    (tmp_path / "gone.py").symlink_to(tmp_path / "missing.py")
    result = discover([str(tmp_path)], str(tmp_path))
    assert result.files == [] and result.errors == []


def test_unreadable_directory_is_an_error(tmp_path, monkeypatch):
    make(tmp_path, {"ok/a.py": "", "locked/b.py": ""})
    real_scandir = os.scandir
    locked = str(tmp_path / "locked")

    def scandir(path):
        if os.fspath(path) == locked:
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = discover([str(tmp_path)], str(tmp_path))
    assert [f.display for f in result.files] == ["ok/a.py"]
    assert [(e.path, e.kind) for e in result.errors] == [("locked", "read")]
    assert "Permission denied" in result.errors[0].message


def test_deep_tree_does_not_recurse(tmp_path):
    deep = tmp_path.joinpath(*["d"] * 150)
    deep.mkdir(parents=True)
    (deep / "x.py").write_text("")
    assert found(tmp_path) == ["/".join(["d"] * 150) + "/x.py"]


def test_large_gitignore_is_matched_correctly(tmp_path):
    """Many patterns, none matching: every file is kept (the fast path must not drop any).
    Discovery speed is measured by bench/run_bench.py, not here."""
    patterns = [f"pattern_{i}/\n*.ext{i}\n/anchored_{i}.py\n" for i in range(100)]
    make(tmp_path, {".gitignore": "".join(patterns), "anchored_3.py": "", "pattern_7/y.py": "", "z.ext5": ""})
    for d in range(50):
        for f in range(40):
            (tmp_path / f"dir{d}").mkdir(exist_ok=True)
            (tmp_path / f"dir{d}" / f"m{f}.py").write_text("")
    assert len(found(tmp_path)) == 2000
