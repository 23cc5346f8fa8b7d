"""What YAML, JSON and TOML trees say beyond their values: the container images they run
(`image:` keys of compose services, Kubernetes/Helm pod specs, CI containers) and the environment
variables they set (compose `environment:` as a mapping or a `K=V` list, Kubernetes
`env: [{name, value}]`)."""

from __future__ import annotations

import re

from auditor.readers.document import Document, EnvSetting, ImageRef, Node

# compose interpolation: `${IMAGE:-nvidia/cuda:12.1.0-base}` stands for its default when unset.
_DEFAULT = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*:?-([^}]*)\}")


def _span(node: Node) -> dict:
    return {"line": node.line, "column": node.column, "end_line": node.end_line, "end_column": node.end_column}


def tree_document(trees: list[Node]) -> Document:
    """A Document with the trees, and the images and environment settings found in them."""
    document = Document(trees=trees)
    for tree in trees:
        for path, node, key in tree.walk():
            name = path[-1] if path else ""
            if name == "image" and node.shape == "scalar" and node.value and key is not None:
                image = _DEFAULT.sub(lambda m: m.group(1), node.value.strip())
                document.images.append(ImageRef(**_span(node), image=image, via="image",
                                                parameterized=image != node.value.strip()))
            elif name in ("environment", "env") and key is not None:
                document.env.extend(_settings(node))
    return document


def _settings(node: Node) -> list[EnvSetting]:
    found = []
    if node.shape == "map":  # compose: `environment: {NCCL_DEBUG: INFO}`
        for key, value in node.pairs:
            if key.shape == "scalar":
                found.append(EnvSetting(**_span(key), name=key.value,
                                        value=value.value if value.shape == "scalar" else None, via="environment"))
    elif node.shape == "seq":
        for item in node.items:
            if item.shape == "scalar" and item.value:  # compose: `- NCCL_DEBUG=INFO`
                name, _, value = item.value.partition("=")
                found.append(EnvSetting(line=item.line, column=item.column, end_line=item.line,
                                        end_column=item.column + len(item.value) + 2 * item.quoted,
                                        name=name.strip(), value=value or None, via="environment"))
            elif item.shape == "map":  # Kubernetes: `- name: NCCL_DEBUG` / `value: INFO`
                name, value = item.get("name"), item.get("value")
                if name is not None and name.shape == "scalar":
                    found.append(EnvSetting(**_span(name), name=name.value,
                                            value=value.value if value is not None and value.shape == "scalar"
                                            else None, via="env"))
    return found
