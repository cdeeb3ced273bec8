"""A minimal stand-in for `loom.tools.registry` (guide "Bundled tools": Tool, ToolContext,
ToolResult), enough to run a package's tools/*.py outside Loom. Written by loom-process."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class ToolContext:
    workspace: Path | None = None
    scratch_dir: Path | None = None
    subtask_id: str = ""
    auth_context: Any = None
    execution_surface: str = "cli"


@dataclass
class ToolResult:
    success: bool
    output: str = ""
    data: Any = None
    error: str | None = None
    files_changed: list = field(default_factory=list)

    @classmethod
    def ok(cls, output: str = "", data: Any = None, files_changed=None, **_ignored):
        return cls(True, output, data, None, list(files_changed or []))

    @classmethod
    def fail(cls, error: str, **_ignored):
        return cls(False, "", None, error, [])

    @classmethod
    def multimodal(cls, output: str = "", blocks=None, **_ignored):
        return cls(True, output, {"blocks": blocks or []}, None, [])


class Tool:
    _registered_classes: set = set()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        Tool._registered_classes.add(cls)

    @property
    def is_mutating(self) -> bool:
        return False

    @property
    def mutation_target_arg_keys(self) -> tuple:
        return ("path",)

    @property
    def supported_execution_surfaces(self) -> tuple:
        return ("tui", "api", "cli")
