"""Files a whole-repository scan reads (issue 15, item 5): target-named Dockerfiles, requirements
and config folders at any depth, Dockerfile ARG pins and apt packages, NCCL install scripts,
dcgmi, flag-style launcher keys. Each with a trap that is not read or not reported."""

from __future__ import annotations

NVIDIA_IMAGE = "FROM nvidia/cuda:12.1.0-runtime-ubuntu22.04\nRUN pip install torch\n"
CPU_IMAGE = "FROM python:3.11-slim\nRUN pip install torch --index-url https://download.pytorch.org/whl/cpu\n"


def _by_path(result) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for f in result.findings:
        found.setdefault(f.path, []).append(f.rule)
    return found


def test_nested_requirements_and_configs_and_dash_named_dockerfiles_are_read(scan_source):
    result = scan_source({
        "requirements/pytorch/extra.txt": "torch==2.3.0+cu121\nnvidia-cudnn-cu12\n",
        "configs/autotuning_configs/tune.json": '{"backend": "nccl", "device": "cuda"}\n',
        "docker/Dockerfile-gpu": NVIDIA_IMAGE,
        # traps: a Dockerfile's notes, and a JSON file in no config folder
        "docs/Dockerfile.md": NVIDIA_IMAGE,
        "data/sub/tune.json": '{"backend": "nccl", "device": "cuda"}\n',
    })
    found = _by_path(result)
    assert sorted(found["requirements/pytorch/extra.txt"]) == ["LK501", "LK503"]
    assert sorted(found["configs/autotuning_configs/tune.json"]) == ["LK105", "LK305"]
    assert found["docker/Dockerfile-gpu"] == ["LK509"]
    assert "docs/Dockerfile.md" not in found and "data/sub/tune.json" not in found


def test_a_cpu_dockerfile_makes_the_nvidia_image_one_variant_for_cpu(scan_source):
    both = scan_source({"Dockerfile": NVIDIA_IMAGE, "Dockerfile-cpu": CPU_IMAGE})
    image = next(f for f in both.findings if f.rule == "LK509")
    assert image.targets["cpu"] == "works" and image.targets["xpu"] == "raises"


def test_trap_without_the_cpu_dockerfile_the_nvidia_image_fails_cpu(scan_source):
    alone = scan_source({"Dockerfile": NVIDIA_IMAGE})
    assert next(f for f in alone.findings if f.rule == "LK509").targets["cpu"] == "raises"


def test_dockerfile_arg_pins_apt_packages_and_an_nccl_install_script(scan_source):
    dockerfile = ("ARG CUDA_VERSION=12.1.0\nARG PYTHON=3.11\nARG TARGET\nFROM ubuntu:22.04\n"
                  "RUN apt-get update && apt-get install -y git libnccl2 libcudnn8=8.9.7.29-1+cuda12.2\n"
                  "RUN bash /tmp/install_nccl.sh\n")
    result = scan_source({"Dockerfile": dockerfile})
    found = sorted((f.rule, f.line, f.snippet.split()[1] if f.rule == "LK602" else "") for f in result.findings)
    assert ("LK602", 1, "CUDA_VERSION=12.1.0") in found  # the pin; PYTHON and a bare ARG are nothing
    assert [f for f in found if f[0] == "LK602"] == [("LK602", 1, "CUDA_VERSION=12.1.0")]
    packages = sorted(f.message.split("`")[1] for f in result.findings if f.rule == "LK510")
    assert packages == ["install_nccl.sh", "libcudnn8=8.9.7.29-1+cuda12.2", "libnccl2"]


def test_trap_removing_or_querying_a_cuda_package_and_rocm_packages_are_no_install(scan_source):
    script = ("#!/bin/bash\napt-get remove -y cuda-toolkit-12-1\napt-cache policy libnccl2\n"
              "apt-get install -y rocm-hip-sdk rccl\necho apt-get install libcudnn8\n")
    result = scan_source({"scripts/setup.sh": script})
    assert not [f for f in result.findings if f.rule == "LK510"]


def test_dcgmi_in_a_slurm_script_and_flag_style_launcher_keys(scan_source):
    result = scan_source({
        "jobs/health.slurm": "#!/bin/bash\n#SBATCH --nodes=1\ndcgmi diag -r 1\n",
        "launch/gpt.yaml": "model:\n  --distributed-backend: nccl\n  --tensor-model-parallel-size: 2\n",
    })
    found = _by_path(result)
    assert found["jobs/health.slurm"] == ["LK603"]
    assert found["launch/gpt.yaml"] == ["LK305"]
