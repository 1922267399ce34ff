//! What the whole-switch targets share: a switch built once from a configuration and kept across
//! inputs (its tables, filters and queues carry state from one input to the next, as a running
//! switch's do), fed one frame per input. Included by `#[path]`; not a target of its own.
#![allow(dead_code)]

use std::path::Path;

use dataplane::buf::{Frame, HeapPool, PktBuf, Pool};
use dataplane::config::Config;
use dataplane::programs::{FromConfig, build_switch};
use dataplane::switch::{Program, Switch};

/// A switch running `P` on memory buffers, and its clock.
pub struct Harness<P: Program> {
    /// The switch.
    pub sw: Switch<P, PktBuf>,
    /// Its buffers.
    pub pool: HeapPool,
    /// Virtual time, ns.
    pub now: u64,
    ports: u16,
    out: Vec<PktBuf>,
}

impl<P: Program + FromConfig> Harness<P> {
    /// The switch `cfg` (a configuration's text, which must build) describes, on `ports` ports.
    pub fn new(cfg: &str, ports: u16) -> Self {
        let cfg = Config::parse(Path::new("fuzz.toml"), cfg).unwrap();
        Self {
            sw: build_switch(&cfg).unwrap(),
            pool: HeapPool::new(512, 2048),
            now: 0,
            ports,
            out: Vec::new(),
        }
    }

    /// `dt_ns` later, `bytes` (at most 2 000 of them) arrive on port `port % ports`; then every
    /// port transmits all it has, and the switch's periodic work runs.
    pub fn step(&mut self, port: u8, bytes: &[u8], dt_ns: u64) {
        let Some(mut f) = self.pool.alloc() else { return };
        if let Some(b) = f.append(bytes.len().min(2000)) {
            b.copy_from_slice(&bytes[..b.len()]);
        }
        self.now += dt_ns;
        let now = self.now;
        self.sw.receive(now, u16::from(port) % self.ports, f, &mut self.pool);
        for p in 0..self.ports {
            while self.sw.transmit(now, p, &mut self.out, 32, &mut self.pool) > 0 {}
        }
        for f in self.out.drain(..) {
            self.pool.free(f);
        }
        self.sw.tick(now, &mut self.pool);
    }
}
