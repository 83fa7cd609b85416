//! The query plugins as the host loads them: `cdylib`s in `target/<profile>/`, built once per test run.
//!
//! `./test` builds the whole workspace first; a bare `cargo test --test it` does not build the plugin crates, so
//! [`build_plugins`] runs `cargo build -p <each plugin>` once (under a `Once`, like libloading's own tests) for the
//! profile the test binary was built with. That is a no-op when they are up to date.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;
use std::time::Duration;

use super::{run_with_deadline, TempDir};

/// The real protocol plugins.
pub const REAL_PLUGINS: &[&str] = &["query_teeworlds", "query_quake3", "query_savage2", "query_srb2"];

/// The host-test plugins (`query-misbehave*`).
pub const MISBEHAVE_PLUGINS: &[&str] = &[
    "query_misbehave",
    "query_misbehave_wrong_abi",
    "query_misbehave_short_table",
    "query_misbehave_null_fn",
    "query_misbehave_bad_name",
    "query_misbehave_null_table",
    "query_misbehave_no_entry",
];

/// `target/<profile>`, derived from this test executable (`target/<profile>/deps/it-HASH`).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("deps dir");
    deps.parent().expect("profile dir").to_path_buf()
}

/// The file name of a `cdylib` crate (`query_teeworlds` → `libquery_teeworlds.so` on Linux).
pub fn lib_file_name(crate_name: &str) -> String {
    format!("{}{crate_name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX)
}

/// Path of a built plugin (after [`build_plugins`]).
pub fn plugin_path(crate_name: &str) -> PathBuf {
    profile_dir().join(lib_file_name(crate_name))
}

/// Builds every plugin crate once per test run (same profile as the tests); fails the test with the build log if
/// that fails.
pub fn build_plugins() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let mut cmd = Command::new(cargo);
        cmd.arg("build").current_dir(env!("CARGO_MANIFEST_DIR"));
        if profile_dir().file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        for name in REAL_PLUGINS.iter().chain(MISBEHAVE_PLUGINS) {
            cmd.arg("-p").arg(name.replace('_', "-"));
        }
        // Same target directory as this test binary, whatever CARGO_TARGET_DIR said at build time.
        if let Some(target) = profile_dir().parent() {
            cmd.env("CARGO_TARGET_DIR", target);
        }
        let out = run_with_deadline(&mut cmd, Duration::from_secs(600));
        assert!(out.success(), "building the query plugins failed:\n{}", out.describe());
    });
    for name in REAL_PLUGINS.iter().chain(MISBEHAVE_PLUGINS) {
        let p = plugin_path(name);
        assert!(p.exists(), "{} missing after building the plugins (run `cargo build --workspace`)", p.display());
    }
}

/// A fresh directory holding links to the given plugins (and nothing else), for `--plugin-dir`.
pub fn plugin_dir_with(label: &str, crates: &[&str]) -> TempDir {
    build_plugins();
    let dir = TempDir::new(label);
    for name in crates {
        link(&plugin_path(name), &dir.join(lib_file_name(name)));
    }
    dir
}

/// A directory with the four real plugins.
pub fn real_plugin_dir() -> TempDir {
    plugin_dir_with("real-plugins", REAL_PLUGINS)
}

fn link(from: &Path, to: &Path) {
    #[cfg(unix)]
    std::os::unix::fs::symlink(from, to).unwrap_or_else(|e| panic!("symlink {}: {e}", to.display()));
    #[cfg(not(unix))]
    std::fs::copy(from, to).map(|_| ()).unwrap_or_else(|e| panic!("copy {}: {e}", to.display()));
}
