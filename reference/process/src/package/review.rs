//! The install security review (guide "Security review").

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use super::dir::LoadedPackage;
use super::rules;

/// Review risk as the guide defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum InstallRisk {
    /// YAML-only, no dependencies, no code.
    Low,
    /// Has dependencies or bundled code (but not both).
    Medium,
    /// Has both dependencies and bundled code.
    High,
}

impl InstallRisk {
    /// From the two facts the guide's levels depend on.
    pub fn of(has_dependencies: bool, has_code: bool) -> Self {
        match (has_dependencies, has_code) {
            (false, false) => InstallRisk::Low,
            (true, true) => InstallRisk::High,
            _ => InstallRisk::Medium,
        }
    }
}

/// One dependency line of the review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReviewedDependency {
    /// The requirement as declared.
    pub requirement: String,
    /// True when it has no version constraint (guide "Dependencies": "unpinned dependencies
    /// are flagged as a security risk during install review").
    pub unpinned: bool,
}

/// One bundled file of the review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BundledFile {
    /// Package-relative path.
    pub path: String,
    /// True for tool modules Loom discovers and runs when the process loads.
    pub auto_loaded: bool,
}

/// What `loom install` shows before asking for approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SecurityReview {
    /// Package name.
    pub package: String,
    /// Version, if declared.
    pub version: Option<String>,
    /// Author, if declared.
    pub author: Option<String>,
    /// Where it is installed from.
    pub source: String,
    /// Where it would be installed.
    pub target: String,
    /// Declared dependencies.
    pub dependencies: Vec<ReviewedDependency>,
    /// Bundled files under `tools/`.
    pub bundled_code: Vec<BundledFile>,
    /// The risk level.
    pub risk: InstallRisk,
}

impl SecurityReview {
    /// The review of `pkg` installed under `install_root` (e.g. `~/.loom/processes`).
    pub fn of(pkg: &LoadedPackage, install_root: &Path) -> Self {
        let unpinned: Vec<&str> = pkg
            .report
            .warnings()
            .filter(|d| d.rule == rules::DEPENDENCIES_UNPINNED.id)
            .map(|d| d.path.as_str())
            .collect();
        let dependencies = pkg
            .process
            .dependencies
            .iter()
            .enumerate()
            .map(|(i, dep)| ReviewedDependency {
                requirement: dep.clone(),
                unpinned: unpinned.contains(&format!("dependencies[{i}]").as_str()),
            })
            .collect::<Vec<_>>();
        SecurityReview {
            package: pkg.process.name.clone(),
            version: pkg.process.version.clone(),
            author: pkg.process.author.clone(),
            source: pkg.root.display().to_string(),
            target: install_root.join(&pkg.process.name).display().to_string(),
            risk: InstallRisk::of(!dependencies.is_empty(), !pkg.bundled_code.is_empty()),
            dependencies,
            bundled_code: pkg
                .bundled_code
                .iter()
                .map(|path| BundledFile {
                    auto_loaded: pkg.tools.contains(path),
                    path: path.clone(),
                })
                .collect(),
        }
    }

    /// The reason shown after the risk level.
    pub fn reason(&self) -> &'static str {
        match (self.dependencies.is_empty(), self.bundled_code.is_empty()) {
            (true, true) => "YAML-only, no dependencies, no code",
            (false, true) => "dependencies present",
            (true, false) => "bundled code present",
            (false, false) => "dependencies and bundled code present",
        }
    }

    /// The review in the guide's layout.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let version = self
            .version
            .as_deref()
            .map(|v| format!(" v{v}"))
            .unwrap_or_default();
        let _ = writeln!(out, "Package: {}{version}", self.package);
        let _ = writeln!(
            out,
            "Author:  {}",
            self.author.as_deref().unwrap_or("(none)")
        );
        let _ = writeln!(out, "Source:  {}", self.source);
        let _ = writeln!(out, "Target:  {}", self.target);
        out.push('\n');
        let _ = writeln!(out, "Dependencies ({}):", self.dependencies.len());
        for dep in &self.dependencies {
            let flag = if dep.unpinned { "  ⚠ unpinned" } else { "" };
            let _ = writeln!(out, "  {}{flag}", dep.requirement);
        }
        out.push('\n');
        let n = self.bundled_code.len();
        let _ = writeln!(
            out,
            "Bundled code ({n} file{}):",
            if n == 1 { "" } else { "s" }
        );
        for file in &self.bundled_code {
            let note = if file.auto_loaded {
                "executes automatically when process is loaded"
            } else {
                "bundled, not auto-registered (may be imported by tools)"
            };
            let _ = writeln!(out, "  ⚠  {} — {note}", file.path);
        }
        out.push('\n');
        let level = match self.risk {
            InstallRisk::Low => "LOW",
            InstallRisk::Medium => "MEDIUM",
            InstallRisk::High => "HIGH",
        };
        let _ = writeln!(out, "Risk: {level} — {}", self.reason());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn risk_levels_follow_the_guide() {
        assert_eq!(InstallRisk::of(false, false), InstallRisk::Low);
        assert_eq!(InstallRisk::of(true, false), InstallRisk::Medium);
        assert_eq!(InstallRisk::of(false, true), InstallRisk::Medium);
        assert_eq!(InstallRisk::of(true, true), InstallRisk::High);
    }
}
