"""Docker Compose files: services' images, `runtime:`, `deploy.resources.reservations.devices`
(read by the rules from the tree) and `environment:` settings. The reader builds the same YAML node
tree as any other YAML file (auditor.readers.yaml_config); what makes a compose file is its kind,
which selects the rules that read those keys."""

from __future__ import annotations

from auditor.readers.yaml_config import document

__all__ = ["document"]
