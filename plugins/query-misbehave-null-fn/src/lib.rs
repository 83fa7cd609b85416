//! A plugin the loader must refuse: on_timeout is null. For bzhead's host tests only.
#![forbid(unsafe_code)]

query_abi::export_broken_plugin!(NullFunction);
