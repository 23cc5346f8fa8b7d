"""Running programs on the CPU-only PyTorch of the test extra, for the execution tests (issue 19).

Each program runs in a child process started in its own folder, with no CUDA device visible and
a clean environment: it reports what it appended to `RESULT`, or the exception it stopped with
and the line of the program where it was raised (for a notebook, the cell and the line in it).
A program with `processes > 1` is started that many times side by side as torchrun starts ranks
(RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT); every rank must report the same."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

# Runs one program (a script, or a notebook's code cells in order in one namespace, as Jupyter
# does) and prints one JSON line: {"result": ...} or {"error": "Type: message", "line": N, "cell": C}.
DRIVER = r'''
import json, os, runpy, sys, traceback, warnings
warnings.simplefilter("ignore")
path = sys.argv[1]
sys.path.insert(0, os.path.dirname(path))  # as `python path` does: the script's modules beside it
if os.environ.get("DRIVER_SEED"):  # a script that draws its data unseeded, made repeatable
    import torch
    torch.manual_seed(int(os.environ["DRIVER_SEED"]))
printed = []
where = {}
try:
    if path.endswith(".ipynb"):
        namespace = {"RESULT": printed, "__name__": "__main__"}
        cells = [c for c in json.load(open(path, encoding="utf-8"))["cells"]]
        for number, cell in enumerate(cells, 1):
            if cell["cell_type"] == "code":
                source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                exec(compile(source, f"<cell {number}>", "exec"), namespace)
    else:
        sys.argv = [path, *sys.argv[2:]]
        runpy.run_path(path, init_globals={"RESULT": printed}, run_name="__main__")
    print(json.dumps({"result": printed[-1] if printed else None}))
except BaseException as exc:
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == path:
            where = {"line": frame.lineno}
        elif frame.filename.startswith("<cell "):
            where = {"cell": int(frame.filename[6:-1]), "line": frame.lineno}
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}", **where}))
'''

TIMEOUT_S = 240


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _environment(extra: dict[str, str] | None = None, seed: int | None = None) -> dict[str, str]:
    env = {"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": "", "PYTHONDONTWRITEBYTECODE": "1",
           "OMP_NUM_THREADS": "1", "HOME": os.environ.get("HOME", "/tmp")}
    if seed is not None:
        env["DRIVER_SEED"] = str(seed)
    return {**env, **(extra or {})}


def run_program(path: Path, processes: int = 1, args: tuple[str, ...] = (), seed: int | None = None) -> dict:
    """What the program at `path` reports (the result, or the error and where it stopped). With
    several processes, rank 0's report, after checking that every rank reports the same. `seed`
    seeds torch before the program starts (for scripts that draw their data unseeded)."""
    driver = path.parent / "_driver.py"
    driver.write_text(DRIVER, encoding="utf-8")
    command = [sys.executable, str(driver), str(path), *args]
    if processes == 1:
        return _report(subprocess.run(command, cwd=path.parent, capture_output=True, text=True,
                                      timeout=TIMEOUT_S, env=_environment(seed=seed)))
    port = str(_free_port())
    ranks = [subprocess.Popen(command, cwd=path.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=_environment({"RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": str(processes),
                                                "LOCAL_WORLD_SIZE": str(processes), "MASTER_ADDR": "127.0.0.1",
                                                "MASTER_PORT": port}, seed))
             for r in range(processes)]
    reports = []
    for rank in ranks:
        try:
            out, err = rank.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            for other in ranks:
                other.kill()
            raise
        reports.append(_report(subprocess.CompletedProcess(rank.args, rank.returncode, out, err)))
    outcome = [{k: v for k, v in r.items() if k != "stdout"} for r in reports]
    assert all(o == outcome[0] for o in outcome), outcome  # the ranks agree (their gradients were averaged)
    return reports[0]


def _report(done: subprocess.CompletedProcess) -> dict:
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, f"the program printed no report (exit {done.returncode}): {done.stderr[-2000:]}"
    report = json.loads(lines[-1])
    report["stdout"] = [line for line in done.stdout.splitlines() if not line.startswith("{")]
    return report
