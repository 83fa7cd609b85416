//! bzhead as a user gets it: `cargo install --path .` into an empty prefix gives a `bzhead` that speaks every bundled
//! query protocol with no plugin file anywhere (the real DDNet, Teeworlds 0.7 and OpenArena servers answer it); the
//! deliberately broken test plugins are never found by a normal `bzhead`; a plugin file that is not safe to load is
//! refused with the reason.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::support::gameservers::{tw07_bare_connection, GameServer};
use crate::support::plugins::{build_plugins, lib_file_name, plugin_path, profile_dir, MISBEHAVE_PLUGINS};
use crate::support::{run_with_deadline, RunOutput, TempDir, WAIT};

/// The protocols bzhead links in, by the plugin (name) that serves them.
const BUNDLED: &[(&str, &[&str])] = &[
    ("teeworlds", &["teeworlds", "teeworlds7"]),
    ("quake3", &["quake3", "warsow", "dpmaster"]),
    ("savage2", &["savage2"]),
    ("srb2", &["srb2"]),
];

/// Runs `bin ARGS` as a user with an empty home (no user plugin directory) and no `BZHEAD_PLUGIN_PATH`.
fn run_as_user(bin: &Path, home: &Path, args: &[&str]) -> RunOutput {
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .env("HOME", home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("BZHEAD_PLUGIN_PATH")
        .env_remove("RUST_LOG")
        .current_dir(home);
    run_with_deadline(&mut cmd, WAIT * 2)
}

fn plugins_json(out: &RunOutput) -> Value {
    assert!(out.success(), "{}", out.describe());
    serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}:\n{}", out.describe()))
}

/// The plugin entry of `plugins --json` that serves `protocol` (the first that declares it).
fn serving<'a>(v: &'a Value, protocol: &str) -> Option<&'a Value> {
    v["plugins"]
        .as_array()?
        .iter()
        .find(|p| p["protocols"].as_array().is_some_and(|ps| ps.iter().any(|d| d["name"] == protocol)))
}

fn query(bin: &Path, home: &Path, protocol: &str, addr: SocketAddr) -> Value {
    let a = addr.to_string();
    let out = run_as_user(bin, home, &["query", protocol, &a, "--json"]);
    let line = out.stdout.lines().next().unwrap_or_else(|| panic!("no output:\n{}", out.describe()));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// `cargo install --path . --root ROOT --debug --locked` (its own target directory, `target/install`, so the
/// workspace's builds are not disturbed; incremental after the first run); returns `ROOT/bin/bzhead`.
fn cargo_install(root: &Path) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let Some(target) = profile_dir().parent().map(|t| t.join("install")) else { panic!("no target directory") };
    let mut cmd = Command::new(cargo);
    cmd.args(["install", "--path", env!("CARGO_MANIFEST_DIR"), "--debug", "--locked", "--root"])
        .arg(root)
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RUSTFLAGS")
        .current_dir(root);
    let out = run_with_deadline(&mut cmd, Duration::from_secs(1500));
    assert!(out.success(), "cargo install failed:\n{}", out.describe());
    let bin = root.join("bin").join(format!("bzhead{}", std::env::consts::EXE_SUFFIX));
    assert!(bin.is_file(), "{} missing after cargo install:\n{}", bin.display(), out.describe());
    bin
}

#[test]
fn cargo_install_gives_a_bzhead_that_queries_every_bundled_protocol_with_no_plugin_file() {
    let root = TempDir::new("install-root");
    let home = TempDir::new("install-home");
    let bin = cargo_install(root.path());
    let files: Vec<_> = std::fs::read_dir(root.join("bin")).unwrap().filter_map(|e| e.ok()).map(|e| e.path()).collect();
    assert_eq!(files, std::slice::from_ref(&bin), "cargo install puts only the binary in bin/");

    // Every bundled protocol is there, built in, through the loader's checks, with nothing refused.
    let v = plugins_json(&run_as_user(&bin, home.path(), &["plugins", "--json"]));
    assert_eq!(v["errors"].as_array().map(Vec::len), Some(0), "{v}");
    for (plugin, protocols) in BUNDLED {
        for protocol in *protocols {
            let p = serving(&v, protocol).unwrap_or_else(|| panic!("nothing serves {protocol}: {v}"));
            assert_eq!(p["name"], *plugin, "{v}");
            assert_eq!(p["origin"]["builtin"], format!("bzhead-query-{plugin}"), "{protocol} is built in: {p}");
            assert_eq!(p["catches_panics"], true, "{p}");
        }
    }
    let text = run_as_user(&bin, home.path(), &["plugins"]);
    assert!(text.success(), "{}", text.describe());
    for needle in
        ["(built in: bzhead-query-teeworlds)", "(built in: bzhead-query-quake3)", "then the plugins built into"]
    {
        assert!(text.stdout.contains(needle), "no {needle:?} in:\n{}", text.stdout);
    }
    assert!(
        text.stdout.contains(&format!("{} (user data directory)", home.join(".local/share/bzhead/plugins").display())),
        "the user's plugin directory is searched:\n{}",
        text.stdout
    );

    // The real servers answer it.
    let ddnet = GameServer::ddnet("bzhead installed DDNet");
    let r = query(&bin, home.path(), "teeworlds", ddnet.addr());
    assert_eq!((r["ok"].clone(), r["name"].clone()), (Value::Bool(true), "bzhead installed DDNet".into()), "{r}");
    assert_eq!(r["raw"]["format"], "extended", "{r}");

    let tw07 = GameServer::teeworlds07("bzhead installed TW07");
    let _conn = tw07_bare_connection(tw07.addr());
    let r = query(&bin, home.path(), "teeworlds7", tw07.addr());
    assert_eq!((r["ok"].clone(), r["name"].clone()), (Value::Bool(true), "bzhead installed TW07".into()), "{r}");
    assert_eq!(r["version"], "0.7.5", "{r}");

    let oa = GameServer::openarena("bzhead installed OA", 2);
    let r = query(&bin, home.path(), "quake3", oa.addr());
    assert_eq!((r["ok"].clone(), r["name"].clone()), (Value::Bool(true), "bzhead installed OA".into()), "{r}");
    assert_eq!(r["bots"], 2, "{r}");

    // The monitor finds the built-in protocols too: one round over the real servers, kept in its database.
    let db = home.join("monitor.db");
    let (oa_addr, ddnet_addr) = (format!("quake3={}", oa.addr()), format!("teeworlds={}", ddnet.addr()));
    let args = ["monitor", "--db", db.to_str().unwrap(), "--server", &oa_addr, "--server", &ddnet_addr];
    let out = run_as_user(&bin, home.path(), &[&args[..], &["--rounds", "1", "--interval", "1"]].concat());
    assert!(out.success(), "the installed monitor ran a round:\n{}", out.describe());
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut names: Vec<(String, String)> = conn
        .prepare("SELECT protocol, name FROM servers WHERE up = 1 ORDER BY protocol")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ("quake3".to_owned(), "bzhead installed OA".to_owned()),
            ("teeworlds".into(), "bzhead installed DDNet".into())
        ],
        "the installed monitor's database:\n{}",
        out.describe()
    );

    // A plugin file in the user's data directory overrides the built-in, and `plugins` says so.
    build_plugins();
    let user_dir = home.join(".local/share/bzhead/plugins");
    std::fs::create_dir_all(&user_dir).unwrap();
    let file = user_dir.join(lib_file_name("bzhead_quake3"));
    std::fs::copy(plugin_path("query_quake3"), &file).unwrap();
    let v = plugins_json(&run_as_user(&bin, home.path(), &["plugins", "--json"]));
    let p = serving(&v, "quake3").unwrap_or_else(|| panic!("nothing serves quake3: {v}"));
    assert_eq!(p["origin"]["file"], file.display().to_string(), "{v}");
    assert_eq!(p["origin"]["source"], "user data directory", "{v}");
    let builtin = v["plugins"].as_array().unwrap().iter().find(|p| p["origin"]["builtin"] == "bzhead-query-quake3");
    let builtin = builtin.unwrap_or_else(|| panic!("the built-in quake3 is still listed: {v}"));
    assert_eq!(builtin["protocols"][0]["overridden_by"]["file"], file.display().to_string(), "{v}");
    let r = query(&bin, home.path(), "quake3", oa.addr());
    assert_eq!(r["ok"], true, "the file plugin answers too: {r}");
}

#[test]
fn the_broken_test_plugins_are_never_found_by_a_normal_bzhead() {
    build_plugins();
    for name in MISBEHAVE_PLUGINS {
        let beside = profile_dir().join(lib_file_name(name));
        assert!(!beside.exists(), "{} lies beside the bzhead binary", beside.display());
        assert!(plugin_path(name).is_file(), "{} was built for the tests", plugin_path(name).display());
    }
    let home = TempDir::new("normal-user-home");
    let bin = crate::support::bzhead_bin();
    let v = plugins_json(&run_as_user(&bin, home.path(), &["plugins", "--json"]));
    let text = v.to_string();
    for needle in ["misbehave", "panic-on-create", "broken"] {
        assert!(!text.contains(needle), "a normal bzhead lists {needle:?}: {v}");
    }
    // Beside the development binary (target/<profile>, where a workspace build leaves every cdylib) there is
    // nothing but the bundled plugins: a new test plugin must be an rlib built by support/plugins.rs, like these.
    assert_eq!(v["errors"].as_array().map(Vec::len), Some(0), "{v}");
    for p in v["plugins"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap_or_default();
        assert!(BUNDLED.iter().any(|(b, _)| *b == name), "a normal bzhead finds plugin {name:?}: {p}");
    }
    let out = run_as_user(&bin, home.path(), &["query", "panic-on-create", "127.0.0.1:1"]);
    assert_eq!(out.code, Some(2), "{}", out.describe());
    assert!(out.stderr.contains("unknown protocol \"panic-on-create\""), "{}", out.describe());
}

#[cfg(unix)]
#[test]
fn plugin_files_that_are_not_safe_to_load_are_refused_with_the_reason() {
    use std::os::unix::fs::PermissionsExt;
    build_plugins();
    let dir = TempDir::new("unsafe-plugins");
    let good = plugin_path("query_quake3");
    let copy = |name: &str, mode: u32| {
        let f = dir.join(lib_file_name(name));
        std::fs::copy(&good, &f).unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
        f
    };
    copy("group_writable", 0o775);
    copy("world_writable", 0o757);
    std::fs::create_dir(dir.join(lib_file_name("a_directory"))).unwrap();
    let fifo = dir.join(lib_file_name("a_fifo"));
    let st = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(st.success(), "mkfifo {}", fifo.display());
    // A file of another user: only root can make one; as anyone else the unit test of the rule covers it.
    let root = {
        use std::os::unix::fs::MetadataExt;
        // A file just made belongs to the effective user.
        std::fs::metadata(&fifo).unwrap().uid() == 0
    };
    if root {
        let f = copy("other_owner", 0o755);
        let st = Command::new("chown").arg("65534").arg(&f).status().expect("chown");
        assert!(st.success(), "chown 65534 {}", f.display());
    }
    let safe = copy("safe_copy", 0o755);

    let home = TempDir::new("unsafe-plugins-home");
    let d = dir.path().to_str().unwrap();
    let bin = crate::support::bzhead_bin();
    let out = run_as_user(&bin, home.path(), &["plugins", "--plugin-dir", d]);
    assert!(out.success(), "{}", out.describe());
    let mut expected = vec![
        ("libgroup_writable.so", "writable by its group (mode 775)"),
        ("libworld_writable.so", "writable by everyone (mode 757)"),
        ("liba_directory.so", "a directory; a plugin must be a regular file"),
        ("liba_fifo.so", "not a regular file"),
    ];
    if root {
        expected.push(("libother_owner.so", "owned by uid 65534, not by you (uid 0) or root"));
    }
    for (file, reason) in expected {
        let line = out.stdout.lines().find(|l| l.contains(file));
        let line = line.unwrap_or_else(|| panic!("{file} is not reported:\n{}", out.stdout));
        assert!(line.contains("not loaded") && line.contains(reason), "{file}: {line}");
    }
    // Only the safe copy loaded: it serves quake3, and nothing else from that directory did.
    let v = plugins_json(&run_as_user(&bin, home.path(), &["plugins", "--json", "--plugin-dir", d]));
    let from_dir: Vec<&Value> = v["plugins"].as_array().unwrap().iter().filter(|p| p["origin"]["dir"] == d).collect();
    assert_eq!(from_dir.len(), 1, "{v}");
    assert_eq!(from_dir[0]["origin"]["file"], safe.display().to_string(), "{v}");
    assert_eq!(v["errors"].as_array().map(Vec::len), Some(if root { 5 } else { 4 }), "{v}");
}
