//! Finding and loading query plugins (`cdylib`s exporting `bzhead_query_plugin_entry`).
//!
//! Search order ([`search_dirs`]): every `--plugin-dir`, then each directory of `BZHEAD_PLUGIN_PATH` (a
//! `PATH`-style list), then the directory of the running executable (where `cargo build --workspace` puts the
//! plugins next to `bzhead`). Every file in those directories whose name ends in the platform's library suffix
//! (`.so`, `.dylib`, `.dll`) is a candidate.
//!
//! [`load_file`] checks everything before the first call into the plugin, in this order, and names the file and
//! what to rebuild in each [`PluginError`]:
//! 1. the file is a loadable library (`Library::new`, which runs its initialisers: only load plugins you trust);
//! 2. it exports the entry symbol;
//! 3. the entry returns a non-null, aligned table;
//! 4. `abi_version == ABI_VERSION` (read before any other field);
//! 5. `struct_size >= size_of::<PluginApi>()` (only then is the whole table read);
//! 6. every function pointer is present;
//! 7. the name, version and every protocol name and description are UTF-8 of sane length, protocol names are
//!    lowercase words, and the protocol array is non-null and of sane length.
//!
//! The [`Library`] is kept in the same struct as the table pointer ([`PluginLibrary`]) and is never unloaded while
//! anything uses it (instances hold an `Rc` to it).

use std::collections::HashSet;
use std::ffi::OsString;
use std::fmt;
use std::mem::size_of;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use libloading::Library;
use query_abi::{EntryFn, PluginApi, ProtocolInfo, Str, ABI_VERSION, ENTRY_SYMBOL, ENTRY_SYMBOL_NUL, KIND_MASTER};

/// Environment variable with extra plugin directories (a `PATH`-style list).
pub const PLUGIN_PATH_ENV: &str = "BZHEAD_PLUGIN_PATH";

/// Longest plugin or protocol name accepted.
pub const MAX_NAME: usize = 64;
/// Longest version or description text accepted.
pub const MAX_TEXT: usize = 1024;
/// Most protocols one plugin may declare.
pub const MAX_PROTOCOLS: usize = 256;

/// Why a plugin could not be loaded. Every variant names the file and says what to do.
#[derive(Debug)]
#[non_exhaustive]
pub enum PluginError {
    /// The file is not a loadable library (or a dependency of it is missing).
    NotALibrary {
        /// The file.
        path: PathBuf,
        /// The loader's message.
        detail: String,
    },
    /// The library does not export the entry symbol: it is not a bzhead query plugin.
    NoEntrySymbol {
        /// The file.
        path: PathBuf,
    },
    /// The entry symbol returned a null (or misaligned) table.
    NullTable {
        /// The file.
        path: PathBuf,
    },
    /// The plugin was built against another ABI version.
    WrongAbiVersion {
        /// The file.
        path: PathBuf,
        /// The plugin's `abi_version`.
        found: u32,
    },
    /// The table is shorter than this ABI version's.
    ShortTable {
        /// The file.
        path: PathBuf,
        /// The plugin's `struct_size`.
        size: u32,
        /// What this host needs.
        expected: usize,
    },
    /// A function pointer of the table is null.
    MissingFunction {
        /// The file.
        path: PathBuf,
        /// Which one.
        function: &'static str,
    },
    /// A name, version, description or the protocol list is invalid (not UTF-8, too long, null...).
    BadName {
        /// The file.
        path: PathBuf,
        /// Which field and what is wrong with it.
        what: String,
    },
    /// A plugin directory could not be read.
    ReadDir {
        /// The directory.
        dir: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl PluginError {
    /// The file (or directory) the error is about.
    pub fn path(&self) -> &Path {
        match self {
            PluginError::NotALibrary { path, .. }
            | PluginError::NoEntrySymbol { path }
            | PluginError::NullTable { path }
            | PluginError::WrongAbiVersion { path, .. }
            | PluginError::ShortTable { path, .. }
            | PluginError::MissingFunction { path, .. }
            | PluginError::BadName { path, .. } => path,
            PluginError::ReadDir { dir, .. } => dir,
        }
    }
}

impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginError::NotALibrary { path, detail } => {
                write!(f, "{}: not a loadable library ({detail}); remove it from the plugin directory", path.display())
            }
            PluginError::NoEntrySymbol { path } => write!(
                f,
                "{}: not a bzhead query plugin (no `{ENTRY_SYMBOL}` symbol); build query plugins with \
                 query_abi::export_query_plugin!",
                path.display()
            ),
            PluginError::NullTable { path } => write!(
                f,
                "{}: `{ENTRY_SYMBOL}` returned no table (null or misaligned); the plugin cannot run here, rebuild it \
                 with query_abi::export_query_plugin!",
                path.display()
            ),
            PluginError::WrongAbiVersion { path, found } => write!(
                f,
                "{}: plugin ABI version {found}, but this bzhead speaks version {ABI_VERSION}; rebuild the plugin \
                 against query-abi {ABI_VERSION} (or use a bzhead built for ABI {found})",
                path.display()
            ),
            PluginError::ShortTable { path, size, expected } => write!(
                f,
                "{}: plugin table is {size} bytes, ABI {ABI_VERSION} needs at least {expected}; rebuild the plugin \
                 against this query-abi",
                path.display()
            ),
            PluginError::MissingFunction { path, function } => write!(
                f,
                "{}: plugin table has no `{function}` function (null pointer); rebuild the plugin with \
                 query_abi::export_query_plugin!",
                path.display()
            ),
            PluginError::BadName { path, what } => {
                write!(f, "{}: invalid plugin table: {what}; fix the plugin's names and rebuild it", path.display())
            }
            PluginError::ReadDir { dir, source } => {
                write!(f, "cannot read the plugin directory {}: {source}", dir.display())
            }
        }
    }
}

impl std::error::Error for PluginError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PluginError::ReadDir { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// What kind of server a protocol queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtocolKind {
    /// A game server: the answer is the server's info.
    Server,
    /// A master server: the answer is a list of game servers.
    Master,
}

/// One protocol of a loaded plugin, copied out of its table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolDesc {
    /// Protocol name (`teeworlds`, `dpmaster`...).
    pub name: String,
    /// One line for `bzhead plugins`.
    pub description: String,
    /// Port used when an address has none.
    pub default_port: u16,
    /// Server or master.
    pub kind: ProtocolKind,
}

/// A loaded, checked plugin: the library, its table and a copy of its descriptive data.
pub struct PluginLibrary {
    path: PathBuf,
    name: String,
    version: String,
    flags: u64,
    protocols: Vec<ProtocolDesc>,
    /// Points into `_library`'s static data; valid as long as `_library` is loaded (that is, as long as `self`).
    api: NonNull<PluginApi>,
    /// Declared last so that it is dropped (unloaded) last.
    _library: Library,
}

impl fmt::Debug for PluginLibrary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginLibrary")
            .field("path", &self.path)
            .field("name", &self.name)
            .field("version", &self.version)
            .field("protocols", &self.protocols)
            .finish_non_exhaustive()
    }
}

impl PluginLibrary {
    /// The file it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The plugin's version.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The table's flags (`query_abi::FLAG_PANIC_UNWIND`...).
    pub fn flags(&self) -> u64 {
        self.flags
    }

    /// True when the plugin was built with `panic = "unwind"`, so a panic in it becomes an error for one query. A
    /// plugin built with `panic = "abort"` takes the whole process down when it panics.
    pub fn catches_panics(&self) -> bool {
        self.flags & query_abi::FLAG_PANIC_UNWIND != 0
    }

    /// The protocols it speaks.
    pub fn protocols(&self) -> &[ProtocolDesc] {
        &self.protocols
    }

    /// The checked table. Every function pointer in it is `Some` (checked at load).
    pub(crate) fn api(&self) -> &PluginApi {
        // SAFETY: `api` was checked non-null and aligned at load, the table is the plugin's static data and the
        // library stays loaded as long as `self` exists; the plugin never writes to it (ABI contract).
        unsafe { self.api.as_ref() }
    }
}

/// The plugin directories, in search order: `explicit` (`--plugin-dir`), then `BZHEAD_PLUGIN_PATH`, then the
/// directory of the running executable. Duplicates are kept out.
pub fn search_dirs(explicit: &[PathBuf]) -> Vec<PathBuf> {
    search_dirs_with(explicit, std::env::var_os(PLUGIN_PATH_ENV), std::env::current_exe().ok())
}

/// [`search_dirs`] with the environment passed in (testable).
pub fn search_dirs_with(explicit: &[PathBuf], env: Option<OsString>, exe: Option<PathBuf>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = explicit.to_vec();
    if let Some(env) = env {
        dirs.extend(std::env::split_paths(&env).filter(|p| !p.as_os_str().is_empty()));
    }
    if let Some(dir) = exe.as_deref().and_then(Path::parent) {
        dirs.push(dir.to_path_buf());
    }
    let mut seen = HashSet::new();
    dirs.retain(|d| seen.insert(d.canonicalize().unwrap_or_else(|_| d.clone())));
    dirs
}

/// True when `path`'s file name ends in the platform's library suffix.
pub fn is_library_name(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.len() > std::env::consts::DLL_SUFFIX.len() && n.ends_with(std::env::consts::DLL_SUFFIX))
}

/// The candidate files of `dir`, sorted by name.
pub fn candidates(dir: &Path) -> Result<Vec<PathBuf>, PluginError> {
    let rd = std::fs::read_dir(dir).map_err(|source| PluginError::ReadDir { dir: dir.to_path_buf(), source })?;
    let mut v: Vec<PathBuf> =
        rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| is_library_name(p) && p.is_file()).collect();
    v.sort();
    Ok(v)
}

/// Reads a borrowed static text of the table, with a length cap checked before reading.
///
/// # Safety
/// `s` must be a view the plugin promises readable while the library is loaded (or null/0).
unsafe fn table_text(path: &Path, s: Str, what: &str, max: usize) -> Result<String, PluginError> {
    let bad = |why: String| PluginError::BadName { path: path.to_path_buf(), what: format!("{what}: {why}") };
    if s.len > max {
        return Err(bad(format!("{} bytes, at most {max} allowed", s.len)));
    }
    // SAFETY: length capped above; null/length checked inside; readability is the caller's promise.
    match unsafe { s.to_str() } {
        Ok(t) => Ok(t.to_owned()),
        Err(e) => Err(bad(e.to_string())),
    }
}

fn valid_protocol_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= MAX_NAME
        && n.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// Loads and checks one plugin file. Nothing of the plugin runs except its library initialisers and the entry
/// function (which only returns a pointer).
pub fn load_file(path: &Path) -> Result<PluginLibrary, PluginError> {
    let path_buf = path.to_path_buf();
    // SAFETY: loading a library runs its initialisers; plugins come from directories the user chose (or the
    // directory of bzhead itself), which is the trust boundary of any plugin host. We pass an explicit path.
    let library = unsafe { Library::new(path) }
        .map_err(|e| PluginError::NotALibrary { path: path_buf.clone(), detail: e.to_string() })?;
    // SAFETY: the symbol's type is the ABI's `EntryFn` (no arguments, returns a pointer); a plugin that exports the
    // name with another type breaks the ABI contract, which no host can detect.
    let entry: EntryFn = match unsafe { library.get::<EntryFn>(ENTRY_SYMBOL_NUL) } {
        Ok(sym) => *sym,
        Err(_) => return Err(PluginError::NoEntrySymbol { path: path_buf }),
    };
    // SAFETY: `entry` has the ABI's signature and promises no side effects; it is called on this thread only.
    let table = unsafe { entry() };
    let Some(api) = NonNull::new(table.cast_mut()) else { return Err(PluginError::NullTable { path: path_buf }) };
    if !table.is_aligned() {
        return Err(PluginError::NullTable { path: path_buf });
    }
    // SAFETY: non-null and aligned; every ABI version starts with `abi_version: u32, struct_size: u32`, so these 8
    // bytes are readable whatever version the plugin was built for. Nothing else is read before the checks.
    let [version, size] = unsafe { table.cast::<[u32; 2]>().read() };
    if version != ABI_VERSION {
        return Err(PluginError::WrongAbiVersion { path: path_buf, found: version });
    }
    if (size as usize) < size_of::<PluginApi>() {
        return Err(PluginError::ShortTable { path: path_buf, size, expected: size_of::<PluginApi>() });
    }
    // SAFETY: the plugin declares a table at least as large as ours, of our ABI version.
    let t = unsafe { api.as_ref() };
    for (present, function) in [
        (t.create.is_some(), "create"),
        (t.destroy.is_some(), "destroy"),
        (t.on_datagram.is_some(), "on_datagram"),
        (t.on_timeout.is_some(), "on_timeout"),
        (t.next_deadline_ms.is_some(), "next_deadline_ms"),
    ] {
        if !present {
            return Err(PluginError::MissingFunction { path: path_buf, function });
        }
    }
    // SAFETY (all `table_text` calls): views into the plugin's static data, valid while the library is loaded.
    let name = unsafe { table_text(path, t.name, "plugin name", MAX_NAME) }?;
    if !valid_protocol_name(&name) {
        return Err(PluginError::BadName {
            path: path_buf,
            what: format!("plugin name {name:?} is not a lowercase word (a-z, 0-9, '-', '_')"),
        });
    }
    // SAFETY: as above.
    let version_text = unsafe { table_text(path, t.version, "plugin version", MAX_TEXT) }?;
    if t.protocols_len > MAX_PROTOCOLS {
        return Err(PluginError::BadName {
            path: path_buf,
            what: format!("{} protocols, at most {MAX_PROTOCOLS} allowed", t.protocols_len),
        });
    }
    if t.protocols_len == 0 {
        return Err(PluginError::BadName { path: path_buf, what: "the plugin declares no protocol".into() });
    }
    if t.protocols.is_null() || !t.protocols.is_aligned() {
        return Err(PluginError::BadName {
            path: path_buf,
            what: "protocol list pointer is null or misaligned".into(),
        });
    }
    // SAFETY: non-null, aligned, count capped; static data of the loaded library per the ABI.
    let infos: &[ProtocolInfo] = unsafe { std::slice::from_raw_parts(t.protocols, t.protocols_len) };
    let mut protocols = Vec::with_capacity(infos.len());
    for (i, p) in infos.iter().enumerate() {
        // SAFETY: as above.
        let pname = unsafe { table_text(path, p.name, &format!("protocol {i} name"), MAX_NAME) }?;
        if !valid_protocol_name(&pname) {
            return Err(PluginError::BadName {
                path: path_buf,
                what: format!("protocol name {pname:?} is not a lowercase word (a-z, 0-9, '-', '_')"),
            });
        }
        // SAFETY: as above.
        let description =
            unsafe { table_text(path, p.description, &format!("protocol {pname} description"), MAX_TEXT) }?;
        let kind = if p.kind == KIND_MASTER { ProtocolKind::Master } else { ProtocolKind::Server };
        if protocols.iter().any(|d: &ProtocolDesc| d.name == pname) {
            return Err(PluginError::BadName { path: path_buf, what: format!("protocol {pname:?} declared twice") });
        }
        protocols.push(ProtocolDesc { name: pname, description, default_port: p.default_port, kind });
    }
    Ok(PluginLibrary { path: path_buf, name, version: version_text, flags: t.flags, protocols, api, _library: library })
}

/// Every plugin found in a list of directories, and every file that failed to load.
#[derive(Debug, Default)]
pub struct PluginSet {
    plugins: Vec<std::rc::Rc<PluginLibrary>>,
    errors: Vec<PluginError>,
    /// Protocol names claimed by two plugins: (protocol, the plugin that won, the file that lost).
    shadowed: Vec<(String, String, PathBuf)>,
}

impl PluginSet {
    /// Loads every candidate file of `dirs` (in order). A file that fails is recorded in [`PluginSet::errors`];
    /// the others still load. The same file reached twice (through a symlink or two equal directories) loads once.
    pub fn load_dirs(dirs: &[PathBuf]) -> PluginSet {
        let mut set = PluginSet::default();
        let mut seen = HashSet::new();
        for dir in dirs {
            let files = match candidates(dir) {
                Ok(f) => f,
                Err(e) => {
                    // A missing directory from the environment or a default is normal; report others.
                    let missing = matches!(&e, PluginError::ReadDir { source, .. }
                        if source.kind() == std::io::ErrorKind::NotFound);
                    if !missing {
                        set.errors.push(e);
                    }
                    continue;
                }
            };
            for f in files {
                if !seen.insert(f.canonicalize().unwrap_or_else(|_| f.clone())) {
                    continue;
                }
                set.load_one(&f);
            }
        }
        set
    }

    /// Loads one file into the set (recording its error if it fails).
    pub fn load_one(&mut self, path: &Path) {
        match load_file(path) {
            Ok(p) => {
                for proto in p.protocols() {
                    if let Some(winner) = self.plugin_for(&proto.name) {
                        self.shadowed.push((proto.name.clone(), winner.name().to_owned(), path.to_path_buf()));
                    }
                }
                self.plugins.push(std::rc::Rc::new(p));
            }
            Err(e) => self.errors.push(e),
        }
    }

    /// The plugins that loaded, in search order.
    pub fn plugins(&self) -> &[std::rc::Rc<PluginLibrary>] {
        &self.plugins
    }

    /// The files that did not load.
    pub fn errors(&self) -> &[PluginError] {
        &self.errors
    }

    /// Protocols declared by more than one plugin: `(protocol, plugin used, file not used for it)`.
    pub fn shadowed(&self) -> &[(String, String, PathBuf)] {
        &self.shadowed
    }

    /// The first plugin (in search order) that speaks `protocol`.
    pub fn plugin_for(&self, protocol: &str) -> Option<&std::rc::Rc<PluginLibrary>> {
        self.plugins.iter().find(|p| p.protocols().iter().any(|d| d.name == protocol))
    }

    /// The description of `protocol`, from the plugin that serves it.
    pub fn protocol(&self, protocol: &str) -> Option<&ProtocolDesc> {
        self.plugin_for(protocol).and_then(|p| p.protocols().iter().find(|d| d.name == protocol))
    }

    /// Every protocol name served, in search order, without duplicates.
    pub fn protocol_names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = Vec::new();
        for p in &self.plugins {
            for d in p.protocols() {
                if !v.contains(&d.name.as_str()) {
                    v.push(&d.name);
                }
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_order_is_flag_env_exe() {
        let env = std::env::join_paths(["/e1", "", "/e2"]).unwrap();
        let dirs =
            search_dirs_with(&[PathBuf::from("/flag")], Some(env), Some(PathBuf::from("/opt/bzhead/bin/bzhead")));
        assert_eq!(dirs, ["/flag", "/e1", "/e2", "/opt/bzhead/bin"].map(PathBuf::from));
        let dirs = search_dirs_with(&[PathBuf::from("/x"), PathBuf::from("/x")], None, None);
        assert_eq!(dirs, [PathBuf::from("/x")]);
    }

    #[test]
    fn library_names() {
        let so = format!("libquery_x{}", std::env::consts::DLL_SUFFIX);
        assert!(is_library_name(Path::new(&so)));
        assert!(!is_library_name(Path::new("libquery_x.rlib")));
        assert!(!is_library_name(Path::new(std::env::consts::DLL_SUFFIX)));
    }

    #[test]
    fn protocol_names_are_words() {
        assert!(valid_protocol_name("teeworlds7"));
        assert!(valid_protocol_name("panic-on-create"));
        assert!(!valid_protocol_name("Quake3"));
        assert!(!valid_protocol_name("a b"));
        assert!(!valid_protocol_name(""));
    }

    #[test]
    fn a_text_file_is_not_a_library() {
        let dir = std::env::temp_dir().join(format!("bzhead-loader-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join(format!("libfoo{}", std::env::consts::DLL_SUFFIX));
        std::fs::write(&f, "not a library\n").unwrap();
        let err = load_file(&f).unwrap_err();
        assert!(matches!(err, PluginError::NotALibrary { .. }), "{err}");
        assert!(err.to_string().contains("libfoo"), "{err}");
        let set = PluginSet::load_dirs(&[dir.clone(), dir.join("missing")]);
        assert_eq!(set.plugins().len(), 0);
        assert_eq!(set.errors().len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
