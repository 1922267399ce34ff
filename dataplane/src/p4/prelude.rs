//! The target preludes: the macros (`SF_DROP()`, `SF_SET_EGRESS(p)`, …) the hand-written steps use, one
//! definition per target, so one rendering of a program serves both.

pub(super) const V1MODEL_PRELUDE: &str =
    "// Target macros: the hand-written steps use these, so one rendering serves both targets.
#define SF_V1MODEL 1
#define SF_INGRESS_PORT ((bit<16>)std.ingress_port)
#define SF_SET_EGRESS(p) std.egress_spec = (bit<9>)(p)
#define SF_DROP() mark_to_drop(std)
// Multicast to group g (1-based here), the copy to port `excl` pruned in egress.
#define SF_MCAST(g, excl) std.mcast_grp = (bit<16>)(g)
#define SF_CHECKSUM_ERR (std.checksum_error == 1)
// The egress queue (BMv2 runs priority queues with --priority-queues).
#define SF_SET_QUEUE(q) std.priority = (bit<3>)(q)
#define SF_EGRESS_PORT ((bit<16>)std.egress_port)
#define SF_EGRESS_DROP() mark_to_drop(std)
// BMv2 keeps time in microseconds.
#define SF_EGRESS_TS_NS (((bit<32>)std.egress_global_timestamp) * 32w1000)
// BMv2 counts queue depth in packets: bytes are estimated at the packet's own length each.
#define SF_DEQ_QDEPTH_BYTES (((bit<32>)std.deq_qdepth) * ((bit<32>)std.packet_length))
#define SF_PKT_LEN ((bit<32>)std.packet_length)
";

/// v1model macros of a program that clones (it bridges metadata).
pub(super) const V1MODEL_CLONE: &str =
    "// An ingress-to-egress clone through session s, the @field_list(1) metadata preserved; in
// egress the clone is instance type 1 (PKT_INSTANCE_TYPE_INGRESS_CLONE), cut to n bytes.
#define SF_CLONE_I2E(s) clone_preserving_field_list(CloneType.I2E, (bit<32>)(s), 1)
#define SF_EGRESS_IS_CLONE (std.instance_type == 1)
#define SF_TRUNCATE(n) truncate((bit<32>)(n))
// The replication ID of a multicast copy.
#define SF_EGRESS_RID (std.egress_rid)
";

/// v1model macro of a program that clones in egress.
pub(super) const V1MODEL_E2E: &str =
    "// An egress-to-egress clone through session s (instance type 2 in egress).
#define SF_CLONE_E2E(s) clone(CloneType.E2E, (bit<32>)(s))
";

pub(super) const TNA_PRELUDE: &str = "// Target macros: the hand-written steps use these, so one rendering serves both targets.
#define SF_TNA 1
#define SF_INGRESS_PORT ((bit<16>)ig_intr_md.ingress_port)
#define SF_SET_EGRESS(p) ig_tm_md.ucast_egress_port = (PortId_t)(p)
#define SF_DROP() ig_dprsr_md.drop_ctl = 1
// Multicast to group g (1-based here), the copy to port `excl` pruned by the PRE (L2 XID).
#define SF_MCAST(g, excl) ig_tm_md.mcast_grp_a = (MulticastGroupId_t)(g); ig_tm_md.level2_exclusion_id = (L2ExclusionId_t)(excl)
#define SF_CHECKSUM_ERR (meta.checksum_err)
#define SF_SET_QUEUE(q) ig_tm_md.qid = (QueueId_t)(q)
#define SF_EGRESS_PORT ((bit<16>)eg_intr_md.egress_port)
#define SF_EGRESS_DROP() eg_dprsr_md.drop_ctl = 1
#define SF_EGRESS_TS_NS (eg_prsr_md.global_tstamp[31:0])
// Tofino counts queue depth in 80-byte cells.
#define SF_DEQ_QDEPTH_BYTES (((bit<32>)eg_intr_md.deq_qdepth) * 32w80)
#define SF_PKT_LEN ((bit<32>)eg_intr_md.pkt_length)
";

/// TNA macros of a program that mirrors (it bridges metadata).
pub(super) const TNA_CLONE: &str =
    "// An ingress mirror through session s with the bridged fields as its mirror header (kind 1); in
// egress the clone is kind 1, already cut by the session's max_pkt_len.
#define SF_CLONE_I2E(s) ig_dprsr_md.mirror_type = 1; meta.mirror_session = (bit<10>)(s)
#define SF_EGRESS_IS_CLONE (meta.bridge_kind == 1)
#define SF_TRUNCATE(n)
// The replication ID of a multicast copy.
#define SF_EGRESS_RID (eg_intr_md.egress_rid)
";

/// TNA macro of a program that mirrors in egress.
pub(super) const TNA_E2E: &str =
    "// An egress mirror through session s, the bridged fields as its mirror header (kind 1).
#define SF_CLONE_E2E(s) eg_dprsr_md.mirror_type = 1; meta.mirror_session = (bit<10>)(s)
";
