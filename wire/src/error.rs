//! The one error type of every parser and builder in this crate.

/// Why a buffer could not be parsed or a packet could not be built.
///
/// Every variant names the field at fault as `"header.field"` (for example `"ipv4.ihl"`), so a
/// dataplane can count drops under that name without formatting anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The buffer ends before the header, or before the length a field claims.
    #[error("{field}: truncated: need {need} bytes, have {have}")]
    Truncated {
        /// The header or length field that needs the bytes.
        field: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// A field holds a value the format forbids, or one inconsistent with another field.
    #[error("{field}: invalid value {value:#x}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
    },
    /// A field holds a value this implementation does not handle (an unknown opcode, say).
    #[error("{field}: unsupported value {value:#x}")]
    Unsupported {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
    },
    /// A checksum or CRC does not match the bytes it covers.
    #[error("{field}: checksum mismatch (stored {stored:#x}, computed {computed:#x})")]
    Checksum {
        /// The checksum field.
        field: &'static str,
        /// The value in the packet.
        stored: u32,
        /// The value computed over the packet.
        computed: u32,
    },
    /// The caller's output buffer cannot hold what is to be written.
    #[error("{field}: output buffer too small: need {need} bytes, have {have}")]
    NoSpace {
        /// What was being written.
        field: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
}

impl Error {
    /// The field at fault, as `"header.field"`: a stable name to count drops under.
    pub const fn field(&self) -> &'static str {
        match self {
            Error::Truncated { field, .. }
            | Error::Invalid { field, .. }
            | Error::Unsupported { field, .. }
            | Error::Checksum { field, .. }
            | Error::NoSpace { field, .. } => field,
        }
    }

    /// The kind of fault as a short static name: `truncated`, `invalid`, `unsupported`,
    /// `checksum` or `no_space`.
    pub const fn kind(&self) -> &'static str {
        match self {
            Error::Truncated { .. } => "truncated",
            Error::Invalid { .. } => "invalid",
            Error::Unsupported { .. } => "unsupported",
            Error::Checksum { .. } => "checksum",
            Error::NoSpace { .. } => "no_space",
        }
    }
}

/// Result of a parse or build.
pub type Result<T> = core::result::Result<T, Error>;

/// `Err(Truncated)` unless `have >= need`.
#[inline]
pub(crate) const fn need(field: &'static str, need: usize, have: usize) -> Result<()> {
    if have < need { Err(Error::Truncated { field, need, have }) } else { Ok(()) }
}

/// `Err(NoSpace)` unless `have >= need`.
#[inline]
pub(crate) const fn space(field: &'static str, need: usize, have: usize) -> Result<()> {
    if have < need { Err(Error::NoSpace { field, need, have }) } else { Ok(()) }
}

/// The first `N` bytes of `buf` as an array, or [`Error::NoSpace`] naming `field`.
#[inline(always)]
pub(crate) fn chunk<'a, const N: usize>(field: &'static str, buf: &'a mut [u8]) -> Result<&'a mut [u8; N]> {
    let have = buf.len();
    buf.first_chunk_mut::<N>().ok_or(Error::NoSpace { field, need: N, have })
}
