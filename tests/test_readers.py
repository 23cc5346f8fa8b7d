"""The non-Python readers end to end (discovery, gate, reader, rules, suppressions, positions):
Dockerfiles, shell and Slurm scripts, compose, Kubernetes/Helm and config YAML, conda, JSON and
TOML configs, notebooks; and what bad input of each kind becomes."""

from __future__ import annotations

import json

import pytest

from auditor.checks.base import notebook_example
from auditor.cli import main


def found(result, rule=None):
    return sorted((f.path, f.cell, f.line, f.column, f.end_line, f.end_column, f.rule) for f in result.findings
                  if rule is None or f.rule == rule)


def errors(result):
    return sorted((e.path, e.kind) for e in result.errors)


# -- Dockerfile ---------------------------------------------------------------------------------------
DOCKERFILE = """\
# syntax=docker/dockerfile:1
# FROM nvidia/cuda:12.1.0-devel-ubuntu22.04
ARG BASE=nvidia/cuda:11.8.0-devel-ubuntu22.04
FROM ${BASE} AS build
ENV FORCE_CUDA=1 \\
    TORCH_CUDA_ARCH_LIST="7.0 8.0"
RUN apt-get update && \\
    # comment inside the continuation
    pip install --index-url https://download.pytorch.org/whl/nightly/cu118 \\
        torch "flash-attn==2.5.8"
RUN <<EOF
nvidia-smi
EOF
FROM python:3.11-slim
CMD ["python", "serve.py"]
"""


def test_dockerfile_positions(scan_source):
    result = scan_source({"Dockerfile": DOCKERFILE})
    assert errors(result) == []
    assert found(result) == [
        ("Dockerfile", None, 4, 6, 4, 13, "LK509"),  # FROM ${BASE}: the image of the build argument
        ("Dockerfile", None, 5, 5, 5, 17, "LK602"),  # FORCE_CUDA=1
        ("Dockerfile", None, 6, 5, 6, 35, "LK602"),  # TORCH_CUDA_ARCH_LIST="7.0 8.0"
        ("Dockerfile", None, 9, 29, 9, 75, "LK502"),  # the nightly cu118 index
        ("Dockerfile", None, 10, 15, 10, 34, "LK504"),  # "flash-attn==2.5.8", quotes included
        ("Dockerfile", None, 12, 1, 12, 11, "LK603"),  # nvidia-smi in the heredoc body
    ]


def test_dockerfile_cpu_image_and_comments_are_not_findings(scan_source):
    text = "# FROM nvidia/cuda:12.1.0-base\nFROM python:3.11-slim\n# RUN pip install flash-attn\nRUN echo nvidia-smi\n"
    assert found(scan_source({"docker/Dockerfile.cpu": text})) == []


@pytest.mark.parametrize("text", ["FROM nvidia/cuda:12.1.0-base\nRUN pip install flash-attn \\\n",
                                  "FROM nvidia/cuda:12.1.0-base\nRUN <<EOF\npip install flash-attn\n"])
def test_dockerfile_unterminated_continuation_or_heredoc(scan_source, text):
    result = scan_source({"Dockerfile": text, "a.py": "import torch\nx.cuda()\n"})
    assert errors(result) == [("Dockerfile", "parse")]
    assert ("Dockerfile", None, 1, 6, 1, 29, "LK509") in found(result)  # what came before still counts
    assert any(f.path == "a.py" for f in result.findings)


def test_dockerfile_suppression(scan_source):
    text = ("FROM nvidia/cuda:12.1.0-base  # lockin: ignore[LK509]\nFROM nvcr.io/nvidia/pytorch:24.01-py3\n"
            "# lockin: ignore[nvidia-base-image]\nFROM nvidia/cuda:12.4.1-base\n"
            "# lockin: ignore[LK602]\nFROM nvidia/cuda:12.4.1-runtime\n")
    # line 5 names a rule with nothing to silence below it: that is itself a finding (LK001)
    assert [(f[2], f[6]) for f in found(scan_source({"Dockerfile": text}))] == [(2, "LK509"), (5, "LK001"),
                                                                               (6, "LK509")]


# -- alternatives and the score -------------------------------------------------------------------------
def test_cuda_only_image_makes_a_clean_repository_fail_elsewhere(scan_source):
    from auditor.portability.score import compute_scores

    result = scan_source({"app.py": "import torch\nx = torch.ones(2)\n", "Dockerfile": "FROM nvidia/cuda:12.1.0-base\n"})
    image = [f for f in result.findings if f.rule == "LK509"]
    assert image and set(image[0].targets.values()) == {"raises"}
    scores = compute_scores(result.findings)
    assert all(score < 100 for score in scores.targets.values())


def test_an_alternative_image_in_the_repository_serves_its_target(scan_source):
    files = {"docker/Dockerfile": "FROM nvidia/cuda:12.1.0-base\n",
             "docker/Dockerfile.rocm": "FROM rocm/pytorch:latest\n",
             "docker/Dockerfile.cpu": "FROM nvidia/cuda:12.1.0-base AS build\nFROM python:3.11-slim\n"}
    result = scan_source(files)
    targets = {f.path: f.targets for f in result.findings if f.rule == "LK509"}
    assert set(targets) == {"docker/Dockerfile", "docker/Dockerfile.cpu"}
    for effects in targets.values():
        assert effects["rocm"] == effects["cpu"] == "works"
        assert effects["tpu"] == effects["xpu"] == "raises"


# -- shell and Slurm -----------------------------------------------------------------------------------
SLURM = """\
#!/bin/bash
#SBATCH --job-name=train
#SBATCH --gres=gpu:8
export NCCL_DEBUG=INFO   # lockin: ignore[LK304]
export NCCL_IB_DISABLE=1
NGPU=$(nvidia-smi -L | wc -l)
echo "CUDA_VISIBLE_DEVICES=0 nvidia-smi --gres=gpu"
srun torchrun --nproc_per_node=gpu train.py
"""


def test_slurm_script(scan_source):
    result = scan_source({"jobs/train.slurm": SLURM})
    assert errors(result) == []
    assert found(result) == [
        ("jobs/train.slurm", None, 3, 9, 3, 21, "LK306"),  # the option, not the marker
        ("jobs/train.slurm", None, 5, 8, 5, 25, "LK304"),
        ("jobs/train.slurm", None, 6, 8, 6, 21, "LK603"),
        ("jobs/train.slurm", None, 8, 15, 8, 35, "LK306"),
    ]


def test_binary_shell_script_is_an_error(scan_source):
    result = scan_source({"run.sh": b"#!/bin/sh\n\x00\x01\x02nvidia-smi\n", "b.sh": "nvidia-smi\n"})
    assert errors(result) == [("run.sh", "binary")]
    assert [f[0] for f in found(result)] == ["b.sh"]


# -- YAML: compose, manifests, configs, conda ---------------------------------------------------------
def test_compose_file(scan_source):
    text = ("services:\n  train:\n    image: nvcr.io/nvidia/pytorch:24.01-py3\n    runtime: nvidia\n"
            "    environment:\n      - NVIDIA_VISIBLE_DEVICES=all\n    deploy:\n      resources:\n        reservations:\n"
            "          devices:\n            - driver: nvidia\n              capabilities: [gpu]\n")
    assert [(f[2], f[6]) for f in found(scan_source({"docker-compose.yml": text}))] == [
        (3, "LK509"), (4, "LK605"), (6, "LK601"), (11, "LK605")]


def test_compose_image_default_is_the_image(scan_source):
    text = "services:\n  app:\n    image: ${APP_IMAGE:-nvcr.io/nvidia/pytorch:24.01-py3}\n"
    result = scan_source({"compose.yml": text})
    assert [(f[2], f[6]) for f in found(result)] == [(3, "LK509")]
    assert "(the default of a build argument)" in result.findings[0].message


def test_helm_template_is_read_around_its_directives(scan_source):
    text = ("apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n"
            "        - name: {{ .Chart.Name }}\n          image: \"{{ .Values.image }}\"\n          resources:\n"
            "            limits:\n              {{- if .Values.gpu }}\n              nvidia.com/gpu: {{ .Values.gpu }}\n"
            "              {{- end }}\n")
    result = scan_source({"charts/app/templates/deployment.yaml": text})
    assert errors(result) == []
    assert [(f[2], f[3], f[6]) for f in found(result)] == [(12, 15, "LK605")]


def test_config_key_that_merely_contains_the_word(scan_source):
    text = ("trainer:\n  accelerator: gpu\n  device_path: cuda\nmodel:\n  device: /data/cuda/model.bin\n"
            "  description: \"device: cuda\"\n# device: cuda\n")
    assert [(f[2], f[3], f[6]) for f in found(scan_source({"configs/train.yaml": text}))] == [(2, 3, "LK105")]


def test_yaml_without_hardware_words_is_never_parsed(scan_source):
    result = scan_source({"data/big.yaml": "items: [1, 2\n"})  # malformed, but gated out
    assert errors(result) == [] and result.files_parsed == 0


@pytest.mark.parametrize("text", ["gpu: [1, 2\nnext: 3\n", "gpu: !!python/object/apply:os.system ['touch pwned']\n"
                                  "device: cuda\n"])
def test_bad_or_hostile_yaml(scan_source, tmp_path, text, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = scan_source({"conf/x.yaml": text})
    assert not (tmp_path / "pwned").exists()
    assert errors(result) == [("conf/x.yaml", "parse")] or found(result) == [
        ("conf/x.yaml", None, 2, 1, 2, 13, "LK105")]


def test_yaml_bomb_does_not_blow_up(scan_source):
    lines = ['a: &a ["gpu", "gpu", "gpu", "gpu", "gpu", "gpu", "gpu", "gpu", "gpu"]']
    for index in range(1, 12):
        previous, name = chr(96 + index), chr(97 + index)
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
    lines.append("device: cuda")
    result = scan_source({"conf/bomb.yaml": "\n".join(lines) + "\n"})
    assert errors(result) == [] and [f[6] for f in found(result)] == ["LK105"]


def test_huge_and_deep_yaml_are_error_entries(scan_source):
    huge = "gpu: " + "x" * (6 * 1024 * 1024) + "\n"
    deep = "gpu: " + "[" * 500 + "]" * 500 + "\n"
    result = scan_source({"conf/huge.yaml": huge, "conf/deep.yaml": deep, "conf/ok.yaml": "device: cuda\n"})
    assert errors(result) == [("conf/deep.yaml", "parse"), ("conf/huge.yaml", "too-large")]
    assert [f[0] for f in found(result)] == ["conf/ok.yaml"]


def test_fifty_megabyte_yaml_is_refused_before_reading(scan_source):
    result = scan_source({"k8s/big.yaml": "gpu: 1\n" * (50 * 1024 * 1024 // 7)})
    assert errors(result) == [("k8s/big.yaml", "too-large")]


def test_conda_environment(scan_source):
    text = ("name: demo\nchannels:\n  - pytorch\n  - nvidia\ndependencies:\n  - python=3.10\n  - pytorch-cuda=11.8\n"
            "  - cudatoolkit=11.3\n  - pip:\n    - --extra-index-url https://download.pytorch.org/whl/cu118\n"
            "    - flash-attn==2.5.8\n")
    assert [(f[2], f[3], f[6]) for f in found(scan_source({"environment.yml": text}))] == [
        (4, 5, "LK502"), (7, 5, "LK501"), (8, 5, "LK503"), (10, 25, "LK502"), (11, 7, "LK504")]


def test_deepspeed_json(scan_source):
    text = json.dumps({"fp16": {"enabled": True}, "amp": {"enabled": True}, "comms": {"backend": "nccl"}}, indent=2)
    assert [(f[2], f[6]) for f in found(scan_source({"ds_config.json": text}))] == [(6, "LK105"), (9, "LK305")]
    result = scan_source({"ds_config_bad.json": '{"amp": {"enabled": tru'})
    assert ("ds_config_bad.json", "parse") in errors(result)


def test_data_json_is_not_read(scan_source):
    result = scan_source({"data/labels.json": json.dumps({"device": "cuda"})})
    assert result.files == [] and found(result) == []


# -- notebooks -----------------------------------------------------------------------------------------
NOTEBOOK = notebook_example(
    ("markdown", "# Setup\nWe need CUDA: `torch.cuda.synchronize()`\n"),
    ("code", "!pip install -q bitsandbytes\n%env CUDA_VISIBLE_DEVICES=0\n"),
    ("raw", "torch.cuda.synchronize()\n"),
    ("code", "import torch\n\nmodel = Net().cuda()  # move it\nx = torch.zeros(2).cuda()  # lockin: ignore[LK102]\n"),
    ("code", "%%capture\n!nvidia-smi\ntorch.cuda.synchronize()\n"),
)


def test_notebook_cells_and_positions(scan_source):
    result = scan_source({"nb/demo.ipynb": NOTEBOOK})
    assert errors(result) == []
    assert found(result) == [
        ("nb/demo.ipynb", 2, 1, 17, 1, 29, "LK507"),
        ("nb/demo.ipynb", 2, 2, 6, 2, 28, "LK601"),
        ("nb/demo.ipynb", 4, 3, 15, 3, 21, "LK102"),
        ("nb/demo.ipynb", 5, 2, 2, 2, 12, "LK603"),
        ("nb/demo.ipynb", 5, 3, 1, 3, 25, "LK204"),
    ]


def test_notebook_cell_in_text_and_json(tmp_path, capsys):
    (tmp_path / "demo.ipynb").write_text(NOTEBOOK, encoding="utf-8")
    assert main([str(tmp_path), "--no-cache", "--select", "LK102"]) == 0
    out = capsys.readouterr().out
    assert "cell 4:3:15 LK102" in out and "model = Net().cuda()" in out
    assert main([str(tmp_path), "--no-cache", "--select", "LK102", "--format", "json"]) == 0
    finding = json.loads(capsys.readouterr().out)["findings"][0]
    assert (finding["cell"], finding["line"], finding["column"], finding["end_column"]) == (4, 3, 15, 21)


def test_notebook_findings_come_in_cell_order(scan_source):
    """Lines count within a cell, so many findings share a line; the report orders them by cell
    (it once kept whatever order a set gave them, which changed with the hash seed from run to run)."""
    cells = [("code", "import torch\n")] + [("code", "torch.cuda.synchronize()\n")] * 12
    result = scan_source({"nb.ipynb": notebook_example(*cells)})
    assert [(f.cell, f.line) for f in result.findings] == [(cell, 1) for cell in range(2, 14)]


def test_notebook_cells_parse_one_by_one_when_one_is_broken(scan_source):
    text = notebook_example(("code", "def f(:\n"), ("code", "import torch\ntorch.cuda.synchronize()\n"))
    result = scan_source({"nb.ipynb": text})
    assert [e.message.split(":")[0] for e in result.errors] == ["cell 1"]
    assert found(result) == [("nb.ipynb", 2, 2, 1, 2, 25, "LK204")]


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", "not valid JSON"),
    ('{"metadata": {}, "nbformat": 4}', "no `cells` list"),
    ('{"cells": [{"cell_type": "code", "source": [1, 2]}]}', "neither a string nor a list of strings"),
])
def test_bad_notebooks(scan_source, text, message):
    result = scan_source({"bad.ipynb": text, "ok.ipynb": notebook_example(("code", "import torch\nx.cuda()\n"))})
    assert [(e.path, e.kind) for e in result.errors] == [("bad.ipynb", "parse")]
    assert message in result.errors[0].message
    assert [f[0] for f in found(result)] == ["ok.ipynb"]


def test_notebook_findings_come_back_from_the_cache(tmp_path):
    from auditor.config.settings import Settings
    from auditor.pipeline.scan import scan

    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "demo.ipynb").write_text(NOTEBOOK, encoding="utf-8")
    options = Settings(cache_dir=str(tmp_path / "cache"), jobs=1)
    cold = scan([str(tmp_path / "repo")], options)
    warm = scan([str(tmp_path / "repo")], options)
    assert warm.files_cached == 1 and found(warm) == found(cold) and {f.cell for f in warm.findings} == {2, 4, 5}


def test_notebook_shell_lines_continued_with_a_backslash_are_one_command(scan_source):
    """`!pip install a \\` goes on on the next lines: they are the command's, not Python (they once made
    the whole notebook a parse error); the code after it is still checked."""
    text = notebook_example(
        ("code", "!pip install -q torch \\\n    flash-attn \\\n  --no-build-isolation\nimport torch\nx = torch.zeros(2).cuda()\n"),
        ("code", "%pip install \\\n   bitsandbytes\nif ok:\n    %time f(a, \\\n        b)\n    y = torch.cuda.synchronize()\n"))
    result = scan_source({"nb.ipynb": text})
    assert errors(result) == []
    assert found(result) == [
        ("nb.ipynb", 1, 2, 5, 2, 15, "LK504"),  # flash-attn, on the line it is written
        ("nb.ipynb", 1, 5, 20, 5, 26, "LK102"),
        ("nb.ipynb", 2, 2, 4, 2, 16, "LK507"),
        ("nb.ipynb", 2, 6, 9, 6, 33, "LK204"),
    ]


def test_a_python_line_ending_in_a_backslash_stays_python(scan_source):
    """Only a shell or magic line's backslash carries the next line with it: `x = 1 + \\` is Python's own."""
    text = notebook_example(("code", "import torch\nx = 1 + \\\n    2\ny = torch.zeros(2).cuda()\n"))
    result = scan_source({"nb.ipynb": text})
    assert errors(result) == [] and [f[2] for f in found(result)] == [4]


def test_shell_assignment_alone_counts_for_exact_names_only(scan_source):
    text = "#!/bin/sh\nCUDA_MAJOR=12\nCUDA_VISIBLE_DEVICES=0\nCUDA_CACHE_PATH=/tmp/c python x.py\n"
    assert [(f[2], f[6]) for f in found(scan_source({"env.sh": text}))] == [(3, "LK601"), (4, "LK602")]


def test_crlf_continuations(scan_source):
    shell = "#!/bin/sh\r\npip install \\\r\n  flash-attn\r\nnvidia-smi\r\n"
    docker = "FROM python:3.11\r\nRUN pip install \\\r\n    flash-attn\r\nENV FORCE_CUDA=1\r\n"
    result = scan_source({"a.sh": shell.encode(), "Dockerfile": docker.encode()})
    assert errors(result) == []
    assert [(f[0], f[2], f[3], f[6]) for f in found(result)] == [
        ("Dockerfile", 3, 5, "LK504"), ("Dockerfile", 4, 5, "LK602"), ("a.sh", 3, 3, "LK504"), ("a.sh", 4, 1, "LK603")]


def test_dockerfile_exec_form_and_odd_instructions(scan_source):
    text = ('FROM python:3.11\nRUN ["pip", "install", "flash-attn"]\nCMD ["unclosed\nENTRYPOINT []\nRUN\n'
            "ONBUILD RUN nvidia-smi\n")
    result = scan_source({"Dockerfile": text})
    assert [(e.kind, e.message) for e in result.errors] == [("parse", "line 3: unterminated double quote")]
    assert [(f[2], f[3], f[6]) for f in found(result)] == [(2, 24, "LK504")]


def test_notebook_ipython_assignments_and_help_lines_are_blanked(scan_source):
    text = notebook_example(("code", "files = !ls\nt = %time f()\nhelp?\nif a != b:\n    y = a % b\n"
                                     "import torch\ntorch.cuda.synchronize()\n"))
    result = scan_source({"nb.ipynb": text})
    assert errors(result) == [] and found(result) == [("nb.ipynb", 1, 7, 1, 7, 25, "LK204")]


def test_a_dockerfile_named_for_a_target_serves_it_whatever_its_base(scan_source):
    files = {"docker/Dockerfile": "FROM nvidia/cuda:12.1.0-base\n",
             "docker/Dockerfile.xpu": "FROM ubuntu:24.04 AS base\nFROM base AS final\n",
             "docker/Dockerfile.rocm": "ARG BASE=rocm/vllm-dev:base\nARG V=0\nFROM ${BASE} AS base\n"
                                       "FROM base AS fetch_0\nFROM fetch_${V} AS final\n",
             "docker/Dockerfile.tpu": "FROM nvidia/cuda:12.1.0-base\n"}  # named for TPU, but a CUDA image
    effects = next(f.targets for f in scan_source(files).findings if f.path == "docker/Dockerfile")
    assert {t for t, e in effects.items() if e == "works"} == {"xpu", "rocm"}


def test_a_notebook_mentioning_cuda_only_in_markdown_and_outputs_is_not_parsed(scan_source, monkeypatch):
    import auditor.pipeline.kind_checks

    def refuse(*args, **kwargs):
        raise AssertionError("parsed")

    monkeypatch.setattr(auditor.pipeline.kind_checks, "scan_python", refuse)
    data = json.loads(notebook_example(("markdown", "Uses torch.cuda.synchronize()"), ("code", "print(1)\n")))
    data["cells"][1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["cuda:0 torch.cuda\n"]}]
    result = scan_source({"nb.ipynb": json.dumps(data), "code.ipynb": notebook_example(("code", "x.cuda()\n"))},
                         jobs=1)
    assert [(e.path, e.kind) for e in result.errors] == [("code.ipynb", "internal")]  # only this one was parsed


def test_manifest_with_only_an_untagged_pytorch_image_passes_the_gate(scan_source):
    text = "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - name: x\n      image: pytorch/pytorch:latest\n"
    assert [(f[2], f[6]) for f in found(scan_source({"k8s/pod.yaml": text}))] == [(6, "LK509")]


def test_warm_runs_keep_image_alternatives_without_reading_dockerfiles(tmp_path, monkeypatch):
    import os

    import auditor.analysis.alternatives
    from auditor.config.settings import Settings
    from auditor.pipeline.scan import scan

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "Dockerfile").write_text("FROM nvidia/cuda:12.1.0-base\n")
    (repo / "Dockerfile.rocm").write_text("FROM rocm/pytorch:latest\n")
    old = 1_600_000_000_000_000_000  # settled long ago: the cache trusts these stats
    for name in ("Dockerfile", "Dockerfile.rocm"):
        os.utime(repo / name, ns=(old, old))
    options = Settings(cache_dir=str(tmp_path / "cache"), jobs=1)

    def effects():
        return next(f.targets for f in scan([str(repo)], options).findings if f.rule == "LK509")

    assert effects()["rocm"] == "works"

    def refuse(*args):
        raise AssertionError("read again")

    monkeypatch.setattr(auditor.analysis.alternatives, "_targets", refuse)
    assert effects()["rocm"] == "works"
    monkeypatch.undo()
    (repo / "Dockerfile.rocm").write_text("FROM nvidia/cuda:12.4.1-base\n")
    os.utime(repo / "Dockerfile.rocm", ns=(old + 10**9, old + 10**9))
    assert effects()["rocm"] == "raises"


def test_add_noqa_in_the_new_kinds(tmp_path, capsys, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "conf").mkdir(parents=True)
    (repo / "conf" / "run.yaml").write_text("trainer:\n  accelerator: gpu\nnote: |\n  device: cuda\n")
    (repo / "ds_config.json").write_text('{"amp": {"enabled": true}}\n')
    (repo / "Dockerfile").write_text("FROM nvidia/cuda:12.1.0-base\n")
    (repo / "run.sh").write_text("#!/bin/sh\nnvidia-smi\n")
    monkeypatch.chdir(repo)
    assert main([".", "--no-cache", "--isolated", "--add-noqa", "--select", "LK105,LK509,LK603"]) == 0
    assert (repo / "conf" / "run.yaml").read_text() == (
        "trainer:\n  accelerator: gpu  # noqa: LK105\nnote: |\n  device: cuda\n")  # not inside the block scalar
    assert (repo / "ds_config.json").read_text() == '{"amp": {"enabled": true}}\n'  # JSON has no comments
    assert (repo / "Dockerfile").read_text() == "FROM nvidia/cuda:12.1.0-base\n"  # would break the build
    assert (repo / "run.sh").read_text() == "#!/bin/sh\nnvidia-smi  # noqa: LK603\n"
    capsys.readouterr()
    main([".", "--no-cache", "--isolated", "--select", "LK105,LK509,LK603", "--format", "json"])
    left = sorted(f["path"] for f in json.loads(capsys.readouterr().out)["findings"])
    assert left == ["Dockerfile", "ds_config.json"]


@pytest.mark.parametrize(("fmt", "expected"), [
    ("text", ["cell 4:3:15 LK102"]),
    ("concise", ["demo.ipynb:cell 4:3:15: LK102"]),
    ("markdown", ["demo.ipynb:cell 4:3:15"]),
    ("github", ["file=demo.ipynb,line=1::cell 4, line 3:"]),
    ("gitlab", ['"line": 32,', '"column": 20', "LK102 cell 4, line 3:"]),  # the .ipynb's own line 32
    ("sarif", ['"cell": 4', '"cellLine": 3', '"cellColumn": 15']),
    ("junit", ["at demo.ipynb:cell 4:3:15", 'line="32"']),  # the .ipynb's own line, as GitLab's; the name holds no line
])
def test_notebook_positions_in_every_format(tmp_path, capsys, monkeypatch, fmt, expected):
    (tmp_path / "demo.ipynb").write_text(NOTEBOOK, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    main([".", "--no-cache", "--isolated", "--select", "LK102", "--format", fmt])
    out = capsys.readouterr().out
    for part in expected:
        assert part in out, (part, out[:2000])


def test_a_config_setting_is_a_default_a_run_overrides(scan_source):
    text = "device: cuda\ntrainer:\n  dist_backend: nccl\n"
    result = scan_source({"configs/train.yaml": text, "tests/configs/smoke.yaml": "device: cuda\n",
                          "train.py": "import torch\nx = torch.zeros(2, device='cuda')\n"})
    device, backend = (f for f in result.findings if f.path == "configs/train.yaml")
    for finding in (device, backend):
        assert finding.context == "optional" and finding.guard == "option", finding
        assert finding.targets["tpu"] == "works" and "a setting in this config file" in finding.message
    smoke = next(f for f in result.findings if f.path.startswith("tests/"))
    assert smoke.context == "test+optional"  # trap: a test's config stays the tests'
    code = next(f for f in result.findings if f.path == "train.py")
    assert code.context is None and code.targets["tpu"] == "raises"  # trap: code is no setting
