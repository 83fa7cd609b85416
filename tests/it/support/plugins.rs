//! The query plugins as the host loads them: `cdylib` files, built once per test run.
//!
//! The real plugins' files (`plugins/cdylib-*`, `libbzhead_<name>.so`) are built by `cargo build --workspace` into
//! `target/<profile>/`. The deliberately broken ones (`query-misbehave*`) are rlibs in a workspace build, so that no
//! broken plugin ever lands beside a `bzhead` a user runs; [`build_plugins`] builds them as `cdylib`s with
//! `cargo rustc --crate-type cdylib` into their own target directory, `target/test-plugins/<profile>/`. A bare
//! `cargo test --test it` builds nothing else, so [`build_plugins`] runs those builds once (under a `Once`, like
//! libloading's own tests) for the profile the test binary was built with; that is a no-op when they are up to date.
//! Tests name a plugin by its engine crate (`query_teeworlds`) or its misbehave crate (`query_misbehave_null_fn`).

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

/// The target directory of the broken test plugins: `target/test-plugins`.
pub fn test_plugins_target() -> PathBuf {
    profile_dir().parent().expect("target dir").join("test-plugins")
}

fn profile_name() -> String {
    profile_dir().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "debug".into())
}

/// The file name of a `cdylib` crate (`query_misbehave` → `libquery_misbehave.so` on Linux).
pub fn lib_file_name(crate_name: &str) -> String {
    format!("{}{crate_name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX)
}

/// The plugin file package of a real plugin's engine crate (`query_teeworlds` → `cdylib-teeworlds`), if it is one.
fn cdylib_package(name: &str) -> Option<String> {
    REAL_PLUGINS.contains(&name).then(|| format!("cdylib-{}", name.trim_start_matches("query_")))
}

/// Path of a built plugin (after [`build_plugins`]): `target/<profile>/libbzhead_<name>.so` for a real plugin,
/// `target/test-plugins/<profile>/lib<name>.so` for a broken one.
pub fn plugin_path(name: &str) -> PathBuf {
    match cdylib_package(name) {
        Some(_) => profile_dir().join(lib_file_name(&format!("bzhead_{}", name.trim_start_matches("query_")))),
        None => test_plugins_target().join(profile_name()).join(lib_file_name(name)),
    }
}

/// Builds every plugin file once per test run (same profile as the tests); fails the test with the build log if
/// that fails. The broken ones go to [`test_plugins_target`], never beside the `bzhead` binary.
pub fn build_plugins() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let release = profile_name() == "release";
        let Some(target) = profile_dir().parent().map(Path::to_path_buf) else { panic!("no target directory") };
        let mut cmd = Command::new(&cargo);
        cmd.arg("build").current_dir(env!("CARGO_MANIFEST_DIR"));
        if release {
            cmd.arg("--release");
        }
        for name in REAL_PLUGINS {
            cmd.arg("-p").arg(cdylib_package(name).expect("a real plugin"));
        }
        // Same target directory as this test binary, whatever CARGO_TARGET_DIR said at build time.
        cmd.env("CARGO_TARGET_DIR", &target);
        let out = run_with_deadline(&mut cmd, Duration::from_secs(600));
        assert!(out.success(), "building the query plugins failed:\n{}", out.describe());
        for name in MISBEHAVE_PLUGINS {
            let mut cmd = Command::new(&cargo);
            cmd.args(["rustc", "--lib", "--crate-type", "cdylib", "-p", &name.replace('_', "-")]);
            cmd.current_dir(env!("CARGO_MANIFEST_DIR")).env("CARGO_TARGET_DIR", test_plugins_target());
            if release {
                cmd.arg("--release");
            }
            let out = run_with_deadline(&mut cmd, Duration::from_secs(600));
            assert!(out.success(), "building the test plugin {name} failed:\n{}", out.describe());
        }
        // The loader refuses group- or world-writable plugin files; a umask of 002 would make every build one.
        #[cfg(unix)]
        for name in REAL_PLUGINS.iter().chain(MISBEHAVE_PLUGINS) {
            use std::os::unix::fs::PermissionsExt;
            let p = plugin_path(name);
            if let Ok(meta) = std::fs::metadata(&p) {
                let mode = meta.permissions().mode() & !0o022;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode))
                    .unwrap_or_else(|e| panic!("chmod go-w {}: {e}", p.display()));
            }
        }
    });
    for name in REAL_PLUGINS.iter().chain(MISBEHAVE_PLUGINS) {
        let p = plugin_path(name);
        assert!(p.exists(), "{} missing after building the plugins", p.display());
    }
}

/// A fresh directory holding links to the given plugins (and nothing else), for `--plugin-dir`.
pub fn plugin_dir_with(label: &str, crates: &[&str]) -> TempDir {
    build_plugins();
    let dir = TempDir::new(label);
    for name in crates {
        let file = plugin_path(name);
        let Some(file_name) = file.file_name() else { panic!("no file name: {}", file.display()) };
        link(&file, &dir.join(file_name));
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
