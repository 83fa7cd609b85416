//! `bzhead monitor`: continuous scans of game servers, their history in SQLite, a change feed, an HTTP API and
//! Prometheus metrics.
//!
//! * [`state`]: the sans-IO core. Results of a round go in; events and the round's database batch come out.
//! * [`store`]: SQLite (WAL): the schema and its migrations, the database written by jobs on the reactor's worker
//!   (one transaction per round, never on the event loop), the write queue bounded in bytes, retention, health
//!   checks, and what a restart loads.
//! * [`metrics`]: the Prometheus text exposition of the servers and of the monitor's own counters.
//! * [`api`]: the HTTP API's answers as plain functions (a request's path and query in, a status, a content type and
//!   a body out), mounted on the shared HTTP layer by the command.
//! * [`config`]: the TOML configuration (`--config`).
//! * [`masters`]: the server lists of the other games' masters (BZFlag list server, DDNet's `servers.json`,
//!   Teeworlds UDP masters).
//!
//! The command (`src/cli/monitor.rs`) runs rounds on the one reactor ([`crate::reactor::Reactor::add_scan`]),
//! feeds [`state::Monitor`], queues its batches in a [`store::WriteQueue`] and writes them with
//! [`store::Database::write`] as jobs on the reactor's worker ([`crate::reactor::Reactor::submit_on`], a lane of
//! their own); HTTP master lists are fetched there too ([`masters::fetch`]). The monitor runs no thread of its own.

pub mod api;
pub mod config;
pub mod masters;
pub mod metrics;
pub mod state;
pub mod store;

pub use state::{Monitor, MonitorConfig};
