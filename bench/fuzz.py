"""Fuzz `audit` with mutated real files: no crash, no hang, serial == parallel.

    python bench/fuzz.py [--corpus DIR] [--files 10000] [--seed 7] [--jobs 2] [--timeout 1800]
                         [--per-kind 200] [--configs 150]

The corpus is found as bench/run_bench.py finds it ($LOCKIN_CORPUS, ../corpus/c, bench/.corpus/c).

Copies a seeded sample of the files audit reads from the corpus into a temporary folder (the
corpus is never written): `--files` of them, plus at least `--per-kind` of every other kind the
corpus holds (YAML, JSON configs, shell, notebooks, Dockerfiles, ...), plus as many generated
notebooks, Dockerfiles, YAML and TOML training configs built from the sampled files' lines, so that
every reader is fuzzed even where the corpus has few files of its kind. Each file is mutated:
bytes for all (flips, cut and duplicated slices, truncation, lone CRs, NULs, BOMs, bad UTF-8,
coding cookies, form feeds and line separators, unterminated strings and comments, deep brackets
and long operator, `and`, `lambda` and conditional chains, bytes spliced in from another file),
and by its structure for notebooks (cell sources of every type, magics and `!` lines with
continuations, separators and lone-surrogate escapes in cells, thousands of cells, deep metadata),
YAML (alias bombs, deep nesting, Python tags, merge keys, many documents), Dockerfiles
(continuations to the end, unterminated heredocs, `# escape=` directives, exec forms with escaped
words, stage cycles) and TOML (long dotted keys and headers, deep arrays, huge numbers, odd
escapes). It then runs the real command line twice, `--jobs 1` and `--jobs N`, each in its own
process with a deadline and its own string-hash seed (PYTHONHASHSEED, so a report that follows
set order shows), and prints crashes (a signal, a traceback, an exit code other than 0 or 1, an
`internal` error entry), hangs (the deadline), the error entries by kind, and whether the two
JSON reports are identical once their run-specific `run` object is set aside.

Last, `--configs` runs on a small tree of the mutated files, each with a mutated configuration
(`lockin-auditor.toml` or a pyproject.toml table: wrong types, unknown keys, huge lists, long
strings, baselines that are devices or links out, torch versions of thousands of digits, deep
TOML): each must exit 0 or 1, or 2 with exactly one `audit: error:` line, within its deadline.
Exit code 1 when any crash, hang or difference was seen."""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from auditor.discover.files import name_kind  # noqa: E402  (after the path)

_RUN = re.compile(r'\n  "run": \{[^\n]*\},?')


def sample(corpus: Path, count: int, rng: random.Random, per_kind: int = 0) -> list[Path]:
    """`count` files audit reads, chosen with `rng` from the sorted list (so a seed is a sample),
    plus up to `per_kind` of every kind but Python among those not chosen."""
    found: dict[str, list[Path]] = {}
    for folder, dirs, names in os.walk(corpus):
        dirs.sort()
        parent = os.path.basename(folder)
        for name in sorted(names):
            kind = name_kind(name, False, parent)
            if kind is not None:
                found.setdefault(kind, []).append(Path(folder) / name)
    every = sorted(path for paths in found.values() for path in paths)
    chosen = set(rng.sample(every, min(count, len(every))))
    for kind in sorted(found):
        if kind != "python":
            rest = [p for p in found[kind] if p not in chosen]
            chosen.update(rng.sample(rest, min(per_kind, len(rest))))
    return sorted(chosen)


def _chain(rng: random.Random) -> bytes:
    n = rng.choice([50, 300, 1200, 3000, 8000])
    return rng.choice([
        b"(" * min(n, 400) + b"x" + b")" * min(n, 400),
        b"x = (" + b" and\n".join([b"a"] * n) + b")\n",
        b"x = " + b"lambda: " * n + b"1\n",
        b"x = (" + b" if c else\n".join([b"a"] * n) + b")\n",
        b"x = a" + b".b()" * n + b"\n",
        b"x = a" + b" + a" * n + b"\n",
        b"x = " + b"not " * n + b"a\n",
        b"x = " + b"-" * n + b"1\n",
        b"[" + b" " * n + b"\n",
        b"/*" * n,
        b'"\\' * n,
    ])


# -- seeds for the kinds the corpus has few of -------------------------------------------------------

def _lines(data: bytes, rng: random.Random, count: int) -> list[str]:
    text = data.decode("utf-8", "replace").split("\n")
    start = rng.randrange(max(1, len(text)))
    return text[start:start + count]


def make_notebook(code: bytes, rng: random.Random) -> bytes:
    lines = _lines(code, rng, 80)
    cells, current = [], []
    for line in lines:
        current.append(line + "\n")
        if rng.random() < 0.15:
            cells.append(current)
            current = []
    cells.append(current or ["import torch\n"])
    notebook = {"cells": [{"cell_type": rng.choice(["code", "code", "markdown", "raw"]), "execution_count": None,
                           "metadata": {}, "outputs": [], "source": cell if rng.random() < 0.7 else "".join(cell)}
                          for cell in cells], "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4,
                "nbformat_minor": 5}
    return json.dumps(notebook, indent=rng.choice([1, 2, None])).encode()


def make_dockerfile(lines: bytes, rng: random.Random) -> bytes:
    packages = [line.strip() for line in _lines(lines, rng, 20) if line.strip() and not line.startswith("#")][:8]
    base = rng.choice(["nvidia/cuda:12.1.0-cudnn8-devel-ubuntu22.04", "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime",
                       "python:3.11-slim", "${BASE}", "rocm/pytorch:latest"])
    body = [f"ARG BASE={base}", f"FROM {base} AS build", "ENV NCCL_DEBUG=INFO CUDA_VISIBLE_DEVICES=0",
            "RUN pip install --index-url https://download.pytorch.org/whl/cu121 \\", *[f"    {p} \\" for p in packages],
            "    torch", 'RUN ["nvidia-smi", "-L"]', "COPY . /app", "FROM build", "CMD torchrun --nproc_per_node=8 train.py"]
    return ("\n".join(body) + "\n").encode()


def make_yaml(lines: bytes, rng: random.Random) -> bytes:
    words = [w for w in re.findall(r"[A-Za-z_]\w{2,20}", lines.decode("utf-8", "replace"))][:30] or ["model"]
    items = "".join(f"  {w}: {rng.choice(['cuda', 'cuda:0', 'gpu', 'nccl', 1, 'true', '[1, 2]'])}\n" for w in words)
    return rng.choice([
        f"trainer:\n  accelerator: gpu\n  devices: 8\n  strategy: ddp\n{items}",
        f"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - image: nvcr.io/nvidia/pytorch:24.01-py3\n"
        f"    resources:\n      limits:\n        nvidia.com/gpu: 1\n  runtimeClassName: nvidia\n{items}",
        f"compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nmixed_precision: fp16\n{items}",
    ]).encode()


def make_toml(lines: bytes, rng: random.Random) -> bytes:
    words = [w for w in re.findall(r"[A-Za-z_]\w{2,20}", lines.decode("utf-8", "replace"))][:30] or ["model"]
    return ('[trainer]\ndevice = "cuda"\nbackend = "nccl"\n' + "".join(
        f'{w} = "{rng.choice(["cuda:0", "gpu", "cpu", "1"])}"\n' for w in words) + "[model.optim]\nlr = 1e-4\n").encode()


# Generated seeds: (file name, folder, builder). Folders make the kinds (conf/ for TOML configs).
GENERATED = [("generated.ipynb", "notebooks", make_notebook), ("Dockerfile", "docker", make_dockerfile),
             ("train.yaml", "configs", make_yaml), ("train.toml", "conf", make_toml)]


# -- mutations by structure ---------------------------------------------------------------------------

def mutate_notebook(data: bytes, rng: random.Random) -> bytes:
    try:
        notebook = json.loads(data)
    except ValueError:
        return data
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return data
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(8)
        cell = cells[rng.randrange(len(cells))] if cells and isinstance(cells[0], dict) else None
        if kind == 0 and cell is not None:  # magics, shell lines and their continuations
            cell["source"] = rng.choice(["!pip install -q torch \\\n  --index-url https://download.pytorch.org/whl/cu121\n",
                                         "%%bash\nnvidia-smi\nexport NCCL_DEBUG=INFO\n", "%env CUDA_VISIBLE_DEVICES=0\n",
                                         "%%time\nimport torch\ntorch.cuda.synchronize()\n", "x = !nvidia-smi -L\n",
                                         "torch.cuda?\n", "%pip install cupy-cuda12x \\\n"]) + "".join(cell.get("source") or "")
        elif kind == 1 and cell is not None:  # the source in every shape
            cell["source"] = rng.choice([None, 5, ["a", 1], {"x": 1}, [], "", ["\n"] * 3000])
        elif kind == 2 and cell is not None:  # line separators, form feeds, NEL inside a line
            cell["source"] = rng.choice(["\u2028", "\x0c", "\x85", "\x1c", "\r"]).join(
                ["import torch", "torch.cuda.synchronize()", "m.cuda()"])
        elif kind == 3:  # many cells
            cells.extend({"cell_type": "code", "metadata": {}, "source": "x = 1\n", "outputs": []}
                         for _ in range(rng.choice([100, 3000])))
        elif kind == 4:  # deep metadata
            deep: object = 1
            for _ in range(rng.choice([100, 3000])):
                deep = [deep]
            notebook["metadata"] = {"deep": deep}
        elif kind == 5 and cell is not None:
            cell["cell_type"] = rng.choice([None, 3, "code", "markdown", ["code"]])
        elif kind == 6:
            rng.shuffle(cells)
    try:
        text = json.dumps(notebook, indent=rng.choice([1, None]), ensure_ascii=rng.random() < 0.5)
    except (ValueError, RecursionError):
        return data
    if rng.random() < 0.3:  # a lone surrogate, as JSON can escape one
        text = text.replace("torch", "torch\\ud800", 1)
    return text.encode("utf-8", "surrogatepass")


def mutate_yaml(data: bytes, rng: random.Random) -> bytes:
    depth = rng.choice([50, 500, 5000])
    extra = rng.choice([
        b"a: &a [x, x, x, x, x, x, x, x, x, x]\n" + b"".join(
            b"%c: &%c [" % (98 + i, 98 + i) + b", ".join([b"*%c" % (97 + i)] * 10) + b"]\n" for i in range(8)),
        b"x: " + b"[" * depth + b"]" * depth + b"\n",
        b"x: " + b"{a: " * depth + b"1" + b"}" * depth + b"\n",
        b"x: !!python/object/apply:os.system ['touch /tmp/pwned-by-yaml']\n",
        b"base: &base {device: cuda}\nother:\n  <<: *base\n  backend: nccl\n",
        b"---\ndevice: cuda\n" * rng.choice([10, 2000]),
        b"\tdevice:\tcuda\n", b"key: " + b"cuda " * 20000 + b"\n", b"? [a, b]\n: cuda\n",
        b"x: *undefined\n", b"%YAML 9.9\n---\ndevice: cuda\n",
    ])
    at = rng.randint(0, len(data))
    return data[:at] + b"\n" + extra + data[at:]


def mutate_dockerfile(data: bytes, rng: random.Random) -> bytes:
    n = rng.choice([10, 1000, 20000])
    extra = rng.choice([
        b"RUN echo a \\\n" + b"  && echo b \\\n" * n,  # a continuation to the end of the file
        b"RUN <<EOF\npip install torch\n",  # an unterminated heredoc
        b"# escape=`\nRUN echo a `\n  nvidia-smi\n",
        b'RUN ["' + b'", "'.join([b"\\u0061"] * n) + b'", "nvidia-smi"]\n',
        b"FROM a AS b\nFROM b AS a\nFROM a\n", b"ARG A=${B}\nARG B=${A}\nFROM ${A}\n",
        b"ENV " + b" ".join(b"K%d=v" % i for i in range(n)) + b"\n", b"RUN " + b"x" * 200000 + b"\n",
        b"FROM --platform=$BUILDPLATFORM nvidia/cuda:12.1.0-base AS x\n", b"RUN [\"unterminated\n",
    ])
    at = rng.randint(0, len(data))
    return data[:at] + b"\n" + extra + data[at:]


def mutate_toml(data: bytes, rng: random.Random) -> bytes:
    n = rng.choice([10, 100, 50000])
    extra = rng.choice([
        b"[" + b".".join([b"a"] * n) + b"]\n", b".".join([b"k"] * n) + b" = 1\n",
        b"x = " + b"[" * min(n, 5000) + b"]" * min(n, 5000) + b"\n", b"x = {" + b" . ".join([b"a"] * n) + b" = 1}\n",
        b"x = " + b"9" * n + b"\n", b'x = "\\uD800"\n', b'x = """' + b"\\\n" * n + b'"""\n',
        b"[[a]]\n" * n, b'device = "cuda"\ndevice = "cpu"\n', b"x = 1979-05-27T07:32:00Z\n",
    ])
    at = rng.randint(0, len(data))
    return data[:at] + b"\n" + extra + data[at:]


STRUCTURED = {"notebook": mutate_notebook, "yaml": mutate_yaml, "compose": mutate_yaml, "conda": mutate_yaml,
              "dockerfile": mutate_dockerfile, "toml-config": mutate_toml, "pyproject": mutate_toml}


def mutate_kind(kind: str | None, data: bytes, donor: bytes, rng: random.Random) -> bytes:
    """A structure-aware mutation for the kinds that have one (most of the time), then bytes."""
    structured = STRUCTURED.get(kind or "")
    if structured is not None and rng.random() < 0.8:
        data = structured(data, rng)
        return mutate(data, donor, rng) if rng.random() < 0.3 else data
    return mutate(data, donor, rng)


def mutate(data: bytes, donor: bytes, rng: random.Random) -> bytes:
    """One to three mutations of `data`."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        size = len(out)
        at = rng.randint(0, size) if size else 0
        kind = rng.randrange(14)
        if kind == 0 and size:  # flip bytes
            for _ in range(rng.randint(1, 8)):
                out[rng.randrange(size)] = rng.randrange(256)
        elif kind == 1 and size:  # cut a slice
            end = min(size, at + rng.randint(1, 400))
            del out[at:end]
        elif kind == 2 and size:  # duplicate a slice
            end = min(size, at + rng.randint(1, 400))
            out[at:at] = out[at:end] * rng.randint(1, 20)
        elif kind == 3:  # truncate
            del out[at:]
        elif kind == 4:  # line ends
            out = bytearray(bytes(out).replace(b"\n", rng.choice([b"\r", b"\r\n", b"\n\r", b"\x0c\n"])))
        elif kind == 5:
            out[at:at] = rng.choice([b"\x00", b"\xff\xfe", b"\xef\xbb\xbf", b"\xc3\x28", b"\xed\xa0\x80", b"\x85",
                                     "\u2028".encode(), b"\x0c", b"\x1c", b"\x0b"])
        elif kind == 6:  # coding cookies, good and bad
            cookie = rng.choice([b"# -*- coding: latin-1 -*-\n", b"# coding: klingon\n", b"# vim: set fileencoding=utf-16 :\n",
                                 b"#!/usr/bin/env python\r# coding: cp1252\r"])
            out[0:0] = cookie
        elif kind == 7:  # unterminated literals and comments
            out[at:at] = rng.choice([b'"""', b"'''", b'"', b"/*", b"#", b"\\", b"[", b"{", b"(", b"f'{"])
        elif kind == 8:
            out[at:at] = _chain(rng)
        elif kind == 9 and donor:  # splice another file in
            start = rng.randrange(len(donor))
            out[at:at] = donor[start:start + rng.randint(1, 2000)]
        elif kind == 10:  # lock-in text in odd places
            out[at:at] = rng.choice([b"torch.cuda.synchronize()\n", b"x.cuda()", b"\n-r ../outside.txt\n",
                                     b"\n-r /dev/zero\n", b"nvidia-cudnn-cu12\n", b"# lockin: ignore\n"])
        elif kind == 11:  # tabs and indentation
            out = bytearray(bytes(out).replace(b"    ", rng.choice([b"\t", b"  \t", b" " * 9])))
        elif kind == 12 and size:  # swap halves
            out = out[at:] + out[:at]
        else:  # nothing: some files stay as they were
            pass
    return bytes(out)


# -- configurations ----------------------------------------------------------------------------------

CONFIG = """select = ["LK1", "LK2", "LK5", "LK6"]
ignore = ["LK216"]
exclude = ["build/", "*.gen.py"]
fail-under = 50
torch-version = "2.4"
respect-gitignore = true

[per-file-ignores]
"tests/*" = ["LK1"]

[severity]
LK102 = "minor"

[catalogue]
gpu-only-packages = ["acme-cuda", {name = "acme-kernels", rule = "nvidia-only-runtime-package"}]
gpu-only-modules = ["acme_kernels"]
"""


def mutate_config(rng: random.Random) -> str:
    """A configuration with up to three hostile changes (some within the limits: the run goes on)."""
    text = CONFIG
    for _ in range(rng.randint(0, 3)):
        kind = rng.randrange(10)
        n = rng.choice([10, 900, 2000, 50000])
        if kind == 0:  # a value of the wrong type
            key = rng.choice(["select", "ignore", "exclude", "fail-under", "torch-version", "respect-gitignore"])
            text = re.sub(rf"^{key} = .*$", f"{key} = {rng.choice(['1', 'true', '{a = 1}', '[[1]]', 'nan', 'inf'])}",
                          text, flags=re.M)
        elif kind == 1:  # long lists
            key = rng.choice(["select", "ignore", "exclude", "gpu-only-packages", "gpu-only-modules"])
            values = ", ".join(f'"LK{100 + i % 9}"' if key in ("select", "ignore") else f'"x{i}"' for i in range(n))
            text = re.sub(rf"^{key} = .*$", f"{key} = [{values}]", text, flags=re.M)
        elif kind == 2:  # unknown keys and tables
            text += rng.choice(["\nunknown = 1\n", "\n[unknown]\nx = 1\n", '\n[catalogue.extra]\nx = "y"\n'])
        elif kind == 3:  # long strings
            text = text.replace('"build/"', '"' + "b" * n + '"')
        elif kind == 4:  # versions of thousands of digits
            text = re.sub(r'^torch-version = .*$', f'torch-version = "2.{"9" * n}"', text, flags=re.M)
        elif kind == 5:  # baselines that are no file to read
            text = 'baseline = "' + rng.choice(["/dev/zero", "../outside.json", "", "pipe.json", "link.json", "."]) + '"\n' + text
        elif kind == 6:  # deep TOML, long dotted keys
            text += rng.choice(["\nx = " + "[" * n + "]" * n + "\n", "\n" + ".".join(["k"] * n) + " = 1\n"])
        elif kind == 7:  # many per-file-ignores
            text = text.replace('"tests/*" = ["LK1"]', "\n".join(f'"g{i}/*" = ["LK1"]' for i in range(n)))
        elif kind == 8:  # severities of unknown codes and values
            text = text.replace('LK102 = "minor"', rng.choice(['LK999 = "minor"', 'LK102 = "fatal"', "LK102 = 1"]))
        else:  # bytes
            text = mutate(text.encode(), b"", rng).decode("utf-8", "replace")
    return text


def config_runs(tree: Path, work: Path, count: int, rng: random.Random, timeout: float) -> int:
    """Runs on a small copy of the mutated tree, each with its own mutated configuration."""
    small = work / "small"
    files = sorted(p for p in tree.rglob("*") if p.is_file())
    for path in rng.sample(files, min(30, len(files))):
        target = small / path.relative_to(tree)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    (small / ".git").mkdir(exist_ok=True)
    os.mkfifo(small / "pipe.json")
    (small / "link.json").symlink_to("/etc/hostname")
    failures, codes, reasons = 0, Counter(), Counter()
    for index in range(count):
        text = mutate_config(rng)
        if rng.random() < 0.3:  # the same table in a pyproject.toml
            text = "[tool.lockin-auditor]\n" + re.sub(r"^\[", "[tool.lockin-auditor.", text, flags=re.M)
            name, other = "pyproject.toml", "lockin-auditor.toml"
        else:
            name, other = "lockin-auditor.toml", "pyproject.toml"
        (small / other).unlink(missing_ok=True)
        (small / name).write_text(text, encoding="utf-8")
        outcome = run([".", "--format", "json", "--no-cache", "--jobs", "1", "-o", str(work / "config.json")], small,
                      timeout, index)
        codes[outcome["code"]] += 1
        if outcome["code"] == 2:
            reasons[re.sub(r"\S*(lockin-auditor\.toml|pyproject\.toml)( \[tool\.lockin-auditor\])?:? ?", "",
                           outcome["stderr"].strip().removeprefix("audit: error: "))[:50]] += 1
        problems = crashed(outcome, config=True)
        if problems:
            failures += 1
            print(f"config {index}: {', '.join(problems)}\n{outcome['stderr'][-1000:]}")
    print(f"configurations: {count} runs, exit codes {dict(sorted(codes.items()))}, {failures} with problems; "
          f"exit 2 for: {dict(reasons.most_common(8))}")
    return failures


def run(args: list[str], cwd: Path, timeout: float, hash_seed: int) -> dict:
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": str(hash_seed)}
    proc = subprocess.Popen([sys.executable, "-m", "auditor", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
        hung = False
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        hung = True
    return {"code": proc.returncode, "hung": hung, "stdout": out, "stderr": err.decode("utf-8", "replace"),
            "seconds": time.perf_counter() - start}


def crashed(outcome: dict, config: bool = False) -> list[str]:
    """What went wrong with a run; with `config`, a configuration error (exit 2 and one line) is fine."""
    problems = []
    if outcome["hung"]:
        problems.append("hung (deadline)")
    elif outcome["code"] == 2 and config:
        errors = [line for line in outcome["stderr"].splitlines() if line.startswith("audit: error:")]
        if len(errors) != 1:
            problems.append("exit 2 without exactly one `audit: error:` line")
    elif outcome["code"] not in (0, 1):
        problems.append(f"exit code {outcome['code']}")
    if "Traceback" in outcome["stderr"] or "internal error" in outcome["stderr"]:
        problems.append("traceback or internal error on stderr")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=None, help="default: the benchmark corpus")
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=1800, help="deadline per audit run, in seconds")
    parser.add_argument("--per-kind", type=int, default=200,
                        help="at least this many files of every other kind, and as many generated ones")
    parser.add_argument("--configs", type=int, default=150, help="runs with a mutated configuration")
    parser.add_argument("--keep", action="store_true", help="keep the mutated tree and the reports")
    options = parser.parse_args()
    if options.corpus is None:
        sys.path.insert(0, str(ROOT / "bench"))
        from run_bench import corpus_dir

        options.corpus = corpus_dir()
    if not options.corpus.is_dir():
        print(f"corpus not found: {options.corpus}", file=sys.stderr)
        return 2
    rng = random.Random(options.seed)
    chosen = sample(options.corpus, options.files, rng, options.per_kind)
    work = Path(tempfile.mkdtemp(prefix="lockin-fuzz-"))
    tree = work / "tree"
    kinds: Counter = Counter()
    for path in chosen:
        data = path.read_bytes()
        donor = chosen[rng.randrange(len(chosen))].read_bytes()
        target = tree / path.relative_to(options.corpus)
        target.parent.mkdir(parents=True, exist_ok=True)
        kind = name_kind(path.name, False, path.parent.name)
        target.write_bytes(mutate_kind(kind, data, donor, rng))
        kinds[kind] += 1
    for index in range(options.per_kind):  # every reader, whatever the corpus holds
        for name, folder, build in GENERATED:
            donor = chosen[rng.randrange(len(chosen))].read_bytes()
            target = tree / "generated" / str(index) / folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            kind = name_kind(name, False, folder)
            target.write_bytes(mutate_kind(kind, build(donor, rng), donor, rng))
            kinds[f"generated {kind}"] += 1
    print(f"seed {options.seed}: {sum(kinds.values())} files mutated into {tree} ({dict(sorted(kinds.items()))})")

    reports = {}
    failures = 0
    # Each run with its own string-hash seed: a report that follows set order differs between them.
    for label, jobs, hash_seed in (("serial", 1, 1), ("parallel", options.jobs, 2)):
        output = work / f"{label}.json"
        outcome = run([str(tree), "--format", "json", "--no-cache", "--jobs", str(jobs), "-o", str(output)],
                      work, options.timeout, hash_seed)
        problems = crashed(outcome)
        print(f"{label} (--jobs {jobs}): exit {outcome['code']} in {outcome['seconds']:.0f} s"
              + (f"; PROBLEMS: {', '.join(problems)}" if problems else ""))
        if problems:
            failures += 1
            print(outcome["stderr"][-2000:])
        reports[label] = output.read_text(encoding="utf-8") if output.exists() else ""

    serial = json.loads(reports["serial"]) if reports["serial"] else {}
    errors = serial.get("errors", [])
    by_kind = Counter(e["kind"] for e in errors)
    internal = [e for e in errors if e["kind"] in ("internal", "crash", "timeout")]
    print(f"findings {len(serial.get('findings', []))}, error entries {len(errors)} in "
          f"{len({e['path'] for e in errors})} files: {dict(sorted(by_kind.items()))}")
    for entry in internal[:20]:
        print(f"  {entry['kind']}: {entry['path']}: {entry['message']}")
    failures += sum(1 for e in internal if e["kind"] == "internal")
    same = _RUN.sub("", reports["serial"]) == _RUN.sub("", reports["parallel"]) != ""
    print(f"serial and parallel reports identical (apart from `run`): {'yes' if same else 'NO'}")
    failures += not same
    if options.configs:
        failures += config_runs(tree, work, options.configs, rng, min(options.timeout, 300))
    if options.keep:
        print(f"kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
