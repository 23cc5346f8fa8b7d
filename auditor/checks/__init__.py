"""Built-in rules, one module each (shared matchers live in `auditor/checks/_helpers.py`)."""
