"""Lists the clause headings of a contract summary and the required clauses it lacks."""

from __future__ import annotations

import re
from pathlib import Path

from loom.tools.registry import Tool, ToolContext, ToolResult

REQUIRED = ("indemnification", "limitation of liability", "governing law", "termination")


class ClauseScan(Tool):
    """Clause headings (`## Name`) found in a Markdown file, and the required ones missing."""

    @property
    def name(self) -> str:
        return "clause_scan"

    @property
    def description(self) -> str:
        return "Scans a Markdown contract summary (default clauses.md) for its clause headings."

    @property
    def parameters(self) -> dict:
        return {"type": "object", "properties": {"path": {"type": "string"}}, "required": []}

    async def execute(self, args: dict, ctx: ToolContext) -> ToolResult:
        if ctx.workspace is None:
            return ToolResult.fail("No workspace.")
        rel = str(args.get("path") or "clauses.md")
        target = (Path(ctx.workspace) / rel).resolve()
        if Path(ctx.workspace).resolve() not in target.parents:
            return ToolResult.fail(f"{rel} is outside the workspace")
        if not target.is_file():
            return ToolResult.fail(f"{rel} does not exist")
        text = target.read_text(encoding="utf-8")
        clauses = sorted({m.strip().lower() for m in re.findall(r"(?m)^## (.+)$", text)})
        missing = [c for c in REQUIRED if c not in clauses]
        return ToolResult.ok(f"{len(clauses)} clauses, missing: {', '.join(missing) or 'none'}",
                             data={"clauses": clauses, "missing": missing})
