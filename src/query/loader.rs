//! Finding and loading query plugins (`cdylib`s exporting `bzhead_query_plugin_entry`), and opening the built-in
//! ones ([`super::builtin`]) through the same checks.
//!
//! Search order ([`plugin_dirs`]): every `--plugin-dir`, then each directory of `BZHEAD_PLUGIN_PATH` (a
//! `PATH`-style list), then the user's data directory (`$XDG_DATA_HOME/bzhead/plugins`, by default
//! `~/.local/share/bzhead/plugins`), then the system ones ([`SYSTEM_PLUGIN_DIRS`]), then the directory of the running
//! executable (where `cargo build --workspace` puts the plugin files next to `bzhead`), and last the plugins built
//! into bzhead ([`PluginSet::load_standard`]). Every file in those directories whose name ends in the platform's
//! library suffix (`.so`, `.dylib`, `.dll`) is a candidate. The first plugin (in that order) that declares a
//! protocol serves it: a file overrides a built-in, and [`PluginSet::shadowed`] lists what was overridden.
//!
//! [`load_file`] checks everything before the first call into the plugin, in this order, and names the file and
//! what to do in each [`PluginError`]:
//! 0. the file is safe to load ([`check_file`]): a regular file (a symbolic link is followed), owned by the user
//!    running bzhead or by root, and writable by nobody else (no group or world write bit); otherwise anyone who
//!    could write it could run code as this user;
//! 1. the file is a loadable library (`Library::new`, which runs its initialisers: only load plugins you trust);
//! 2. it exports the entry symbol;
//! 3. the entry returns a non-null, aligned table;
//! 4. `abi_version == ABI_VERSION` (read before any other field);
//! 5. `struct_size >= size_of::<PluginApi>()` (only then is the whole table read);
//! 6. every function pointer is present;
//! 7. the name, version and every protocol name and description are UTF-8 of sane length, protocol names are
//!    lowercase words, and the protocol array is non-null and of sane length.
//!
//! A built-in plugin ([`load_builtin`]) starts at step 3: its entry function is called, and its table goes through
//! steps 3 to 7 exactly like a file's.
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

/// The system-wide plugin directories, searched after the user's and before the executable's.
pub const SYSTEM_PLUGIN_DIRS: &[&str] = &["/usr/local/lib/bzhead/plugins", "/usr/lib/bzhead/plugins"];

/// The user's plugin directory below the XDG data home (`$XDG_DATA_HOME`, by default `~/.local/share`).
pub const USER_PLUGIN_SUBDIR: &str = "bzhead/plugins";

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
    /// The file is not safe to load: not a regular file, owned by another user, or writable by others.
    UnsafeFile {
        /// The file.
        path: PathBuf,
        /// Why (and what to do).
        reason: String,
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
            | PluginError::BadName { path, .. }
            | PluginError::UnsafeFile { path, .. } => path,
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
            PluginError::UnsafeFile { path, reason } => write!(f, "{}: not loaded: {reason}", path.display()),
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

/// Why a directory is searched for plugins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirSource {
    /// `--plugin-dir` (or a directory passed to [`PluginSet::load_dirs`]).
    Flag,
    /// `$BZHEAD_PLUGIN_PATH`.
    Env,
    /// The user's data directory (`$XDG_DATA_HOME/bzhead/plugins`).
    User,
    /// A system directory ([`SYSTEM_PLUGIN_DIRS`]).
    System,
    /// The directory of the running executable.
    Executable,
}

impl DirSource {
    /// How `bzhead plugins` names it.
    pub fn label(self) -> &'static str {
        match self {
            DirSource::Flag => "--plugin-dir",
            DirSource::Env => "$BZHEAD_PLUGIN_PATH",
            DirSource::User => "user data directory",
            DirSource::System => "system directory",
            DirSource::Executable => "beside the executable",
        }
    }
}

/// A plugin directory and why it is searched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchDir {
    /// The directory.
    pub path: PathBuf,
    /// Why it is searched.
    pub source: DirSource,
}

/// Where a plugin came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginOrigin {
    /// Linked into this program ([`super::builtin::BUILTINS`]).
    BuiltIn {
        /// The crate it comes from.
        crate_name: &'static str,
    },
    /// A file.
    File {
        /// The file.
        path: PathBuf,
        /// The search directory it was found in (`None` for a file loaded by name with [`load_file`]).
        dir: Option<SearchDir>,
    },
}

impl fmt::Display for PluginOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginOrigin::BuiltIn { crate_name } => write!(f, "built in: {crate_name}"),
            PluginOrigin::File { path, dir: None } => write!(f, "{}", path.display()),
            PluginOrigin::File { path, dir: Some(d) } => write!(f, "{}, {}", path.display(), d.source.label()),
        }
    }
}

/// A loaded, checked plugin: the library, its table and a copy of its descriptive data.
pub struct PluginLibrary {
    path: PathBuf,
    origin: PluginOrigin,
    name: String,
    version: String,
    flags: u64,
    protocols: Vec<ProtocolDesc>,
    /// Points into `_library`'s static data; valid as long as `_library` is loaded (that is, as long as `self`).
    api: NonNull<PluginApi>,
    /// Declared last so that it is dropped (unloaded) last. `None` for a built-in plugin (static data of this
    /// program).
    _library: Option<Library>,
}

impl fmt::Debug for PluginLibrary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginLibrary")
            .field("origin", &self.origin)
            .field("name", &self.name)
            .field("version", &self.version)
            .field("protocols", &self.protocols)
            .finish_non_exhaustive()
    }
}

impl PluginLibrary {
    /// The file it was loaded from; for a built-in plugin, `built-in:<crate>` (there is no file).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where it came from: built in, or which file found in which directory.
    pub fn origin(&self) -> &PluginOrigin {
        &self.origin
    }

    /// True for a plugin linked into this program.
    pub fn is_builtin(&self) -> bool {
        matches!(self.origin, PluginOrigin::BuiltIn { .. })
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
        // library stays loaded as long as `self` exists (a built-in's is static data of this program); the plugin
        // never writes to it (ABI contract).
        unsafe { self.api.as_ref() }
    }
}

/// What the plugin search reads from the environment ([`SearchEnv::current`]); tests pass their own.
#[derive(Debug, Clone, Default)]
pub struct SearchEnv {
    /// `$BZHEAD_PLUGIN_PATH`.
    pub plugin_path: Option<OsString>,
    /// `$XDG_DATA_HOME`.
    pub xdg_data_home: Option<OsString>,
    /// `$HOME`.
    pub home: Option<OsString>,
    /// The running executable.
    pub exe: Option<PathBuf>,
    /// The system directories ([`SYSTEM_PLUGIN_DIRS`] in [`SearchEnv::current`]).
    pub system: Vec<PathBuf>,
}

impl SearchEnv {
    /// This process's environment.
    pub fn current() -> SearchEnv {
        SearchEnv {
            plugin_path: std::env::var_os(PLUGIN_PATH_ENV),
            xdg_data_home: std::env::var_os("XDG_DATA_HOME"),
            home: std::env::var_os("HOME"),
            exe: std::env::current_exe().ok(),
            system: SYSTEM_PLUGIN_DIRS.iter().map(PathBuf::from).collect(),
        }
    }

    /// The user's plugin directory: `$XDG_DATA_HOME/bzhead/plugins` when that is an absolute path (the XDG rule),
    /// else `$HOME/.local/share/bzhead/plugins`; `None` without either.
    pub fn user_dir(&self) -> Option<PathBuf> {
        let xdg = self.xdg_data_home.as_ref().map(PathBuf::from).filter(|p| p.is_absolute());
        let data = xdg.or_else(|| {
            self.home.as_ref().map(PathBuf::from).filter(|p| p.is_absolute()).map(|h| h.join(".local/share"))
        })?;
        Some(data.join(USER_PLUGIN_SUBDIR))
    }
}

/// The plugin directories, in search order, each with why it is searched: `explicit` (`--plugin-dir`), then
/// `BZHEAD_PLUGIN_PATH`, the user's data directory, the system directories, and the directory of the running
/// executable. The same directory twice is searched once (where it first appears).
pub fn plugin_dirs(explicit: &[PathBuf]) -> Vec<SearchDir> {
    plugin_dirs_with(explicit, &SearchEnv::current())
}

/// [`plugin_dirs`] with the environment passed in (testable).
pub fn plugin_dirs_with(explicit: &[PathBuf], env: &SearchEnv) -> Vec<SearchDir> {
    let mut dirs: Vec<SearchDir> =
        explicit.iter().map(|p| SearchDir { path: p.clone(), source: DirSource::Flag }).collect();
    if let Some(list) = &env.plugin_path {
        dirs.extend(
            std::env::split_paths(list)
                .filter(|p| !p.as_os_str().is_empty())
                .map(|path| SearchDir { path, source: DirSource::Env }),
        );
    }
    if let Some(path) = env.user_dir() {
        dirs.push(SearchDir { path, source: DirSource::User });
    }
    dirs.extend(env.system.iter().map(|p| SearchDir { path: p.clone(), source: DirSource::System }));
    if let Some(dir) = env.exe.as_deref().and_then(Path::parent) {
        dirs.push(SearchDir { path: dir.to_path_buf(), source: DirSource::Executable });
    }
    let mut seen = HashSet::new();
    dirs.retain(|d| seen.insert(d.path.canonicalize().unwrap_or_else(|_| d.path.clone())));
    dirs
}

/// The plugin directories, in search order ([`plugin_dirs`] without the reasons).
pub fn search_dirs(explicit: &[PathBuf]) -> Vec<PathBuf> {
    plugin_dirs(explicit).into_iter().map(|d| d.path).collect()
}

/// True when `path`'s file name ends in the platform's library suffix.
pub fn is_library_name(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.len() > std::env::consts::DLL_SUFFIX.len() && n.ends_with(std::env::consts::DLL_SUFFIX))
}

/// The candidate files of `dir` (every entry with a library's name, whatever its type: [`load_file`] refuses the
/// ones that are not regular files, with a reason), sorted by name.
pub fn candidates(dir: &Path) -> Result<Vec<PathBuf>, PluginError> {
    let rd = std::fs::read_dir(dir).map_err(|source| PluginError::ReadDir { dir: dir.to_path_buf(), source })?;
    let mut v: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| is_library_name(p)).collect();
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

/// Why the owner and mode of a plugin file make it unsafe to load, or `None` when they do not: it must be owned
/// by `euid` (the user running bzhead) or by root, and have no group or world write bit.
pub fn untrusted_owner_or_mode(owner: u32, mode: u32, euid: u32) -> Option<String> {
    if owner != euid && owner != 0 {
        return Some(format!(
            "owned by uid {owner}, not by you (uid {euid}) or root; anyone owning it could run code as you: \
             install it as yourself or as root"
        ));
    }
    if mode & 0o022 != 0 {
        let who = if mode & 0o002 != 0 { "everyone" } else { "its group" };
        return Some(format!(
            "writable by {who} (mode {:o}); anyone who can write it could run code as you: `chmod go-w` it",
            mode & 0o7777
        ));
    }
    None
}

/// Checks that `path` is safe to load as a plugin (step 0 of [`load_file`]): it is, or is a symbolic link (owned by
/// the user or root) to, a regular file owned by the user running bzhead or by root and writable by no one else.
/// Nothing is opened: a FIFO or a device is refused from its metadata.
pub fn check_file(path: &Path) -> Result<(), PluginError> {
    let unsafe_file = |reason: String| PluginError::UnsafeFile { path: path.to_path_buf(), reason };
    let link = std::fs::symlink_metadata(path).map_err(|e| unsafe_file(format!("cannot read its metadata: {e}")))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let euid = effective_uid();
        if link.file_type().is_symlink() && link.uid() != euid && link.uid() != 0 {
            return Err(unsafe_file(format!(
                "a symbolic link owned by uid {}, not by you (uid {euid}) or root",
                link.uid()
            )));
        }
    }
    #[cfg(not(unix))]
    let _ = link;
    let meta = std::fs::metadata(path).map_err(|e| unsafe_file(format!("cannot read its metadata: {e}")))?;
    check_metadata(path, &meta)
}

/// The file-type, owner and mode rules of [`check_file`] on `meta` (of the file itself, symbolic links followed).
fn check_metadata(path: &Path, meta: &std::fs::Metadata) -> Result<(), PluginError> {
    let unsafe_file = |reason: String| PluginError::UnsafeFile { path: path.to_path_buf(), reason };
    let ft = meta.file_type();
    if !ft.is_file() {
        let what = if ft.is_dir() { "a directory" } else { "not a regular file (a FIFO, socket or device)" };
        return Err(unsafe_file(format!("{what}; a plugin must be a regular file")));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Some(reason) = untrusted_owner_or_mode(meta.uid(), meta.mode(), effective_uid()) {
            return Err(unsafe_file(reason));
        }
    }
    Ok(())
}

#[cfg(unix)]
fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail (POSIX).
    unsafe { libc::geteuid() }
}

/// Opens `path` as a library after [`check_file`] accepted it.
///
/// The check and the load both go by path, so someone who can rename files in the plugin directory could swap
/// the file in between; the directories are the user's own (or root's) to keep. Loading through an open
/// descriptor (`/proc/self/fd/N`) would close that gap, but the dynamic loader recognises libraries by that name
/// and would hand back an earlier plugin loaded through a descriptor of the same number.
fn open_library(path: &Path) -> Result<Library, PluginError> {
    // SAFETY: loading a library runs its initialisers; plugins come from directories the user chose (or the
    // directory of bzhead itself), which is the trust boundary of any plugin host, and the file passed
    // `check_file` (nobody but the user or root can have written it). We pass an explicit path.
    unsafe { Library::new(path) }
        .map_err(|e| PluginError::NotALibrary { path: path.to_path_buf(), detail: e.to_string() })
}

/// Loads and checks one plugin file. Nothing of the plugin runs except its library initialisers and the entry
/// function (which only returns a pointer); nothing is opened before [`check_file`] accepts the file.
pub fn load_file(path: &Path) -> Result<PluginLibrary, PluginError> {
    load_file_from(path, None)
}

fn load_file_from(path: &Path, dir: Option<&SearchDir>) -> Result<PluginLibrary, PluginError> {
    check_file(path)?;
    let path_buf = path.to_path_buf();
    let library = open_library(path)?;
    // SAFETY: the symbol's type is the ABI's `EntryFn` (no arguments, returns a pointer); a plugin that exports the
    // name with another type breaks the ABI contract, which no host can detect.
    let entry: EntryFn = match unsafe { library.get::<EntryFn>(ENTRY_SYMBOL_NUL) } {
        Ok(sym) => *sym,
        Err(_) => return Err(PluginError::NoEntrySymbol { path: path_buf }),
    };
    let origin = PluginOrigin::File { path: path_buf.clone(), dir: dir.cloned() };
    // SAFETY: `entry` comes from `library`, which `open_table` keeps loaded as long as the table is used.
    unsafe { open_table(path_buf, origin, entry, Some(library)) }
}

/// Opens a plugin linked into this program through its entry function, with every check a loaded file's table
/// gets (steps 3 to 7 of the module docs). An error is a bug of the bundled plugin, named `built-in:<crate>`.
pub fn load_builtin(b: &super::builtin::Builtin) -> Result<PluginLibrary, PluginError> {
    let path = PathBuf::from(format!("built-in:{}", b.crate_name));
    // SAFETY: a built-in's entry function and table are static items of this program.
    unsafe { open_table(path, PluginOrigin::BuiltIn { crate_name: b.crate_name }, b.entry, None) }
}

/// Calls `entry` and checks the table it returns, before anything else of it is used.
///
/// # Safety
/// `entry` must follow the ABI's `EntryFn` contract, and the code and data it points into must stay valid as long as
/// `library` is loaded (for `None`: for the life of the program).
unsafe fn open_table(
    path_buf: PathBuf,
    origin: PluginOrigin,
    entry: EntryFn,
    library: Option<Library>,
) -> Result<PluginLibrary, PluginError> {
    let path = path_buf.as_path();
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
    // SAFETY: (this and every `table_text` call below) views into the plugin's static data, valid while the
    // library is loaded (for a built-in: for the life of the program).
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
    Ok(PluginLibrary {
        path: path_buf,
        origin,
        name,
        version: version_text,
        flags: t.flags,
        protocols,
        api,
        _library: library,
    })
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
    /// No built-in plugin is added ([`PluginSet::load_standard`] adds them).
    pub fn load_dirs(dirs: &[PathBuf]) -> PluginSet {
        let dirs: Vec<SearchDir> =
            dirs.iter().map(|p| SearchDir { path: p.clone(), source: DirSource::Flag }).collect();
        PluginSet::load_search_dirs(&dirs)
    }

    /// What bzhead offers: every plugin file of `dirs` (usually [`plugin_dirs`]), then the plugins built into this
    /// program ([`super::builtin::BUILTINS`]) for the protocols no file declares.
    pub fn load_standard(dirs: &[SearchDir]) -> PluginSet {
        let mut set = PluginSet::load_search_dirs(dirs);
        set.add_builtins();
        set
    }

    /// What a plain `bzhead` offers: the plugin files of the standard directories ([`plugin_dirs`] with no
    /// `--plugin-dir`: `$BZHEAD_PLUGIN_PATH`, the user's and the system's plugin directories, beside the
    /// executable), then the built-in plugins.
    pub fn standard() -> PluginSet {
        PluginSet::load_standard(&plugin_dirs(&[]))
    }

    /// Only the plugins built into this program.
    pub fn builtin() -> PluginSet {
        let mut set = PluginSet::default();
        set.add_builtins();
        set
    }

    /// Loads every candidate file of `dirs` (in order), remembering which directory each came from.
    pub fn load_search_dirs(dirs: &[SearchDir]) -> PluginSet {
        let mut set = PluginSet::default();
        let mut seen = HashSet::new();
        for dir in dirs {
            let files = match candidates(&dir.path) {
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
                set.add(load_file_from(&f, Some(dir)));
            }
        }
        set
    }

    /// Adds the plugins built into this program (after everything already in the set, so a file overrides them).
    pub fn add_builtins(&mut self) {
        for b in super::builtin::BUILTINS {
            self.add(load_builtin(b));
        }
    }

    /// Loads one file into the set (recording its error if it fails).
    pub fn load_one(&mut self, path: &Path) {
        self.add(load_file(path));
    }

    fn add(&mut self, loaded: Result<PluginLibrary, PluginError>) {
        match loaded {
            Ok(p) => {
                for proto in p.protocols() {
                    if let Some(winner) = self.plugin_for(&proto.name) {
                        self.shadowed.push((proto.name.clone(), winner.name().to_owned(), p.path().to_path_buf()));
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
    fn search_order_is_flag_env_user_system_exe() {
        let env = SearchEnv {
            plugin_path: Some(std::env::join_paths(["/e1", "", "/e2"]).unwrap()),
            xdg_data_home: None,
            home: Some("/home/u".into()),
            exe: Some(PathBuf::from("/opt/bzhead/bin/bzhead")),
            system: vec![PathBuf::from("/usr/lib/bzhead/plugins")],
        };
        let dirs = plugin_dirs_with(&[PathBuf::from("/flag")], &env);
        let paths: Vec<&Path> = dirs.iter().map(|d| d.path.as_path()).collect();
        assert_eq!(
            paths,
            [
                "/flag",
                "/e1",
                "/e2",
                "/home/u/.local/share/bzhead/plugins",
                "/usr/lib/bzhead/plugins",
                "/opt/bzhead/bin"
            ]
            .map(Path::new)
        );
        let sources: Vec<DirSource> = dirs.iter().map(|d| d.source).collect();
        use DirSource::*;
        assert_eq!(sources, [Flag, Env, Env, User, System, Executable]);
        // XDG_DATA_HOME wins over HOME when absolute, and is ignored when relative (the XDG rule).
        let xdg = SearchEnv { xdg_data_home: Some("/x/data".into()), ..env.clone() };
        assert_eq!(xdg.user_dir(), Some(PathBuf::from("/x/data/bzhead/plugins")));
        let rel = SearchEnv { xdg_data_home: Some("rel".into()), ..env.clone() };
        assert_eq!(rel.user_dir(), Some(PathBuf::from("/home/u/.local/share/bzhead/plugins")));
        assert_eq!(SearchEnv::default().user_dir(), None);
        let dirs = plugin_dirs_with(&[PathBuf::from("/x"), PathBuf::from("/x")], &SearchEnv::default());
        assert_eq!(dirs, [SearchDir { path: PathBuf::from("/x"), source: Flag }]);
    }

    #[test]
    fn owner_and_mode_rules() {
        assert_eq!(untrusted_owner_or_mode(1000, 0o100755, 1000), None);
        assert_eq!(untrusted_owner_or_mode(0, 0o100644, 1000), None);
        let other = untrusted_owner_or_mode(1001, 0o100755, 1000).unwrap();
        assert!(other.contains("owned by uid 1001"), "{other}");
        let group = untrusted_owner_or_mode(1000, 0o100775, 1000).unwrap();
        assert!(group.contains("writable by its group") && group.contains("775"), "{group}");
        let world = untrusted_owner_or_mode(0, 0o100757, 1000).unwrap();
        assert!(world.contains("writable by everyone"), "{world}");
    }

    #[test]
    fn every_builtin_passes_the_loader_checks() {
        let set = PluginSet::builtin();
        assert!(set.errors().is_empty(), "{:?}", set.errors());
        assert_eq!(set.plugins().len(), super::super::builtin::BUILTINS.len());
        for p in set.plugins() {
            assert!(p.is_builtin(), "{:?}", p.origin());
            assert!(p.catches_panics(), "{}", p.name());
        }
        for proto in ["teeworlds", "teeworlds7", "quake3", "warsow", "dpmaster", "savage2", "srb2"] {
            assert!(set.plugin_for(proto).is_some(), "{proto} is built in");
        }
        assert!(set.shadowed().is_empty(), "{:?}", set.shadowed());
    }

    /// A built-in with a broken table is refused by the same checks as a file, named `built-in:<crate>`.
    #[test]
    fn a_builtin_goes_through_the_same_table_checks() {
        use query_abi::PluginApi;
        fn altered(f: impl Fn(&mut PluginApi)) -> PluginApi {
            let t = &query_srb2::BZHEAD_QUERY_PLUGIN_API;
            let mut a = PluginApi {
                abi_version: t.abi_version,
                struct_size: t.struct_size,
                flags: t.flags,
                name: t.name,
                version: t.version,
                protocols: t.protocols,
                protocols_len: t.protocols_len,
                create: t.create,
                destroy: t.destroy,
                on_datagram: t.on_datagram,
                on_timeout: t.on_timeout,
                next_deadline_ms: t.next_deadline_ms,
            };
            f(&mut a);
            a
        }
        // Each entry is called once by this test; the leaked table lives as long as a real plugin's static one.
        extern "C" fn wrong_abi() -> *const PluginApi {
            Box::leak(Box::new(altered(|a| a.abi_version += 1)))
        }
        extern "C" fn short() -> *const PluginApi {
            Box::leak(Box::new(altered(|a| a.struct_size -= 8)))
        }
        extern "C" fn no_fn() -> *const PluginApi {
            Box::leak(Box::new(altered(|a| a.on_timeout = None)))
        }
        extern "C" fn null() -> *const PluginApi {
            std::ptr::null()
        }
        use super::super::builtin::Builtin;
        /// An entry function and what loading it must fail with.
        type Case = (EntryFn, fn(&PluginError) -> bool);
        let cases: [Case; 4] = [
            (wrong_abi, |e| matches!(e, PluginError::WrongAbiVersion { .. })),
            (short, |e| matches!(e, PluginError::ShortTable { .. })),
            (no_fn, |e| matches!(e, PluginError::MissingFunction { function: "on_timeout", .. })),
            (null, |e| matches!(e, PluginError::NullTable { .. })),
        ];
        for (entry, is) in cases {
            let err = load_builtin(&Builtin { crate_name: "broken-builtin", entry }).unwrap_err();
            assert!(is(&err), "{err:?}");
            assert!(err.to_string().starts_with("built-in:broken-builtin: "), "{err}");
        }
        let ok = load_builtin(&Builtin { crate_name: "bzhead-query-srb2", entry: query_srb2::query_plugin_entry });
        assert_eq!(ok.unwrap().origin(), &PluginOrigin::BuiltIn { crate_name: "bzhead-query-srb2" });
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
