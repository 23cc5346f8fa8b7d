"""lockin-auditor: find NVIDIA lock-in in PyTorch code, score portability, suggest rewrites."""

__version__ = "0.1.0"
TOOL_NAME = "lockin-auditor"
