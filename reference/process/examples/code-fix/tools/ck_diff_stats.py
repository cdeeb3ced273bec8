"""Counts changed lines in the workspace's pending diff (used by the small-diff gate)."""

from __future__ import annotations

import subprocess

from loom.tools.registry import Tool, ToolContext, ToolResult


class DiffStatsTool(Tool):
    """Report added/removed/changed line counts of `git diff`."""

    @property
    def name(self) -> str:
        return "ck_diff_stats"

    @property
    def description(self) -> str:
        return "Counts added, removed and changed lines in the workspace's uncommitted diff."

    @property
    def parameters(self) -> dict:
        return {"type": "object", "properties": {}, "required": []}

    async def execute(self, args: dict, ctx: ToolContext) -> ToolResult:
        if ctx.workspace is None:
            return ToolResult.fail("No workspace.")
        try:
            out = subprocess.run(
                ["git", "diff", "--numstat"],
                cwd=ctx.workspace,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        except (OSError, subprocess.CalledProcessError) as e:
            return ToolResult.fail(f"git diff failed: {e}")
        added = removed = 0
        for line in out.splitlines():
            a, r, _ = line.split("\t", 2)
            if a.isdigit() and r.isdigit():
                added += int(a)
                removed += int(r)
        diff = {"added": added, "removed": removed, "changed_lines": added + removed}
        return ToolResult.ok(f"{added + removed} changed lines", data={"diff": diff})
