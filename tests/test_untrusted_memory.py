"""Bounded memory per file, and one file's failure stays that file's error (issue 20, D11).

A 10 MB script of `nvidia-smi` lines peaked at 4.95 GB (about 5 kB a finding) and, under a 3 GB
limit, the run ended in `internal error: MemoryError` with no report at all. A file now keeps at
most MAX_FINDINGS_PER_FILE findings and counts the rest in an error entry, shown in every report;
anything one file's check raises, MemoryError included, is that file's error entry."""

from __future__ import annotations

import json
import tracemalloc

import pytest
from test_untrusted import errors_of, findings_of, run_scan, write

from auditor.model import MAX_FINDINGS_PER_FILE, OMITTED

SYNC = "import torch\ntorch.cuda.synchronize()\n"
OVER = MAX_FINDINGS_PER_FILE + 1000


def test_a_file_keeps_at_most_the_cap_and_counts_the_rest(tmp_path):
    files = {"run.sh": "#!/bin/bash\n" + "nvidia-smi\n" * OVER,
             "gpu.py": "import torch\n" + "m.cuda()\n" * OVER,
             "requirements.txt": "cupy-cuda12x\n" * 3 + "pycuda\n", "train.py": SYNC}
    result = run_scan(write(tmp_path, files))
    errors = errors_of(result)
    for name, rule in (("run.sh", "LK603"), ("gpu.py", "LK102")):
        assert len(findings_of(result, name)) == MAX_FINDINGS_PER_FILE
        assert errors[name] == (OMITTED, f"1,000 more findings not listed ({rule} 1,000): a file keeps at most "
                                         f"{MAX_FINDINGS_PER_FILE:,}")
    assert findings_of(result, "train.py") == [(2, "LK204")]
    assert {rule for _, rule in findings_of(result, "requirements.txt")} == {"LK504", "LK505"}


def test_the_count_shows_in_json_and_text(tmp_path, monkeypatch, capsys):
    from auditor.cli import main

    write(tmp_path, {"run.sh": "#!/bin/bash\n" + "nvidia-smi\n" * OVER})
    monkeypatch.chdir(tmp_path)
    main([".", "--no-cache", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert [e["kind"] for e in report["errors"]] == [OMITTED] and "1,000 more findings" in report["errors"][0]["message"]
    assert report["summary"]["findings"] == MAX_FINDINGS_PER_FILE
    main([".", "--no-cache", "--format", "text"])
    out = capsys.readouterr().out
    assert "1,000 more findings not listed" in out


def test_suppressions_are_not_judged_unused_when_findings_were_dropped(tmp_path):
    """A directive on a finding past the cap silences one that was never kept: no LK001 for it."""
    script = "#!/bin/bash\n" + "nvidia-smi\n" * OVER + "nvidia-smi  # lockin: ignore[LK603]\n"
    result = run_scan(write(tmp_path, {"run.sh": script}))
    assert not [rule for _, rule in findings_of(result, "run.sh") if rule == "LK001"]


def _peak(function) -> int:
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_per_file_does_not_grow_with_its_findings(tmp_path):
    """Three times the cap's worth of lines takes about what an ordinary script of the same size does."""
    lines = 3 * MAX_FINDINGS_PER_FILE
    worst = write(tmp_path / "worst", {"run.sh": "#!/bin/bash\n" + "nvidia-smi\n" * lines})
    normal = write(tmp_path / "normal", {"run.sh": "#!/bin/bash\n# cuda\n" + "echo-smi\n" * lines})
    assert len(findings_of(run_scan(worst), "run.sh")) == MAX_FINDINGS_PER_FILE
    assert _peak(lambda: run_scan(worst)) < 4 * _peak(lambda: run_scan(normal))


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("failure", [MemoryError, RecursionError, ValueError])
def test_one_files_failure_is_that_files_error(tmp_path, monkeypatch, jobs, failure):
    """Anything raised while one file is read or checked, in this process or a worker."""
    from auditor.pipeline import parallel, runtime
    from auditor.read import source as reading

    for name, value in (("SERIAL_BYTES", 0), ("SERIAL_FILES", 0), ("CHUNK_MAX_FILES", 1)):
        monkeypatch.setattr(parallel, name, value)
    monkeypatch.delenv("PRE_COMMIT", raising=False)
    original = reading.read_bytes

    def read(source, max_bytes):
        if source.display == "bad.py":
            raise failure("boom")
        return original(source, max_bytes)

    monkeypatch.setattr(runtime, "read_bytes", read)  # workers are forked: they inherit it
    monkeypatch.setattr(reading, "read_bytes", read)  # what the scan reads before the prefilter
    files = {"bad.py": SYNC, **{f"ok{i}.py": SYNC for i in range(4)}}
    result = run_scan(write(tmp_path, files), jobs=jobs)
    kind, _ = errors_of(result)["bad.py"]
    assert kind == {MemoryError: "crash", RecursionError: "parse", ValueError: "internal"}[failure]
    assert all(findings_of(result, f"ok{i}.py") == [(2, "LK204")] for i in range(4))


def test_a_memory_error_while_checking_is_that_files_error(tmp_path, monkeypatch):
    from auditor.python import scan as python_scan

    scan = python_scan._scan

    def exhausted(path, *args):
        if path == "big.py":
            raise MemoryError
        return scan(path, *args)

    monkeypatch.setattr(python_scan, "_scan", exhausted)
    result = run_scan(write(tmp_path, {"big.py": SYNC, "fine.py": SYNC}))
    assert errors_of(result)["big.py"] == ("crash", "ran out of memory while checking this file; not scanned")
    assert findings_of(result, "fine.py") == [(2, "LK204")]


def test_a_chunk_a_worker_cannot_send_back_is_checked_again_in_isolation(tmp_path, monkeypatch):
    """A result the worker cannot pickle (or any error outside one file's check) failed the whole
    run from `future.result()`; those files are checked again, each in an isolated child."""
    from auditor.pipeline import parallel

    for name, value in (("SERIAL_BYTES", 0), ("SERIAL_FILES", 0), ("CHUNK_MAX_FILES", 1)):
        monkeypatch.setattr(parallel, name, value)
    monkeypatch.delenv("PRE_COMMIT", raising=False)
    original = parallel._check_chunk

    def unsendable(chunk):
        outcomes = original(chunk)
        if any(task[1].display == "bad.py" for task in chunk):
            return [*outcomes, lambda: None]  # workers are forked: they inherit this; a lambda does not pickle
        return outcomes

    monkeypatch.setattr(parallel, "_check_chunk", unsendable)
    files = {"bad.py": SYNC, **{f"ok{i}.py": SYNC for i in range(4)}}
    result = run_scan(write(tmp_path, files), jobs=2)
    assert result.errors == []
    assert all(findings_of(result, name) == [(2, "LK204")] for name in files)
