//! The `softfabric` binary's subcommands, one module each.

pub mod daiet;
pub mod hawkeye;
pub mod lab;
