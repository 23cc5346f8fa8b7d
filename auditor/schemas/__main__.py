"""`python -m auditor.schemas`: write the generated schemas into this package's folder."""

from pathlib import Path

from auditor.schemas import CONFIG_FILE, config_schema, render

if __name__ == "__main__":
    (Path(__file__).parent / CONFIG_FILE).write_text(render(config_schema()), encoding="utf-8")
