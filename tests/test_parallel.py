"""A parallel run reports exactly what a serial one does, in the same order."""

from __future__ import annotations

import pytest

from auditor.config.settings import Settings
from auditor.discover.files import SourceFile
from auditor.pipeline import parallel
from auditor.pipeline.scan import scan

FILES = {
    "a/train.py": "import torch\nmodel.cuda()\nx = torch.zeros(2, device='cuda')\n",
    "a/sync.py": "import torch as th\nth.cuda.synchronize()\n" + "# padding\n" * 200,
    "b/plain.py": "import numpy\n",
    "b/broken.py": "import torch\ndef f(:\n    torch.cuda.synchronize()\n",
    "b/binary.py": b"\x00\x01cuda",
    "c/amp.py": "from torch.cuda.amp import autocast\nwith autocast():\n    pass\n",
    "requirements.txt": "torch\ncupy-cuda12x\n",
    "k/kernel.cu": "__global__ void k() {}\n",
}


def _dicts(result) -> tuple[list[dict], list[dict]]:
    return [f.to_dict() for f in result.findings], [e.to_dict() for e in result.errors]


def _write_files(root) -> None:
    for name, content in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())


@pytest.fixture(params=["parent prefilters", "workers prefilter"])
def force_pool(monkeypatch, request):
    if request.param == "workers prefilter":
        monkeypatch.setattr(parallel, "POOL_PREFILTER_BYTES", 0)
    monkeypatch.setattr(parallel, "SERIAL_BYTES", 0)
    monkeypatch.setattr(parallel, "SERIAL_FILES", 0)
    monkeypatch.setattr(parallel, "CHUNK_MAX_FILES", 1)
    monkeypatch.setattr(parallel, "available_cores", lambda: 2)  # a pool even on a one-core machine
    monkeypatch.delenv("PRE_COMMIT", raising=False)


def test_parallel_equals_serial(tmp_path, force_pool):
    _write_files(tmp_path)
    serial = scan([str(tmp_path)], Settings(jobs=1, cache=False))
    pooled = scan([str(tmp_path)], Settings(jobs=2, cache=False))
    assert _dicts(serial) == _dicts(pooled)
    assert serial.files_parsed == pooled.files_parsed
    assert serial.findings and serial.errors
    assert not pooled.warnings


def test_parallel_with_cache_equals_serial(tmp_path, force_pool):
    _write_files(tmp_path)
    serial = scan([str(tmp_path)], Settings(jobs=1, cache=False))
    cold = scan([str(tmp_path)], Settings(jobs=2, cache_dir=str(tmp_path / "cache")))
    warm = scan([str(tmp_path)], Settings(jobs=2, cache_dir=str(tmp_path / "cache")))
    assert _dicts(serial) == _dicts(cold) == _dicts(warm)


def test_serial_for_pre_commit_small_inputs_and_one_job(monkeypatch):
    big = [(i, SourceFile(f"f{i}.py", f"f{i}.py", "python"), 1_000_000, None) for i in range(4)]
    small = [(0, SourceFile("f.py", "f.py", "python"), 100, None)]
    monkeypatch.delenv("PRE_COMMIT", raising=False)
    assert not parallel.run_serially(2, big)
    assert parallel.run_serially(1, big)
    assert parallel.run_serially(2, small)
    monkeypatch.setenv("PRE_COMMIT", "1")
    assert parallel.run_serially(2, big)
    assert not parallel.prefilter_in_pool(2, big)
    monkeypatch.delenv("PRE_COMMIT")
    assert parallel.prefilter_in_pool(2, big * 3)


def test_chunks_cover_every_task_once_largest_first():
    tasks = [(i, SourceFile(f"f{i}.py", f"f{i}.py", "python"), size, None)
             for i, size in enumerate([5, 900_000, 40, 70_000, 3])]
    chunks = parallel.chunks(tasks, 2)
    flat = [t for chunk in chunks for t in chunk]
    assert sorted(flat) == sorted(tasks)
    assert flat[0][2] == 900_000
    assert [t[2] for t in flat] == sorted((t[2] for t in tasks), reverse=True)


def test_jobs_default_to_the_available_cores_and_never_exceed_them(monkeypatch):
    assert parallel.resolve_jobs(None) == parallel.available_cores() >= 1
    monkeypatch.setattr(parallel, "available_cores", lambda: 2)
    assert parallel.resolve_jobs(1) == 1 and parallel.resolve_jobs(2) == 2
    assert parallel.resolve_jobs(40) == 2 and parallel.resolve_jobs(0) == 2


def test_touched_files_through_workers_are_not_parsed_again(tmp_path, force_pool):
    import os

    _write_files(tmp_path)
    for name in FILES:
        os.utime(tmp_path / name, ns=(10**18, 10**18))
    cache = str(tmp_path / "cache")
    cold = scan([str(tmp_path)], Settings(jobs=2, cache_dir=cache))
    for name in FILES:
        os.utime(tmp_path / name, ns=(2 * 10**18, 2 * 10**18))
    touched = scan([str(tmp_path)], Settings(jobs=2, cache_dir=cache))
    assert _dicts(cold) == _dicts(touched)
    assert touched.files_parsed == 0 and touched.files_cached == len(FILES)


def test_big_runs_start_workers_from_a_lean_process():
    def tasks(*sizes):
        return [(i, SourceFile(f"f{i}.py", f"f{i}.py", "python"), size, None) for i, size in enumerate(sizes)]

    assert parallel._context(tasks(40_000, 50_000)).get_start_method() == "fork"
    assert parallel._context(tasks(*[100_000] * 90)).get_start_method() == "forkserver"
    assert parallel._context(tasks(1_000, parallel.LARGE_FILE_BYTES)).get_start_method() == "forkserver"
