//! The boilerplate every header view shares.

/// Define a view type over `T: AsRef<[u8]>` with `new_unchecked`, `new_checked` and
/// `into_inner`. `new_checked` calls the view's own `check_len`, which the caller writes for
/// formats whose length depends on their fields.
macro_rules! view {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// Wrap a buffer without checking it; accessors may panic on a short buffer.
            pub const fn new_unchecked(buffer: T) -> Self {
                Self { buffer }
            }

            /// Wrap a buffer after [`check_len`](Self::check_len).
            pub fn new_checked(buffer: T) -> $crate::Result<Self> {
                let v = Self::new_unchecked(buffer);
                v.check_len()?;
                Ok(v)
            }

            /// The underlying buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }
        }
    };
}

/// Define a view (as [`view!`]) for a header of at least `$len` bytes, whose `check_len` is a
/// [`Truncated`](crate::Error::Truncated) error naming `$field` when the buffer is shorter.
macro_rules! fixed_view {
    ($(#[$m:meta])* $name:ident, $len:expr, $field:literal) => {
        view!($(#[$m])* $name);

        impl<T: AsRef<[u8]>> $name<T> {
            /// Minimum length of the header.
            pub const LEN: usize = $len;

            /// Check the buffer holds the whole fixed part of the header.
            pub fn check_len(&self) -> $crate::Result<()> {
                $crate::error::need($field, $len, self.buffer.as_ref().len())
            }
        }
    };
}
