"""Web analytics arithmetic for the web-analytics-audit package: five operations the
analysis phases use so that every rate, lift and share in the deliverables is computed, not
estimated."""

from __future__ import annotations

from loom.tools.registry import Tool, ToolContext, ToolResult

OPERATIONS = ("funnel_rates", "conversion_lift", "attribution_shares", "segment_sizes", "quality_score")


def _pct(x: float) -> float:
    return round(100.0 * x, 2)


def funnel_rates(a: dict) -> dict:
    counts = [float(c) for c in a["counts"]]
    if len(counts) < 2 or counts[0] <= 0:
        raise ValueError("counts needs at least two steps and a positive first step")
    steps = [_pct(counts[i + 1] / counts[i]) if counts[i] else 0.0 for i in range(len(counts) - 1)]
    overall = _pct(counts[-1] / counts[0])
    reported = a.get("reported_overall_pct")
    error = abs(float(reported) - overall) if reported is not None else 0.0
    return {"funnel": {"step_rates_pct": steps, "overall_rate_pct": overall,
                       "reported_overall_pct": reported, "consistency_error_pct": round(error, 2)}}


def conversion_lift(a: dict) -> dict:
    base, variant = float(a["baseline_rate"]), float(a["variant_rate"])
    if base <= 0:
        raise ValueError("baseline_rate must be positive")
    return {"lift": {"relative_pct": _pct((variant - base) / base), "absolute_pts": round(variant - base, 4)}}


def attribution_shares(a: dict) -> dict:
    credits = {k: float(v) for k, v in a["credits"].items()}
    total = sum(credits.values())
    if total <= 0:
        raise ValueError("credits must sum to a positive number")
    shares = {k: _pct(v / total) for k, v in sorted(credits.items())}
    return {"attribution": {"shares_pct": shares, "channels": sorted(credits)}}


def segment_sizes(a: dict) -> dict:
    total = float(a["total_users"])
    sizes = {k: _pct(float(v) / total) for k, v in sorted(a["segments"].items())}
    return {"segments": {"share_pct": sizes, "coverage_pct": round(sum(sizes.values()), 2)}}


def quality_score(a: dict) -> dict:
    scores = [float(v) for v in a["dimensions"].values()]
    if not scores or any(s < 1 or s > 5 for s in scores):
        raise ValueError("each dimension is scored 1-5")
    return {"quality": {"score": round(100.0 * (sum(scores) / len(scores) - 1) / 4, 1)}}


class WebAnalyticsMetrics(Tool):
    """Funnel, lift, attribution, segment and data-quality arithmetic."""

    @property
    def name(self) -> str:
        return "wa_metrics"

    @property
    def description(self) -> str:
        return (
            "Computes web analytics figures. Operations: funnel_rates {counts, reported_overall_pct?}, "
            "conversion_lift {baseline_rate, variant_rate}, attribution_shares {credits}, "
            "segment_sizes {segments, total_users}, quality_score {dimensions}."
        )

    @property
    def parameters(self) -> dict:
        return {
            "type": "object",
            "properties": {
                "operation": {"type": "string", "enum": list(OPERATIONS)},
                "args": {"type": "object"},
            },
            "required": ["operation", "args"],
        }

    async def execute(self, args: dict, ctx: ToolContext) -> ToolResult:
        operation = args.get("operation", "")
        op_args = args.get("args", {})
        handlers = {
            "funnel_rates": funnel_rates,
            "conversion_lift": conversion_lift,
            "attribution_shares": attribution_shares,
            "segment_sizes": segment_sizes,
            "quality_score": quality_score,
        }
        if operation not in handlers:
            return ToolResult.fail(f"Unknown operation: {operation}. Use: {', '.join(OPERATIONS)}")
        try:
            data = handlers[operation](op_args)
        except (KeyError, TypeError) as e:
            return ToolResult.fail(f"Missing or invalid argument: {e}")
        except (ValueError, ZeroDivisionError) as e:
            return ToolResult.fail(f"Calculation error: {e}")
        return ToolResult.ok(f"{operation}: {data}", data=data)
