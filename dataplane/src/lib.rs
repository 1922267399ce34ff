//! # dataplane — the softfabric switch
pub mod buf;
pub mod model;
pub mod switch;
pub mod tm;
