//! No heap allocation per packet on the DPDK path.
//!
//! A counting global allocator counts the allocations this test's thread makes. The switch runs
//! `macswap` and then `l2l3` on two `net_null` vdevs through the runtime's own poll steps
//! (`receive_all`, `transmit_all`) on DPDK mbufs; after a warm-up, millions of packets go through
//! and the count must not move. (The EAL is initialised once per process: this file holds one
//! test.)

#[cfg(not(dpdk))]
#[test]
fn dpdk_alloc_test_skipped() {
    assert!(
        std::env::var_os("SOFTFABRIC_REQUIRE_DPDK").is_none(),
        "SOFTFABRIC_REQUIRE_DPDK is set but dataplane was built without DPDK"
    );
    eprintln!("SKIPPED: dataplane was built without DPDK (pkg-config found no libdpdk)");
}

#[cfg(dpdk)]
mod with_dpdk {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;
    use std::path::Path;

    use dataplane::config::Config;
    use dataplane::port::PortIo;
    use dataplane::port::dpdk::{DpdkPort, Eal, Mbuf};
    use dataplane::programs::l2l3::L2l3;
    use dataplane::programs::macswap::MacSwap;
    use dataplane::programs::{FromConfig, build_switch};
    use dataplane::runtime::{receive_all, transmit_all};
    use dataplane::switch::Switch;

    struct Counting;

    thread_local! {
        static ALLOCS: Cell<u64> = const { Cell::new(0) };
    }

    // SAFETY: forwards to the system allocator; the thread-local counter is const-initialised,
    // so touching it never allocates.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
            // SAFETY: as the caller promised for `l`.
            unsafe { System.alloc(l) }
        }
        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            // SAFETY: `p` came from `alloc` with `l`.
            unsafe { System.dealloc(p, l) }
        }
        unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
            let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
            // SAFETY: as the caller promised.
            unsafe { System.realloc(p, l, n) }
        }
    }

    #[global_allocator]
    static A: Counting = Counting;

    fn allocs() -> u64 {
        ALLOCS.with(Cell::get)
    }

    const PORTS: &str = r#"
[[port]]
name = "p0"
backend = "dpdk"
device = "net_null0"
mac = "02:00:00:00:00:01"
speed = "100G"
[[port]]
name = "p1"
backend = "dpdk"
device = "net_null1"
mac = "02:00:00:00:00:02"
speed = "100G"
"#;

    /// Run `P` for `bursts` poll steps after a warm-up; returns (packets sent, allocations).
    fn run<P: FromConfig>(
        eal_args: &str,
        program: &str,
        ports: &[u16],
        mut pool: dataplane::port::dpdk::MbufPool,
        bursts: usize,
    ) -> (u64, u64) {
        let text = format!("program = \"{program}\"\n[dpdk]\neal_args = {eal_args}\n{PORTS}");
        let cfg = Config::parse(Path::new("alloc.toml"), &text).unwrap();
        let mut sw: Switch<P, Mbuf> = build_switch(&cfg).unwrap();
        let mut io: Vec<Option<Box<dyn PortIo<Mbuf>>>> =
            ports.iter().map(|&id| Some(Box::new(DpdkPort::new(id, 0)) as Box<dyn PortIo<Mbuf>>)).collect();
        let (mut rx, mut tx) = (Vec::with_capacity(32), Vec::with_capacity(32));
        let mut now = 0u64;
        let mut step = |sw: &mut Switch<P, Mbuf>, now: &mut u64| {
            *now += 1000;
            receive_all(sw, &mut io, &mut pool, &mut rx, *now, 32);
            transmit_all(sw, &mut io, &mut pool, &mut tx, *now, 32);
        };
        for _ in 0..2000 {
            step(&mut sw, &mut now);
        }
        let sent0: u64 = sw.counters().ports.iter().map(|p| p.tx_packets).sum();
        let before = allocs();
        for _ in 0..bursts {
            step(&mut sw, &mut now);
        }
        let after = allocs();
        let sent: u64 = sw.counters().ports.iter().map(|p| p.tx_packets).sum::<u64>() - sent0;
        sw.drain_all(&mut pool);
        (sent, after - before)
    }

    #[test]
    fn no_heap_allocation_per_packet() {
        // The counter sees this thread's allocations.
        let before = allocs();
        std::hint::black_box(vec![0u8; 64]);
        assert_eq!(allocs(), before + 1);
        let prefix = format!("sftest-alloc-{}", std::process::id());
        let args: Vec<String> = [
            "-l",
            "0-1",
            "--no-huge",
            "-m",
            "256",
            "--no-pci",
            &format!("--file-prefix={prefix}"),
            "--vdev=net_null0,copy=1",
            "--vdev=net_null1,copy=1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut eal = Eal::init(&args).expect("EAL init");
        let pool = eal.pool(0, 8191, 256, 2048).unwrap();
        let ids = [eal.find_port("p0", "net_null0").unwrap(), eal.find_port("p1", "net_null1").unwrap()];
        for (i, &id) in ids.iter().enumerate() {
            eal.start_port(&format!("p{i}"), "net_null", id, &[pool], 256, 256, true, false).unwrap();
        }
        let eal_args = format!("{args:?}");
        for program in ["macswap", "l2l3"] {
            let (sent, n) = match program {
                "macswap" => run::<MacSwap>(&eal_args, program, &ids, pool, 50_000),
                _ => run::<L2l3>(&eal_args, program, &ids, pool, 50_000),
            };
            eprintln!("{program}: {sent} packets, {n} heap allocations");
            assert!(sent >= 1_000_000, "{program}: only {sent} packets forwarded");
            assert_eq!(n, 0, "{program}: {n} heap allocations for {sent} packets");
        }
        eal.cleanup();
    }
}
