"""`audit plan`: each step on a fixture, the plans the issue names (the demo repository, a repository
with no lock-in, a dispatch layer, a repository whose only tie is its container image), a bad
target, and the ranking per signal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.cli import main
from auditor.plan.command import PlanRequest, run_plan

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo-repo"
DISPATCH = ROOT / "fixtures" / "dispatch-layer"


def plan(path: Path, target: str | None = None, **extra) -> dict:
    return json.loads(run_plan(PlanRequest(str(path), target, "json", cache=False, **extra)))


def steps(document: dict) -> dict:
    return {step["key"]: step for step in document["steps"]}


def repo(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        path = tmp_path / "repo" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return tmp_path / "repo"


@pytest.fixture(scope="module")
def demo_tpu() -> dict:
    return plan(DEMO, "tpu")


# ---- the headline and the end ----------------------------------------------------------------------

def test_the_plan_starts_with_the_verdict_and_what_blocks_it(demo_tpu):
    head = demo_tpu["headline"]
    assert head["verdict"] == "fails" and isinstance(head["score"], float)
    blockers = {b["rule"] for b in head["blockers"]}
    # the headline judges what the repository ships (its package): the Dockerfile's NVIDIA base
    # image is a container's, beside it, and step 1 still changes it
    assert "LK401" in blockers and "LK509" not in blockers
    assert any(item.get("path", "").endswith("Dockerfile") and "base image" in item["text"]
               for item in demo_tpu["steps"][0]["items"])


def test_the_score_after_fixes_takes_away_what_fix_rewrites(tmp_path):
    fixable = repo(tmp_path, {"amp.py": "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"})
    document = plan(fixable, "cpu")
    after = document["after_fixes"]
    assert after["fixed"] >= 1 and after["estimate"] is True
    # the re-check of the fixed text still finds `torch.amp.autocast("cuda", ...)` (AMP off elsewhere,
    # LK106, whose rewrite is unsafe), so it does not reach 100 as taking the finding away would
    assert after["fixed"] == 1 and document["headline"]["score"] <= after["score"] < 100.0, after
    assert after["how"].startswith("each file `audit --fix` changes"), after["how"]


DEVICE_TIES = ("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\nx = torch.zeros(3, device=\"cuda\")\n"
               "if torch.cuda.is_available():\n    torch.cuda.synchronize()\n")


def test_the_plan_counts_the_rewrites_to_the_device_choice_only_a_fix_run_makes(tmp_path):
    # a plain scan knows no device owner, so `.cuda()` and device="cuda" have no fix of their own;
    # `audit --fix` creates device_choice.py and rewrites both: the plan counts what it would do
    project = repo(tmp_path, {"train.py": DEVICE_TIES, "requirements.txt": "torch>=2.8\n"})
    document = plan(project, "mps")
    device = {g["kind"]: g for g in steps(document)["hardware-choices"]["groups"]}["device"]
    assert device["fixed_by_audit_fix"] == 2, device  # LK101 and LK102 (safe; the accelerator swaps are unsafe)
    after = document["after_fixes"]
    assert after["fixed"] == 2 and after["score"] > document["headline"]["score"], after
    assert not (project / "device_choice.py").exists()  # a dry run: nothing is written


def test_a_tie_the_fix_run_holds_is_not_counted_as_fixed(tmp_path):
    # the same ties in a test file are left alone without --fix-tests: nothing is counted
    project = repo(tmp_path, {"tests/test_train.py": DEVICE_TIES, "requirements.txt": "torch>=2.8\n"})
    document = plan(project, "mps")
    device = {g["kind"]: g for g in steps(document)["hardware-choices"]["groups"]}["device"]
    assert device["fixed_by_audit_fix"] == 0 and document["after_fixes"]["fixed"] == 0, (device, document["after_fixes"])


def test_markdown_opens_with_the_answer_and_ends_with_the_score_after_fixes(capsys):
    assert main(["plan", str(DEMO), "--target", "tpu", "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[2].startswith("**Verdict: fails**, score ")
    order = [text.index(f"## {n}. ") for n in range(1, 8)]
    assert order == sorted(order)
    assert text.index("## Score after automatic fixes") > order[-1]
    assert "## What this plan could not see" in text and "(an estimate)" in text


# ---- step 1 ----------------------------------------------------------------------------------------

def test_step_1_lists_each_gpu_only_package_with_its_replacement_on_the_target(demo_tpu):
    items = {i["package"]: i for i in steps(demo_tpu)["dependencies"]["items"]}
    assert items["flash-attn"]["replacement"].startswith("SDPA")
    assert items["bitsandbytes"]["effort"] == "no equivalent"  # bitsandbytes has no TPU backend
    assert "torch-tpu" in items["the base image"]["replacement"]  # from the registry
    assert {p["path"] for p in items["flash-attn"]["places"]} == {"fixtures/demo-repo/Dockerfile",
                                                                 "fixtures/demo-repo/requirements.txt"}


def test_step_1_says_what_replaces_it_per_target(tmp_path):
    deps = repo(tmp_path, {"requirements.txt": "cupy-cuda12x>=13\n"})
    rocm = steps(plan(deps, "rocm"))["dependencies"]["items"][0]
    tpu = steps(plan(deps, "tpu"))["dependencies"]["items"][0]
    assert rocm["replacement"].startswith("cupy-rocm") and tpu["replacement"] == "torch / numpy"


# ---- step 2 ----------------------------------------------------------------------------------------

def test_step_2_groups_the_hardware_choices_by_kind_and_names_the_owner(demo_tpu):
    step = steps(demo_tpu)["hardware-choices"]
    groups = {g["kind"]: g for g in step["groups"]}
    assert list(groups) == ["device", "precision", "distributed", "visibility"]  # the catalogue's order
    assert step["owner"] == "fixtures/demo-repo/demo/portable.py:14"  # an existing device helper
    assert groups["precision"]["fixed_by_audit_fix"] >= 1
    assert "TPU_VISIBLE_CHIPS" in groups["visibility"]["owner"]
    # an item's reason is its findings' (the largest's), not the group's title
    assert all(item["reason"] and item["reason"] != group["title"] for item, group in zip(step["items"], step["groups"], strict=True))
    assert "even if the team never moves" in step["summary"]


def test_step_2_counts_compile_modes_and_owns_nothing_it_did_not_find(tmp_path):
    compiled = repo(tmp_path, {"train.py": "import torch\nm = torch.compile(m, mode=\"reduce-overhead\")\n"})
    step = steps(plan(compiled, "tpu"))["hardware-choices"]
    assert [g["kind"] for g in step["groups"]] == ["compile"]
    assert {s["what"] for s in step["groups"][0]["signals"]} == {"a CUDA-graph compile mode", "torch.compile"}
    # no owner yet: the group names the module `audit --fix` creates beside the script, the summary says so
    assert step["owner"] is None and step["groups"][0]["owner"].startswith("`") and \
        step["groups"][0]["owner"].split("`")[1].endswith("repo/device_choice.py")
    assert step["groups"][0]["lines"] == 1 and "No device helper was found: `audit --fix` creates" in step["summary"]


def test_step_2_names_the_helper_audit_fix_uses_not_one_that_hard_codes_cuda(tmp_path):
    helper = "import torch\n\ndef get_device():\n    return torch.device('cuda')\n"
    owned = "import torch\n\ndef get_device():\n    return torch.accelerator.current_accelerator() or torch.device('cpu')\n"
    tied = repo(tmp_path / "a", {"util.py": helper, "train.py": "x = x.cuda()\n"})
    step = steps(plan(tied, "tpu"))["hardware-choices"]
    assert step["owner"] is None or not step["owner"].endswith("util.py:3")  # a CUDA-only helper owns nothing
    assert "device_choice.py" in step["groups"][0]["owner"]
    mine = repo(tmp_path / "b", {"util.py": owned, "train.py": "x = x.cuda()\n"})
    step = steps(plan(mine, "tpu"))["hardware-choices"]
    assert step["owner"].endswith("util.py:3") and "device_choice" not in step["summary"]


# ---- step 3 ----------------------------------------------------------------------------------------

def test_step_3_has_the_vendor_notes_and_the_legacy_path_apart(demo_tpu):
    step = steps(demo_tpu)["target-changes"]
    topics = {n["topic"] for n in step["notes"]}
    assert {"device", "accelerator", "install", "precision", "distributed", "visibility"} <= topics
    assert all(n["status"] == "unverified" or n["source"] for n in step["notes"])
    assert step["legacy"]["key"] == "tpu-xla" and step["legacy"]["in_use"] is False
    assert any(i["text"].startswith("LK401 ") and i["effort"] == "days" for i in step["items"])


def test_step_3_marks_the_legacy_path_in_use(tmp_path):
    xla = repo(tmp_path, {"t.py": "import torch_xla.core.xla_model as xm\ndev = xm.xla_device()\n"})
    assert steps(plan(xla, "trainium"))["target-changes"]["legacy"]["in_use"] is True


def test_step_3_shows_a_note_only_when_its_kind_was_found(tmp_path):
    clean = repo(tmp_path, {"m.py": "import torch\nx = torch.ones(2)\n"})
    topics = {n["topic"] for n in steps(plan(clean, "tpu"))["target-changes"]["notes"]}
    assert "device" in topics and "distributed" not in topics  # "always" vs a kind not found


# ---- step 4 ----------------------------------------------------------------------------------------

def test_step_4_puts_the_repository_signals_next_to_the_checklist(tmp_path):
    cloud = repo(tmp_path, {"data.py": "import boto3\nURL = 's3://my-bucket/train'\nREGION = 'us-east-1'\n"})
    checklist = {c["item"]: c for c in steps(plan(cloud, "trainium"))["capacity"]["checklist"]}
    assert {"quota", "region", "data", "commitments", "transfer", "security"} <= set(checklist)
    assert {s["what"] for s in checklist["data"]["signals"]} >= {"AWS SDK"}
    assert any(s["kind"] == "bucket" for s in checklist["data"]["signals"])
    assert any(s["kind"] == "region" for s in checklist["region"]["signals"])


def test_step_4_for_a_local_target_has_no_cloud_items(demo_tpu):
    items = {c["item"] for c in steps(plan(DEMO, "mps"))["capacity"]["checklist"]}
    assert "commitments" not in items and "transfer" not in items


# ---- steps 5, 6, 7 ------------------------------------------------------------------------------------

def test_steps_5_and_6_name_the_generated_files_and_write_tests_writes_them(tmp_path):
    document = plan(DEMO, "xpu", write_tests=tmp_path / "out")
    parity, bench = steps(document)["parity"], steps(document)["benchmark"]
    assert parity["file"] == "test_parity_xpu.py" and bench["file"] == "bench_xpu.py"
    assert (tmp_path / "out" / "test_parity_xpu.py").is_file() and (tmp_path / "out" / "bench_xpu.py").is_file()
    assert parity["written"] == [str(tmp_path / "out" / "test_parity_xpu.py")]
    assert "batch size" in bench["conditions"]


def test_step_7_keeps_the_nvidia_files(demo_tpu):
    step = steps(demo_tpu)["way-back"]
    assert {"fixtures/demo-repo/Dockerfile", "fixtures/demo-repo/requirements.txt"} <= set(step["keep"])


# ---- the plans the issue names ------------------------------------------------------------------------

def test_a_repository_with_no_lock_in_gets_a_short_plan_that_says_so(tmp_path):
    clean = repo(tmp_path, {"m.py": "import torch\ndev = torch.accelerator.current_accelerator()\n"})
    document = plan(clean, "tpu")
    assert document["headline"]["verdict"] == "runs" and "No NVIDIA lock-in was found" in document["headline"]["summary"]
    by_key = steps(document)
    assert by_key["dependencies"]["items"] == [] and by_key["hardware-choices"]["groups"] == []
    assert by_key["target-changes"]["items"] == [] and by_key["way-back"]["keep"] == []
    text = run_plan(PlanRequest(str(clean), "tpu", cache=False))
    demo = run_plan(PlanRequest(str(DEMO), "tpu", cache=False))
    # short: no work item in steps 1 to 3 (each has an effort in bold), half the demo's length at most
    assert "**[" not in text[:text.index("## 4. ")] and len(text.splitlines()) <= len(demo.splitlines()) / 2
    assert "By component" not in text and "What blocks it" not in text


def test_a_dispatch_layer_plans_minutes_of_work(capsys):
    document = plan(DISPATCH, "tpu")
    assert document["headline"]["verdict"] in ("runs", "runs-degraded")
    assert steps(document)["dependencies"]["items"] == []
    assert {s["effort"] for s in document["steps"][:3]} <= {None, "minutes"}  # backend-module code shifts down


def test_a_repository_whose_only_tie_is_its_image(tmp_path):
    image = repo(tmp_path, {"Dockerfile": "FROM nvidia/cuda:12.1.1-runtime-ubuntu22.04\nRUN pip install torch\n",
                            "m.py": "import torch\n"})
    document = plan(image, "rocm")
    items = steps(document)["dependencies"]["items"]
    assert [i["package"] for i in items] == ["the base image"] and "rocm/pytorch" in items[0]["replacement"]
    assert steps(document)["hardware-choices"]["groups"] == []
    assert [Path(p).name for p in steps(document)["way-back"]["keep"]] == ["Dockerfile"]


# ---- usage ----------------------------------------------------------------------------------------------

def test_a_bad_target_exits_2_with_one_line(capsys):
    assert main(["plan", str(DEMO), "--target", "cuda"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown target 'cuda'" in err[0] and "rocm, tpu" in err[0]


def test_write_tests_needs_a_target_and_a_missing_path_exits_2(capsys, tmp_path):
    assert main(["plan", str(DEMO), "--write-tests", str(tmp_path / "x")]) == 2
    assert "add --target" in capsys.readouterr().err
    assert main(["plan", str(tmp_path / "missing"), "--target", "tpu"]) == 2
    assert "path not found" in capsys.readouterr().err


# ---- which target first -------------------------------------------------------------------------------

def ranked(path: Path) -> list[dict]:
    return plan(path)["ranking"]


def test_the_ranking_orders_by_points_with_the_host_last():
    rows = ranked(DEMO)
    accelerators = [r for r in rows if not r["host"]]
    assert [r["points"] for r in accelerators] == sorted((r["points"] for r in accelerators), reverse=True)
    assert rows[-1]["target"] == "cpu" and rows[0]["target"] == "rocm"  # ROCm keeps the cuda device


def test_cloud_signals_point_to_their_provider_s_chip(tmp_path):
    base = {"m.py": "import torch\nx = torch.zeros(2, device='cuda')\n"}
    aws = repo(tmp_path / "aws", {**base, "s3.py": "import boto3\n"})
    gcp = repo(tmp_path / "gcp", {**base, "gcs.py": "from google.cloud import storage\n"})
    plain = {r["target"]: r["points"] for r in ranked(repo(tmp_path / "plain", base))}
    with_aws = {r["target"]: r for r in ranked(aws)}
    with_gcp = {r["target"]: r for r in ranked(gcp)}
    assert with_aws["trainium"]["points"] > plain["trainium"] and with_aws["tpu"]["points"] == plain["tpu"]
    assert with_gcp["tpu"]["points"] > plain["tpu"] and with_gcp["trainium"]["points"] == plain["trainium"]
    assert any("AWS signals" in why for why in with_aws["trainium"]["why"])


@pytest.mark.parametrize(("name", "files", "points_to"), [
    ("aws-sdk", {"s3.py": "import boto3\n"}, "trainium"),
    ("sagemaker", {"requirements.txt": "sagemaker\n"}, "trainium"),
    ("s3-url", {"data.py": "URL = 's3://my-bucket/train'\n"}, "trainium"),
    ("trainium-instance", {"launch.sh": "aws ec2 run-instances --instance-type trn1.32xlarge\n"}, "trainium"),
    ("gcs-url", {"data.py": "URL = 'gs://my-bucket/train'\n"}, "tpu"),
    ("vertex", {"job.py": "from google.cloud import aiplatform\n"}, "tpu"),
    ("tpu-type", {"job.yaml": "acceleratorType: v5litepod-8\n"}, "tpu"),
    ("azure", {"blob.py": "from azure.storage.blob import BlobServiceClient\n"}, "rocm"),
])
def test_each_cloud_signal_points_to_its_provider_s_chip(tmp_path, name, files, points_to):
    base = {"m.py": "import torch\nx = torch.zeros(2, device='cuda')\n"}
    plain = {r["target"]: r["points"] for r in ranked(repo(tmp_path / "plain", base))}
    signalled = {r["target"]: r for r in ranked(repo(tmp_path / name, {**base, **files}))}
    moved = {t for t, r in signalled.items() if r["points"] != plain[t]}
    assert moved == {points_to}, name
    assert signalled[points_to]["points"] == plain[points_to] + 15  # [ranking] cloud, once per provider


def test_the_ranking_counts_the_dependency_changes_of_what_ships(tmp_path):
    shipped = _package(tmp_path / "a", {"requirements.txt": "cupy-cuda12x\n"})
    example = _package(tmp_path / "b", {"examples/requirements.txt": "cupy-cuda12x\n"})
    rows = {r["target"]: r for r in ranked(shipped)}
    aside = {r["target"]: r for r in ranked(example)}
    assert rows["tpu"]["dependencies"] == 1 and aside["tpu"]["dependencies"] == 0
    assert "1 dependency change(s) (step 1)" in rows["tpu"]["why"]
    assert "0 dependency change(s) (step 1), and 1 optional (examples, tests, docs)" in aside["tpu"]["why"]


def test_a_region_name_alone_moves_no_target(tmp_path):
    base = {"m.py": "import torch\nx = torch.zeros(2, device='cuda')\n"}
    plain = {r["target"]: r["points"] for r in ranked(repo(tmp_path / "plain", base))}
    region = ranked(repo(tmp_path / "region", {**base, "cfg.py": "REGION = 'us-east-1'\n"}))
    assert {r["target"]: r["points"] for r in region} == plain


def test_a_provider_counts_once_and_its_signals_are_named(tmp_path):
    base = {"m.py": "import torch\nx = torch.zeros(2, device='cuda')\n"}
    plain = {r["target"]: r["points"] for r in ranked(repo(tmp_path / "plain", base))}
    rows = {r["target"]: r for r in ranked(repo(tmp_path / "aws", {**base, "s3.py": "import boto3\nU = 's3://my-bucket/x'\n"}))}
    assert rows["trainium"]["points"] == plain["trainium"] + 15
    assert any(why.startswith("AWS signals (AWS SDK, S3 URL)") for why in rows["trainium"]["why"])


@pytest.mark.parametrize(("files", "workload"), [
    ({"train.py": "import torch\nloss.backward()\noptimizer.step()\n"}, "Only training code was seen"),
    ({"serve.py": "import torch\nwith torch.inference_mode():\n    y = m(x)\n"}, "Inference is the cheaper first step"),
    ({"both.py": "import torch\nloss.backward()\nout = model.generate(x)\n"}, "Inference is the cheaper first step"),
    ({"lib.py": "import torch\ndef f(x):\n    return x\n"}, "Neither training nor inference code was seen"),
])
def test_the_workload_signal_says_which_first_step_is_cheaper(tmp_path, files, workload):
    assert plan(repo(tmp_path, files))["workload"].startswith(workload)


def _tool_names() -> list[str]:
    from auditor.plan.catalogue import plan_catalogue

    return [tool.name for tool in plan_catalogue().tools]


@pytest.mark.parametrize("name", _tool_names())
@pytest.mark.parametrize("by", ["import", "package"])
def test_each_tool_moves_each_target_by_its_support(tmp_path, name, by):
    """Every tool of rules/plan/tools.toml, found by its import or by its package: each target it has
    a support row for gets that level's points on top of its verdict and score, the others none,
    and the why names it (the tool's own import may bring findings: the score is the row's)."""
    from auditor.plan.catalogue import plan_catalogue

    catalogue = plan_catalogue()
    weights = catalogue.ranking
    tool = next(t for t in catalogue.tools if t.name == name)
    uses = ({"use.py": f"import torch\nimport {tool.imports[0]}\n"} if by == "import"
            else {"requirements.txt": f"{tool.packages[0]}\n", "m.py": "import torch\n"})
    document = plan(repo(tmp_path, uses))
    assert document["tools"] == [tool.display]
    for row in document["ranking"]:
        support = tool.support.get(row["target"])
        own = (row["score"] or 0) + weights["verdict"][row["verdict"]]
        moved = weights["tool"][support.level] if support else 0
        assert row["points"] == pytest.approx(own + moved), (name, row["target"])
        named = [why for why in row["why"] if why.startswith(f"{tool.display}: ")]
        assert named == ([f"{tool.display}: {support.level} ({support.fact.text}; {support.fact.source})"] if support else [])


def test_a_tool_s_support_moves_a_target(tmp_path):
    base = {"m.py": "import torch\nx = torch.zeros(2, device='cuda')\n"}
    served = {r["target"]: r for r in ranked(repo(tmp_path / "ds", {**base, "requirements.txt": "deepspeed\n"}))}
    plain = {r["target"]: r["points"] for r in ranked(repo(tmp_path / "plain", base))}
    assert served["tpu"]["points"] < plain["tpu"]  # no DeepSpeed accelerator for TPU
    assert served["xpu"]["points"] > plain["xpu"]
    assert any(why.startswith("DeepSpeed: unsupported") for why in served["trainium"]["why"])


def test_the_ranking_names_the_workload_and_the_edge_path(tmp_path):
    served = repo(tmp_path, {"serve.py": "import torch\nwith torch.inference_mode():\n    out = model.generate(x)\n"
                                         "ep = torch.export.export(model, (x,))\n"})
    document = plan(served)
    assert document["workload"].startswith("Inference is the cheaper first step")
    assert document["edge"] is not None and "edge path" in document["edge"]
    assert plan(repo(tmp_path / "lib", {"m.py": "import torch\n"}))["edge"] is None


def test_repository_text_cannot_shape_the_markdown():
    from auditor.plan.markdown import cell, code, esc

    assert esc("<script>alert(1)</script> [x](http://e) | *b*") == \
        "\\<script\\>alert(1)\\</script\\> \\[x\\](http://e) \\| \\*b\\*"
    assert esc("a `pair` stays") == "a `pair` stays" and esc("odd ` one") == "odd \\` one"
    assert esc("two\nlines") == "two lines" and code("a`b\nc") == "`a'b c`"
    # inside a code span markdown shows everything literally: no escape there (it would show as `\<`)
    assert esc("`x<y|*z*` and <b>") == "`x<y|*z*` and \\<b\\>"
    # a table cell escapes every pipe, in code spans too (GFM reads `\|` there), and none twice
    assert cell(esc("`a|b` and c|d")) == "`a\\|b` and c\\|d"


def test_a_target_without_notes_in_the_catalogue_gets_a_plan_that_says_so():
    from dataclasses import replace

    from auditor.plan.build import Scan, plan_for
    from auditor.plan.catalogue import plan_catalogue

    catalogue = plan_catalogue()
    bare = replace(catalogue, notes={k: v for k, v in catalogue.notes.items() if k != "xpu"})
    document = plan_for(Scan("/r", [], [], []), "xpu", bare)
    step = steps(document)["target-changes"]
    assert step["notes"] == [] and step["stack"] is None and "no notes for xpu" in step["summary"]


def test_a_bad_entry_or_an_entry_without_write_tests_exits_2_before_scanning(capsys, tmp_path):
    assert main(["plan", str(tmp_path / "missing"), "--target", "tpu", "--write-tests", str(tmp_path / "o"),
                 "--entry", "not an entry"]) == 2
    assert "expected module:function" in capsys.readouterr().err  # checked before the path
    assert main(["plan", str(DEMO), "--target", "tpu", "--entry", "pkg:make"]) == 2
    assert "add --write-tests" in capsys.readouterr().err


def test_a_file_audit_did_not_write_is_never_overwritten(capsys, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "bench_tpu.py").write_text("mine\n", encoding="utf-8")
    assert main(["plan", str(DEMO), "--target", "tpu", "--write-tests", str(tmp_path / "out"), "--no-cache"]) == 2
    assert "bench_tpu.py" in capsys.readouterr().err
    assert (tmp_path / "out" / "bench_tpu.py").read_text(encoding="utf-8") == "mine\n"
    assert not (tmp_path / "out" / "test_parity_tpu.py").exists()


def test_the_plan_says_when_it_saw_no_dependency_file(tmp_path):
    code_only = repo(tmp_path, {"m.py": "import torch\nx = torch.zeros(2, device='cuda')\n"})
    assert any("No dependency file" in u for u in plan(code_only, "tpu")["unseen"])
    assert not any("No dependency file" in u for u in plan(DEMO, "tpu")["unseen"])


# ---- per component ------------------------------------------------------------------------------------

GRAPH = "import torch\ng = torch.cuda.CUDAGraph()\n"  # cuda-graphs: days, and no equivalent on trainium


def _package(tmp_path: Path, extra: dict[str, str]) -> Path:
    """A repository shipping the package `pkg` (a `.cuda()` call and a synchronize), with `extra` beside it."""
    return repo(tmp_path, {"pyproject.toml": '[project]\nname = "pkg"\n', "pkg/__init__.py": "",
                           "pkg/model.py": "import torch\nx = torch.zeros(2).cuda()\ntorch.cuda.synchronize()\n", **extra})


def _items(document: dict, key: str) -> dict[str, dict]:
    return {item["path"].split("/repo/", 1)[-1]: item for item in steps(document)[key]["items"] if item["path"]}


def test_the_headline_gives_each_component_its_verdict_score_and_blockers(demo_tpu):
    parts = {c["name"]: c for c in demo_tpu["headline"]["components"]}
    assert list(parts)[0] == "demo" and parts["demo"]["shipped"] and parts["demo"]["kind"] == "package"
    # what ships is the headline: the same verdict, score and blockers
    head = demo_tpu["headline"]
    assert (parts["demo"]["verdict"], parts["demo"]["score"]) == (head["verdict"], head["score"])
    assert parts["demo"]["blockers"] == head["blockers"]
    # the container is judged on its own: its base image blocks it, and not the headline
    assert parts["containers"]["verdict"] == "fails" and not parts["containers"]["shipped"]
    assert [b["rule"] for b in parts["containers"]["blockers"]][:1] == ["LK509"]
    assert parts["scripts"]["verdict"] == "runs-degraded" and parts["scripts"]["blockers"]
    assert "of them in what the repository ships (demo)" in head["summary"]


def test_an_example_item_is_cheaper_and_optional_a_package_item_counts_fully(tmp_path):
    document = plan(_package(tmp_path, {"examples/graph.py": GRAPH, "pkg/graph.py": GRAPH}), "tpu")
    items = _items(document, "target-changes")
    example, shipped = items["examples/graph.py"], items["pkg/graph.py"]
    assert example["components"] == ["examples"] and shipped["components"] == ["pkg"]
    assert (shipped["effort"], shipped["optional"]) == ("days", False)
    assert (example["effort"], example["optional"]) == ("hours", True)  # one bucket down
    assert "an example, not what the repository ships" in example["reason"]
    assert steps(document)["target-changes"]["effort"] == "days"  # the package's own kernel decides


def test_an_optional_item_never_sets_the_step_s_effort(tmp_path):
    """An example's CUDA graph has no equivalent on Trainium: the example is marked so, and the step's
    effort stays what the package needs (minutes), not "no equivalent"."""
    document = plan(_package(tmp_path, {"examples/graph.py": GRAPH}), "trainium")
    step = steps(document)["target-changes"]
    example = _items(document, "target-changes")["examples/graph.py"]
    assert (example["effort"], example["optional"]) == ("no equivalent", True)
    assert "an example" in example["reason"]  # still said why it matters less
    assert step["effort"] == "minutes" and "example" not in step["reason"]


def test_context_and_component_shift_once_not_twice(tmp_path):
    """Test code (context) in the tests (component) is one reason to be smaller: days -> hours, not minutes."""
    document = plan(_package(tmp_path, {"tests/test_graph.py": GRAPH}), "tpu")
    item = _items(document, "target-changes")["tests/test_graph.py"]
    assert item["components"] == ["tests"] and item["optional"] is True
    assert item["effort"] == "hours"
    assert "test code" in item["reason"] and "in the test suite" in item["reason"]


def test_a_joined_context_shifts_by_its_parts():
    """A context of several names ("test+guarded") finds each name's shift (it found none before)."""
    from dataclasses import replace

    from auditor.model import Finding
    from auditor.plan.catalogue import plan_catalogue
    from auditor.plan.effort import finding_cost

    graph = Finding(path="pkg/graph.py", line=2, column=1, end_line=2, end_column=9, rule="LK212", name="cuda-graphs",
                    category="cuda-api", severity="major", message="m", suggestion="", targets={"tpu": "raises"},
                    context="test+guarded")
    effort = plan_catalogue().effort
    assert finding_cost(graph, "tpu", effort).bucket == "hours"
    main_path = replace(graph, context=None)
    assert finding_cost(main_path, "tpu", effort).bucket == "days"


def test_containers_and_ci_count_fully(tmp_path):
    document = plan(_package(tmp_path, {"docker/Dockerfile": "FROM nvidia/cuda:12.1.1-runtime-ubuntu22.04\n"}), "rocm")
    image = _items(document, "dependencies")["docker/Dockerfile"]
    assert image["components"] == ["containers"] and image["optional"] is False
    assert image["effort"] == "minutes" and "moves with the code" in image["reason"]


def test_a_dependency_item_names_every_component_it_is_in(demo_tpu):
    items = {i["package"]: i for i in steps(demo_tpu)["dependencies"]["items"]}
    assert items["flash-attn"]["components"] == ["containers", "demo"]
    assert items["bitsandbytes"]["components"] == ["docs"] and items["bitsandbytes"]["optional"] is True
    assert items["triton"]["optional"] is False


def test_markdown_shows_the_components_and_marks_optional_items(tmp_path):
    document = run_plan(PlanRequest(str(_package(tmp_path, {"examples/graph.py": GRAPH})), "tpu", cache=False))
    table = document[document.index("By component"):document.index("## 1.")]
    assert "| pkg (ships) | package | fails |" in table and "| examples | examples | fails |" in table
    assert "*(in examples; optional)*" in document and "*(in pkg)*" in document


def test_one_component_is_the_headline_and_no_table(tmp_path):
    text = run_plan(PlanRequest(str(repo(tmp_path, {"m.py": "import torch\nx = torch.zeros(2).cuda()\n"})), "tpu",
                                cache=False))
    assert "By component" not in text and "*(in " not in text


def test_a_hardware_choice_only_in_an_example_is_optional(tmp_path):
    example = "import os\nimport torch\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\ny = torch.ones(2).cuda()\n"
    step = steps(plan(_package(tmp_path, {"examples/run.py": example}), "tpu"))["hardware-choices"]
    items = {item["text"].split(":")[0]: item for item in step["items"]}
    assert items["Device"]["components"] == ["examples", "pkg"] and items["Device"]["optional"] is False
    assert items["Visibility variables"]["components"] == ["examples"] and items["Visibility variables"]["optional"] is True
    text = run_plan(PlanRequest(str(tmp_path / "repo"), "tpu", cache=False))
    assert "- **Visibility variables** [minutes] *(in examples; optional)*: 1 line(s)" in text
    assert "- **Device** [minutes] *(in examples, pkg)*: 2 line(s)" in text


def test_the_page_keeps_each_step_s_largest_items_and_says_how_many_more():
    from auditor.plan.page import for_page

    order = ("minutes", "hours", "days", "no equivalent")
    items = [{"text": str(i), "effort": ("days" if i % 10 == 0 else "minutes"), "optional": i == 20} for i in range(150)]
    document = {"steps": [{"number": 3, "items": items}, {"number": 4, "items": items[:3]}]}
    cut = for_page(document, order, limit=12)
    third, fourth = cut["steps"]
    kept = [int(i["text"]) for i in third["items"]]
    assert len(kept) == 12 and third["more"] == 138 and kept == sorted(kept)  # the plan's order
    # the fourteen "days" items but the optional one fill it first: the first twelve of them
    assert kept == [0, 10, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120]
    assert fourth["items"] == items[:3] and fourth["more"] == 0
    assert document["steps"][0]["items"] is items and len(items) == 150  # the plan itself is whole
    ranking = {"ranking": []}
    assert for_page(ranking, order) is ranking


def test_a_repository_of_examples_is_judged_on_its_examples(tmp_path, capsys):
    """Nothing shipped and no scripts: the examples are what the repository is (the headline judged
    nothing and said "runs, 100" before, for the plan and for `audit`)."""
    examples = repo(tmp_path, {"examples/train.py": "import torch\nx = torch.zeros(2).cuda()\n"})
    document = plan(examples, "tpu")
    assert document["headline"]["verdict"] == "fails" and document["headline"]["score"] < 100
    assert any(u.startswith("No installable package or program was found") for u in document["unseen"])
    assert not any(u.startswith("No installable package") for u in plan(DEMO, "tpu")["unseen"])
    assert main([str(examples), "--format", "json", "--no-cache"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdicts"]["tpu"]["verdict"] == "fails" and report["scores"]["tpu"] < 100
