//! A plugin the loader must refuse: the plugin name is not UTF-8. For bzhead's host tests only.
#![forbid(unsafe_code)]

query_abi::export_broken_plugin!(BadName);
