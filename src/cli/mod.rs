//! Command-line front ends kept out of `main.rs` (which only dispatches to them).

pub mod bot;
pub mod query;
