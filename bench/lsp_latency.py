"""Editor latency of `audit server`: the time from a document notification to its diagnostics.

    .venv/bin/python bench/lsp_latency.py                      # a generated 1,000-line file, 3 servers
    .venv/bin/python bench/lsp_latency.py --file PATH --rounds 5 --changes 10

Each round starts its own `python -m auditor server` (this checkout's interpreter, bytecode
compiled first, PYTHONDONTWRITEBYTECODE unset) in a scratch folder holding a copy of the file, and
talks raw JSON-RPC to it over stdio (no client library):

- *cold*: `didOpen` to `publishDiagnostics`, the first check of a fresh server (it loads the rules,
  the catalogue and libcst then);
- *warm*: `didChange` (a full-text edit: one line appended) to `publishDiagnostics` of that version,
  for each of --changes edits sent one at a time; this includes the server's debounce (DEBOUNCE,
  0.15 s), and *warm - debounce* subtracts it;
- *CLI*: `audit - --stdin-filename FILE` on the same text, a whole process each time (what an
  editor integration without the server pays per check).

Medians over the rounds (warm: over every change of every round). Numbers on a shared machine move
with the load; compare them side by side."""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PUBLISH = "textDocument/publishDiagnostics"
BLOCK = '''

def step_{n}(model, batch, th=torch):
    """One step: the model on the GPU, then a synchronisation (lock-in every few lines)."""
    model = model.cuda()
    x = batch.to("cuda")  # device pinned to CUDA
    with torch.cuda.amp.autocast():
        y = model(x)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    total = sum(p.numel() for p in model.parameters())
    return y, peak, total
'''


def generated(lines: int = 1000) -> str:
    """A Python file of `lines` lines with a finding every few lines, like a training script."""
    text, n = "import torch\nimport torch.nn as nn\n", 0
    while text.count("\n") + BLOCK.count("\n") <= lines:
        text += BLOCK.format(n=n)
        n += 1
    return text + "\n" * (lines - text.count("\n"))


class Server:
    """`audit server` as a process, with a thread reading its messages into a queue."""

    def __init__(self, python: str, cwd: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.process = subprocess.Popen([python, "-m", "auditor", "server"], cwd=cwd, env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.messages: queue.Queue[dict] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = 0
            while (header := stream.readline()) not in (b"\r\n", b""):
                if header.lower().startswith(b"content-length:"):
                    length = int(header.split(b":")[1])
            if not header:
                return
            self.messages.put(json.loads(stream.read(length)))

    def send(self, method: str, params: dict | None, request: bool = False) -> None:
        body: dict = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            body["id"] = self.next_id
        data = json.dumps(body).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(data), data))
        self.process.stdin.flush()

    def wait(self, check: object, timeout: float = 120) -> dict:
        end = time.monotonic() + timeout
        while True:
            message = self.messages.get(timeout=max(0.01, end - time.monotonic()))
            if check(message):  # type: ignore[operator]
                return message

    def published(self, uri: str, version: int) -> dict:
        return self.wait(lambda m: m.get("method") == PUBLISH and m["params"]["uri"] == uri
                         and m["params"].get("version") == version)

    def close(self) -> None:
        self.send("shutdown", None, request=True)
        self.send("exit", None)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


def one_round(python: str, folder: Path, name: str, text: str, changes: int) -> tuple[float, list[float], int]:
    """(cold seconds, warm seconds per change, diagnostics of the first check) of one fresh server."""
    server = Server(python, folder)
    try:
        server.send("initialize", {"processId": os.getpid(), "rootUri": folder.as_uri(), "capabilities": {}},
                    request=True)
        server.wait(lambda m: m.get("id") == 1)
        server.send("initialized", {})
        uri = (folder / name).as_uri()
        start = time.perf_counter()
        server.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                              "text": text}})
        first = server.published(uri, 1)
        cold = time.perf_counter() - start
        warm = []
        for version in range(2, changes + 2):
            text += f"edited_{version} = {version}\n"
            start = time.perf_counter()
            server.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                   "contentChanges": [{"text": text}]})
            server.published(uri, version)
            warm.append(time.perf_counter() - start)
        return cold, warm, len(first["params"]["diagnostics"])
    finally:
        server.close()


def cli_seconds(python: str, folder: Path, name: str, text: str) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    subprocess.run([python, "-m", "auditor", "-", "--stdin-filename", name, "--format", "json"], cwd=folder,
                   input=text.encode(), env=env, capture_output=True, check=False, timeout=120)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, help="the file to open (default: a generated 1,000-line script)")
    parser.add_argument("--rounds", type=int, default=3, help="fresh servers (cold measurements)")
    parser.add_argument("--changes", type=int, default=8, help="edits per server (warm measurements)")
    parser.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"))
    args = parser.parse_args()
    from auditor.lsp.server import DEBOUNCE

    text = args.file.read_text(encoding="utf-8") if args.file else generated()
    name = args.file.name if args.file else "train.py"
    subprocess.run([args.python, "-m", "compileall", "-q", str(ROOT / "auditor")], check=True,
                   env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
    folder = Path(tempfile.mkdtemp(prefix="lsp-latency-"))
    try:
        (folder / name).write_text(text, encoding="utf-8")
        colds, warms, clis, shown = [], [], [], 0
        for _ in range(args.rounds):
            cold, warm, shown = one_round(args.python, folder, name, text, args.changes)
            colds.append(cold)
            warms += warm
            clis.append(cli_seconds(args.python, folder, name, text))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"{name}: {text.count(chr(10)):,} lines, {len(text.encode()):,} bytes, {shown} diagnostics; "
          f"{args.rounds} servers, {len(warms)} changes (medians, seconds)")
    print(f"cold (didOpen, fresh server)   {statistics.median(colds):.3f}")
    print(f"warm (didChange)               {statistics.median(warms):.3f}")
    print(f"warm - debounce ({DEBOUNCE} s)      {statistics.median(warms) - DEBOUNCE:.3f}")
    print(f"CLI `audit - --stdin-filename` {statistics.median(clis):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
