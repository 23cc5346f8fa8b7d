"""JSON configs a framework reads (DeepSpeed, accelerate). JSON is read with the YAML parser,
which keeps line and column marks (json does not); a file it rejects is checked with json, and
one that is not valid JSON either is an error entry."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from auditor.readers.document import Document
from auditor.readers.structured import tree_document
from auditor.readers.yaml_nodes import YamlError, parse

if TYPE_CHECKING:
    from auditor.context import FileContext


def document(ctx: FileContext) -> Document:
    try:
        json.loads(ctx.text)
    except ValueError as exc:
        ctx.error("parse", f"invalid JSON: {exc}")
        return Document()
    try:
        return tree_document(parse(ctx.text.replace("\t", " ")))  # YAML forbids tabs where JSON allows them
    except YamlError as exc:
        ctx.error("parse", f"valid JSON that the position-keeping reader cannot follow ({exc}); not checked")
        return Document()
