"""Placeholder until the worker sandbox lands: runs inline."""

from .submission import InlineExecutor


class SandboxExecutor(InlineExecutor):
    def __init__(self, memory_mb: int = 4096):
        super().__init__()
