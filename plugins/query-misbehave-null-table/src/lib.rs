//! A plugin the loader must refuse: the entry symbol returns null. For bzhead's host tests only.
#![forbid(unsafe_code)]

query_abi::export_broken_plugin!(NullTable);
