"""Runs one bundled tool of a LOOM process package (guide "Bundled tools") and prints its
ToolResult as one JSON line. Written by loom-process into a private temporary directory
together with a minimal `loom.tools.registry` (Tool, ToolContext, ToolResult), so a package's
tools/*.py run without Loom installed.

argv: harness.py TOOL_FILE TOOL_NAME WORKSPACE SUBTASK_ID ARGS_JSON
"""

import asyncio
import importlib.util
import json
import sys

sys.dont_write_bytecode = True


def main() -> int:
    tool_file, tool_name, workspace, subtask, args_json = sys.argv[1:6]
    args = json.loads(args_json or "{}")
    from pathlib import Path

    from loom.tools import registry

    spec = importlib.util.spec_from_file_location("loom_bundled_tool", tool_file)
    if spec is None or spec.loader is None:
        return emit(False, "", None, f"cannot import {tool_file}", [])
    module = importlib.util.module_from_spec(spec)
    sys.modules["loom_bundled_tool"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the import itself failed: report, do not crash
        return emit(False, "", None, f"importing {tool_file} failed: {type(e).__name__}: {e}", [])
    chosen = None
    for cls in sorted(registry.Tool._registered_classes, key=lambda c: c.__name__):
        try:
            if cls().name == tool_name:
                chosen = cls
                break
        except Exception:
            continue
    if chosen is None:
        return emit(False, "", None, f"{tool_file} defines no Tool named {tool_name!r}", [])
    ctx = registry.ToolContext(
        workspace=Path(workspace),
        scratch_dir=None,
        subtask_id=subtask,
        auth_context=None,
        execution_surface="cli",
    )
    try:
        result = asyncio.run(chosen().execute(args, ctx))
    except Exception as e:  # a tool that raises is a failed call, with the reason
        return emit(False, "", None, f"{tool_name} raised {type(e).__name__}: {e}", [])
    if not isinstance(result, registry.ToolResult):
        return emit(False, "", None, f"{tool_name} returned {type(result).__name__}, not a ToolResult", [])
    return emit(result.success, result.output, result.data, result.error, result.files_changed)


def emit(ok, output, data, error, files_changed) -> int:
    try:
        text = json.dumps(
            {"ok": bool(ok), "output": str(output or ""), "data": data, "error": error,
             "files_changed": [str(f) for f in (files_changed or [])]},
            sort_keys=True,
        )
    except (TypeError, ValueError) as e:
        text = json.dumps({"ok": False, "output": "", "data": None,
                           "error": f"tool data is not JSON: {e}", "files_changed": []})
    sys.stdout.write("\n" + "LOOM-TOOL-RESULT " + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
