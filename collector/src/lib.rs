//! # collector — the DTA collector and the Hawkeye analyzer
//!
//! What this crate will be: registered memory holding the DTA primitive layouts (Key-Write,
//! Key-Increment, Append, Postcarder, Sketch-Merge), a userspace RoCEv2 responder (the
//! soft-RNIC) and an rdma-core verbs backend behind one trait, the query engine (library, CLI,
//! HTTP/JSON), and the Hawkeye provenance-graph analyzer.
//!
//! What it is not: it never touches a report on the data path — reports arrive as RDMA writes.
//! It is filled by the DTA collector issue; until then it is intentionally empty.
