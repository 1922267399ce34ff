//! The boilerplate every fixed-length header view shares.

/// Define a view type over `T: AsRef<[u8]>` for a header of at least `$len` bytes, with
/// `new_unchecked`, `new_checked` (a [`Truncated`](crate::Error::Truncated) error naming
/// `$field` when short) and `into_inner`. Field accessors are written beside each use.
macro_rules! fixed_view {
    ($(#[$m:meta])* $name:ident, $len:expr, $field:literal) => {
        $(#[$m])*
        #[derive(Debug, Clone)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// Minimum length of the header.
            pub const LEN: usize = $len;

            /// Wrap a buffer without checking it; accessors may panic on a short buffer.
            pub const fn new_unchecked(buffer: T) -> Self {
                Self { buffer }
            }

            /// Wrap a buffer after checking it holds the whole fixed part of the header.
            pub fn new_checked(buffer: T) -> $crate::Result<Self> {
                $crate::error::need($field, $len, buffer.as_ref().len())?;
                Ok(Self { buffer })
            }

            /// The underlying buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }
        }
    };
}
