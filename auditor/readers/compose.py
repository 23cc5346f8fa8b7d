"""Docker Compose files: services' images, `runtime:`, `deploy.resources.reservations.devices`
(read by the rules from the tree) and `environment:` settings."""

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
