//! A plugin the loader must refuse: abi_version is ABI_VERSION + 1. For bzhead's host tests only.
#![forbid(unsafe_code)]

query_abi::export_broken_plugin!(WrongAbiVersion);
