from __future__ import annotations

from auditor.checks._kernel import KernelApiRule
from auditor.checks.base import Invalid, Valid
from auditor.model import Category, Severity


class TensorrtRuntime(KernelApiRule):
    code = "LK411"
    name = "tensorrt-runtime"
    category = Category.KERNEL
    severity = Severity.BLOCKER
    message = "`{api}` belongs to NVIDIA's inference stack (TensorRT / Model Optimizer), which runs only on NVIDIA GPUs."
    suggestion = "Use {replacement}."
    min_torch = "2.6"
    supersedes = ("LK411",)
    what = ("Finds imports and uses of `tensorrt`, `tensorrt_llm`, `torch_tensorrt`, `polygraphy` and `modelopt` "
            "(NVIDIA Model Optimizer), resolved through aliases such as `import tensorrt as trt`.")
    why = ("TensorRT engines are built for and run on NVIDIA GPUs only. When the deployment path goes through it, "
           "every other target (ROCm: MIGraphX, XPU: OpenVINO, Trainium: the Neuron compiler) needs another "
           "export and runtime.")
    instead = ("Export once with `torch.export` and compile per target:\n\n"
               "```python\nep = torch.export.export(model, (example,))\n"
               "path = torch._inductor.aoti_compile_and_package(ep)  # torch 2.6+\n"
               "runner = torch._inductor.aoti_load_package(path)\n```\n\n"
               "or export to ONNX and pick the ONNX Runtime execution provider per target; use torchao for "
               "quantization instead of modelopt.")

    VALID = [
        Valid('"""Optionally accelerate with TensorRT."""\n# import tensorrt as trt\nprint("install torch_tensorrt")\n'),
        Valid("import torch\nep = torch.export.export(model, (x,))\n"),
        Valid("def build(trt):\n    return trt.Builder(logger)\n"),
    ]
    INVALID = [
        Invalid("import tensorrt as trt\nbuilder = trt.Builder(trt.Logger())\n", line=2),
        Invalid("import torch_tensorrt\ntrt_mod = torch_tensorrt.compile(model, inputs=[x])\n", line=2),
        Invalid("from polygraphy.backend.trt import EngineFromNetwork\n", line=1),
        Invalid("import modelopt.torch.quantization as mtq\nmodel = mtq.quantize(model, cfg, loop)\n", line=2),
        Invalid("try:\n    import tensorrt as trt\nexcept ImportError:\n    trt = None\n", line=2),
    ]
