//! # dataplane — the softfabric switch
pub mod buf;
pub mod config;
pub mod model;
pub mod programs;
pub mod switch;
pub mod tm;
