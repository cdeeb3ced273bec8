//! Process-level blocks: guide "Metadata", "Process contract v2", "Migrating v1 to v2", "Risk
//! level and rigor floors", "Dependencies", "Tool guidance", "Auth requirements" and "Output
//! coordination".

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

use super::Ctx;
use crate::package::model::{AuthSource, Process};
use crate::package::paths::{PathProblem, normalize_relative, path_problem};
use crate::package::requirement;
use crate::package::rules;
use crate::package::validity::{RiskSource, effective_risk};

/// guide "Metadata": "Must match ^[a-z0-9][a-z0-9-]*$".
static NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-z0-9][a-z0-9-]*$").expect("static regex"));

/// guide "Metadata": "Semver string", with `"1.0"` as the guide's own example, so one to three
/// numeric parts plus optional pre-release/build suffixes.
static VERSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\d+(\.\d+){0,2}(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$").expect("static regex")
});

/// An environment variable name, as the guide's loader checks `required_env_keys`.
static ENV_KEY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*$").expect("static regex"));

pub(super) fn check(ctx: &mut Ctx<'_>, p: &Process) {
    name_and_version(ctx, p);
    schema_version(ctx, p);
    risk(ctx, p);
    dependencies(ctx, p);
    tools(ctx, p);
    auth(ctx, p);
    output_coordination(ctx, p);
}

fn name_and_version(ctx: &mut Ctx<'_>, p: &Process) {
    if !NAME.is_match(&p.name) {
        ctx.emit(
            &rules::METADATA_NAME_FORMAT,
            "name",
            format!(
                "name {:?} must match ^[a-z0-9][a-z0-9-]*$ (lowercase kebab-case)",
                p.name
            ),
        );
    }
    if let Some(v) = &p.version
        && !VERSION.is_match(v)
    {
        ctx.emit(
            &rules::METADATA_VERSION_FORMAT,
            "version",
            format!("version {v:?} is not a semver-like string"),
        );
    }
}

fn schema_version(ctx: &mut Ctx<'_>, p: &Process) {
    match p.schema_version {
        Some(2) => {}
        Some(1) => ctx.emit(
            &rules::SCHEMA_VERSION_LEGACY_V1,
            "schema_version",
            "schema_version 1 is legacy (the package guide set June 30, 2026 as the end of v1 compatibility); migrate to schema_version: 2",
        ),
        None => ctx.emit(
            &rules::SCHEMA_VERSION_LEGACY_V1,
            "schema_version",
            "no schema_version: read as a legacy v1 definition (the package guide set June 30, 2026 as the end of v1 compatibility); set schema_version: 2",
        ),
        Some(other) => ctx.emit(
            &rules::SCHEMA_VERSION_UNSUPPORTED,
            "schema_version",
            format!("schema_version {other} is not supported (1 or 2)"),
        ),
    }
}

fn risk(ctx: &mut Ctx<'_>, p: &Process) {
    match effective_risk(p) {
        (_, RiskSource::Explicit) => {}
        (level, RiskSource::Inferred) => ctx.emit(
            &rules::RISK_LEVEL_INFERRED_HIGH,
            "risk_level",
            format!(
                "no risk_level: the name/tags carry a high-risk token, so the {} floor profile applies; set risk_level explicitly",
                level.as_str()
            ),
        ),
        (_, RiskSource::Default) => ctx.emit(
            &rules::RISK_LEVEL_MISSING,
            "risk_level",
            "no risk_level (optional but strongly recommended); the low/medium floor profile applies",
        ),
    }
}

fn dependencies(ctx: &mut Ctx<'_>, p: &Process) {
    for (i, dep) in p.dependencies.iter().enumerate() {
        let path = format!("dependencies[{i}]");
        match requirement::parse(dep) {
            Err(problem) => ctx.emit(
                &rules::DEPENDENCIES_INVALID,
                path,
                format!("{dep:?} {problem}; expected a requirement specifier such as `requests>=2.28` (PEP 508)"),
            ),
            Ok(r) if !r.pinned => ctx.emit(
                &rules::DEPENDENCIES_UNPINNED,
                path,
                format!("{dep:?} has no version constraint; pin it (unpinned dependencies are flagged in the install review)"),
            ),
            Ok(_) => {}
        }
    }
}

fn tools(ctx: &mut Ctx<'_>, p: &Process) {
    let Some(tools) = &p.tools else { return };
    for (list, names) in [("required", &tools.required), ("excluded", &tools.excluded)] {
        let mut seen = BTreeSet::new();
        for (i, name) in names.iter().enumerate() {
            if !seen.insert(name) {
                ctx.emit(
                    &rules::TOOLS_DUPLICATE,
                    format!("tools.{list}[{i}]"),
                    format!("tool {name:?} is listed twice in tools.{list}"),
                );
            }
        }
    }
    for (i, name) in tools.excluded.iter().enumerate() {
        if tools.required.contains(name) {
            ctx.emit(
                &rules::TOOLS_OVERLAP,
                format!("tools.excluded[{i}]"),
                format!("tool {name:?} is both required and excluded (required and excluded tools overlap)"),
            );
        }
    }
}

fn auth(ctx: &mut Ctx<'_>, p: &Process) {
    let Some(auth) = &p.auth else { return };
    for (i, req) in auth.required.iter().enumerate() {
        let base = format!("auth.required[{i}]");
        if req.provider.is_none() && req.resource_ref.is_none() && req.resource_id.is_none() {
            ctx.emit(
                &rules::AUTH_SELECTOR_MISSING,
                base.clone(),
                "needs `provider`, or a `resource_ref` / `resource_id` selector",
            );
        }
        if let Some(r) = &req.resource_ref
            && !resource_ref_ok(r)
        {
            ctx.emit(
                &rules::AUTH_RESOURCE_REF_FORMAT,
                format!("{base}.resource_ref"),
                format!("{r:?} is not mcp:<alias>, api_integration:<name> or tool:<name>"),
            );
        }
        for (j, key) in req.required_env_keys.iter().enumerate() {
            if !ENV_KEY.is_match(key.trim()) {
                ctx.emit(
                    &rules::AUTH_ENV_KEY_FORMAT,
                    format!("{base}.required_env_keys[{j}]"),
                    format!(
                        "{key:?} is not an environment variable name (^[A-Za-z_][A-Za-z0-9_]*$)"
                    ),
                );
            }
        }
        if req.mcp_server.is_some() && req.source != AuthSource::Mcp {
            ctx.emit(
                &rules::AUTH_MCP_SERVER_SOURCE,
                format!("{base}.mcp_server"),
                "mcp_server is only valid when source: mcp",
            );
        }
    }
}

/// guide "Auth requirements": "`mcp:<alias>`, `api_integration:<name>`, `tool:<name>`".
fn resource_ref_ok(r: &str) -> bool {
    ["mcp:", "api_integration:", "tool:"].iter().any(|prefix| {
        r.strip_prefix(prefix)
            .is_some_and(|rest| !rest.trim().is_empty() && !rest.contains(char::is_whitespace))
    })
}

fn output_coordination(ctx: &mut Ctx<'_>, p: &Process) {
    let Some(oc) = &p.output_coordination else {
        return;
    };
    let Some(root) = &oc.intermediate_root else {
        return;
    };
    match path_problem(root) {
        None => {}
        Some(PathProblem::Escape(problem)) => ctx.emit(
            &rules::OUTPUT_COORDINATION_ROOT_PATH,
            "output_coordination.intermediate_root",
            format!("intermediate_root {root:?} {problem}; it must be a normalized workspace-relative path"),
        ),
        Some(PathProblem::NotNormalized(_)) => ctx.emit(
            &rules::OUTPUT_COORDINATION_ROOT_NOT_NORMALIZED,
            "output_coordination.intermediate_root",
            format!(
                "intermediate_root {root:?} is read as {:?} (the guide's loader normalizes it); write the normalized path",
                normalize_relative(root)
            ),
        ),
    }
}
