//! Integration tests: real BZFlag programs on loopback, the built `bzhead` binary, and the shared captures.
//!
//! One test binary (`[[test]] name = "it"`); each file below is a module. `support` is the harness; see
//! `docs/testing.md`.

mod support;

mod bots;
mod bots_kick;
mod bots_maps;
mod bzrc;
mod captures;
mod engine_captures;
mod faults;
mod fuzz_regressions;
mod harness;
mod hostile;
mod hostile_scan;
mod hostile_worlds;
mod http_hostile;
mod install;
mod master_dpmaster;
mod master_federation;
mod master_http;
mod monitor;
mod monitor_hostile;
mod monitor_masters;
mod netstats;
mod observe;
mod observe_warp;
mod play;
mod query_demux;
mod query_host;
mod query_master;
mod query_servers;
mod reactor;
mod recordings;
mod schemas;
mod warp;
mod web;
mod world;
