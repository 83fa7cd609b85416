//! The server variable store: arbitrary names and expressions, evaluated lazily.
#![no_main]

use bzhead::bzflag::vars::VarStore;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut v = VarStore::defaults();
    for (i, line) in text.split('\n').take(64).enumerate() {
        let (name, value) = line.split_once('=').unwrap_or(("_x", line));
        v.set(name.trim(), value.trim());
        let _ = v.eval(name.trim());
        if i % 4 == 0 {
            let _ = v.eval("_reloadTime");
        }
    }
    for (name, _) in v.iter().map(|(n, x)| (n.to_string(), x.to_string())).collect::<Vec<_>>() {
        let _ = v.eval(&name);
    }
});
