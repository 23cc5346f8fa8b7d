"""Other YAML files (Kubernetes and Helm manifests, Lightning / Hydra / accelerate configs, CI
files): their node trees, images and environment settings. Which files get here is decided by
name (auditor.discover.kinds) and a byte gate (only files that mention nvidia, cuda, gpu or nccl are parsed)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from auditor.readers.document import Document
from auditor.readers.structured import tree_document
from auditor.readers.yaml_nodes import YamlError, parse

if TYPE_CHECKING:
    from auditor.context import FileContext


def document(ctx: FileContext) -> Document:
    try:
        return tree_document(parse(ctx.text))
    except YamlError as exc:
        ctx.error("parse", str(exc))
        return Document()
