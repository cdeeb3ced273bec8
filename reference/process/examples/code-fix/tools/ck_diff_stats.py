"""Counts the lines the fix changed (used by the small-diff gate).

Compares every file under `.loom/baseline/` (the state before the fix, put there by whoever
set the workspace up) with the file of the same path in the workspace, line by line.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from loom.tools.registry import Tool, ToolContext, ToolResult


class DiffStatsTool(Tool):
    """Report added/removed/changed line counts against the baseline."""

    @property
    def name(self) -> str:
        return "ck_diff_stats"

    @property
    def description(self) -> str:
        return "Counts added, removed and changed lines of the workspace against .loom/baseline/."

    @property
    def parameters(self) -> dict:
        return {"type": "object", "properties": {}, "required": []}

    async def execute(self, args: dict, ctx: ToolContext) -> ToolResult:
        if ctx.workspace is None:
            return ToolResult.fail("No workspace.")
        base = Path(ctx.workspace) / ".loom" / "baseline"
        if not base.is_dir():
            return ToolResult.fail("No .loom/baseline/ to compare against.")
        added = removed = 0
        files = []
        for old in sorted(p for p in base.rglob("*") if p.is_file()):
            rel = old.relative_to(base)
            new = Path(ctx.workspace) / rel
            before = old.read_text(encoding="utf-8").splitlines()
            after = new.read_text(encoding="utf-8").splitlines() if new.is_file() else []
            for line in difflib.ndiff(before, after):
                if line.startswith("+ "):
                    added += 1
                elif line.startswith("- "):
                    removed += 1
            files.append(str(rel))
        diff = {"added": added, "removed": removed, "changed_lines": added + removed, "files": files}
        return ToolResult.ok(f"{added + removed} changed lines in {len(files)} files", data={"diff": diff})
