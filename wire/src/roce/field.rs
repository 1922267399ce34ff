//! The fields of each transport header, from the header's own first byte.

/// Base Transport Header.
pub mod bth {
    use crate::spec::Field;

    /// Opcode.
    pub const OPCODE: Field = Field::bytes("opcode", 0, 1);
    /// Solicited event.
    pub const SE: Field = Field::new("se", 8, 1);
    /// Migration request.
    pub const MIGREQ: Field = Field::new("migreq", 9, 1);
    /// Pad count.
    pub const PAD_COUNT: Field = Field::new("pad_count", 10, 2);
    /// Transport header version.
    pub const TVER: Field = Field::new("tver", 12, 4);
    /// Partition key.
    pub const PKEY: Field = Field::bytes("pkey", 2, 2);
    /// Forward ECN.
    pub const FECN: Field = Field::new("fecn", 32, 1);
    /// Backward ECN.
    pub const BECN: Field = Field::new("becn", 33, 1);
    /// Reserved.
    pub const RESERVED1: Field = Field::new("reserved1", 34, 6);
    /// Destination QP.
    pub const DEST_QP: Field = Field::bytes("dest_qp", 5, 3);
    /// Acknowledge request.
    pub const ACK_REQ: Field = Field::new("ack_req", 64, 1);
    /// Reserved.
    pub const RESERVED2: Field = Field::new("reserved2", 65, 7);
    /// Packet sequence number.
    pub const PSN: Field = Field::bytes("psn", 9, 3);
}

/// RDMA Extended Transport Header.
pub mod reth {
    use crate::spec::Field;

    /// Virtual address.
    pub const VA: Field = Field::bytes("va", 0, 8);
    /// Remote key.
    pub const RKEY: Field = Field::bytes("rkey", 8, 4);
    /// DMA length.
    pub const DMA_LEN: Field = Field::bytes("dma_len", 12, 4);
}

/// Atomic Extended Transport Header.
pub mod atomic_eth {
    use crate::spec::Field;

    /// Virtual address.
    pub const VA: Field = Field::bytes("va", 0, 8);
    /// Remote key.
    pub const RKEY: Field = Field::bytes("rkey", 8, 4);
    /// Swap (or add) data.
    pub const SWAP_ADD: Field = Field::bytes("swap_add", 12, 8);
    /// Compare data.
    pub const COMPARE: Field = Field::bytes("compare", 20, 8);
}

/// ACK Extended Transport Header.
pub mod aeth {
    use crate::spec::Field;

    /// Syndrome.
    pub const SYNDROME: Field = Field::bytes("syndrome", 0, 1);
    /// Message sequence number.
    pub const MSN: Field = Field::bytes("msn", 1, 3);
}

/// Atomic ACK Extended Transport Header.
pub mod atomic_ack_eth {
    use crate::spec::Field;

    /// The value the atomic found.
    pub const ORIGINAL: Field = Field::bytes("orig_data", 0, 8);
}

/// Immediate data.
pub mod imm_dt {
    use crate::spec::Field;

    /// The immediate value.
    pub const IMM: Field = Field::bytes("imm", 0, 4);
}

/// Datagram Extended Transport Header.
pub mod deth {
    use crate::spec::Field;

    /// Queue key.
    pub const QKEY: Field = Field::bytes("qkey", 0, 4);
    /// Reserved.
    pub const RESERVED: Field = Field::bytes("reserved", 4, 1);
    /// Source QP.
    pub const SRC_QP: Field = Field::bytes("src_qp", 5, 3);
}
