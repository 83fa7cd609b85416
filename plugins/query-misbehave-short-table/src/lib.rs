//! A plugin the loader must refuse: struct_size smaller than the table. For bzhead's host tests only.
#![forbid(unsafe_code)]

query_abi::export_broken_plugin!(ShortTable);
