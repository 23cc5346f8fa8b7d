"""Built-in rules, one module each (shared matchers live in `auditor/python/syntax.py`)."""
