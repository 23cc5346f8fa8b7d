"""conda environment files (`environment*.yml`, `conda*.yml`): `channels:` as package indexes,
`dependencies:` as conda requirements (`pytorch-cuda=12.1`, `nvidia::cuda-toolkit`, build strings),
and the `pip:` subsection through the requirements-file reader, so `--extra-index-url`, `-r` includes
and `+cu121` pins read exactly as they do in a requirements file, at their place in this file."""

from __future__ import annotations

from auditor.context import FileContext
from auditor.readers.commands import conda_channel, conda_requirement
from auditor.readers.document import Document, Node
from auditor.readers.requirements import read_requirements
from auditor.readers.yaml_nodes import YamlError, parse


def document(ctx: FileContext) -> Document:
    try:
        trees = parse(ctx.text)
    except YamlError as exc:
        ctx.error("parse", str(exc))
        return Document()
    document = Document(trees=trees)
    deps = document.dependencies
    for tree in trees:
        if tree.shape != "map":
            continue
        channels = tree.get("channels")
        for item in channels.items if channels is not None and channels.shape == "seq" else []:
            if item.shape == "scalar" and item.value:
                deps.indexes.append(conda_channel(item.value, item, "conda channels:"))
        dependencies = tree.get("dependencies")
        for item in dependencies.items if dependencies is not None and dependencies.shape == "seq" else []:
            if item.shape == "scalar" and item.value:
                requirement = conda_requirement(item.value, deps, item)
                if requirement is not None:
                    deps.requirements.append(requirement)
            elif item.shape == "map":
                pip = item.get("pip")
                if pip is not None and pip.shape == "seq":
                    _pip_section(ctx, pip, document)
    return document


def _pip_section(ctx: FileContext, pip: Node, document: Document) -> None:
    """The pip entries, each put back on its own line and column in an otherwise blank text, read
    by the requirements reader: its positions are then this file's positions."""
    lines = [""] * (max((i.line for i in pip.items), default=0))
    for item in pip.items:
        if item.shape == "scalar" and item.value and (item.line == item.end_line or item.quoted):
            offset = item.column - 1 + (1 if item.quoted else 0)
            lines[item.line - 1] = " " * offset + item.value
    sub = FileContext(ctx.path, "\n".join(lines) + "\n", ctx.catalogue, "requirements")
    sub.source_path = getattr(ctx, "source_path", ctx.path)  # type: ignore[attr-defined]
    sub.scan_root = getattr(ctx, "scan_root", None)  # type: ignore[attr-defined]  # includes stay inside it
    found = read_requirements(sub)
    document.dependencies.requirements.extend(found.requirements)
    document.dependencies.indexes.extend(found.indexes)
    for error in sub.errors:
        ctx.error(error.kind, error.message)
