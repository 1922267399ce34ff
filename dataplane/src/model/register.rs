//! Register arrays: per-index state a program reads and writes per packet.

use super::{Decl, DeclKind, FieldRef, Param, Resources};

/// An array of `size` registers of type `T`, each cell declared as a layout of named fields.
/// Out-of-range indices read the default value and write nothing, as P4 leaves them harmless.
#[derive(Debug, Clone)]
pub struct RegisterArray<T> {
    cells: Vec<T>,
}

impl<T: Copy + Default> RegisterArray<T> {
    /// Declare `size` registers whose cells hold `cell`'s fields, indexed by `index` when the
    /// index is a field (a hash or a computed slot otherwise).
    pub fn new(
        res: &mut Resources,
        name: &'static str,
        size: usize,
        cell: &[Param],
        index: Option<FieldRef>,
    ) -> Self {
        res.declare(Decl {
            name,
            size,
            kind: DeclKind::Register { cell: cell.to_vec(), index },
            bytes: size * std::mem::size_of::<T>(),
            detail: String::new(),
        });
        let cells = vec![T::default(); size];
        // Large arrays are read at random per packet: back them with huge pages (a hint).
        ports::buf::advise_huge_pages_for(&cells);
        Self { cells }
    }

    /// Declare `epochs` banks of `size` registers, indexed by [`epoch_index`](Self::epoch_index):
    /// the layout of epoch-based telemetry (Hawkeye keeps one bank per epoch).
    pub fn with_epochs(
        res: &mut Resources,
        name: &'static str,
        epochs: usize,
        size: usize,
        cell: &[Param],
    ) -> Self {
        Self::new(res, name, epochs * size, cell, None)
    }

    /// The flat index of register `i` of bank `epoch`, for banks of `size` registers.
    #[inline]
    pub const fn epoch_index(epoch: usize, size: usize, i: usize) -> usize {
        epoch * size + i
    }

    /// Register `i`, or the default if out of range.
    #[inline]
    pub fn read(&self, i: usize) -> T {
        self.cells.get(i).copied().unwrap_or_default()
    }

    /// Set register `i` (ignored if out of range).
    #[inline]
    pub fn write(&mut self, i: usize, v: T) {
        if let Some(c) = self.cells.get_mut(i) {
            *c = v;
        }
    }

    /// Read-modify-write register `i`, as a P4 `RegisterAction`: `f` gets the cell and returns
    /// what the action outputs. `None` if out of range.
    #[inline]
    pub fn update<R>(&mut self, i: usize, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        self.cells.get_mut(i).map(f)
    }

    /// Register `i` for a read-modify-write in place (what [`update`](Self::update) does
    /// through a closure). `None` if out of range.
    #[inline]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.cells.get_mut(i)
    }

    /// Number of registers.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether the array is empty.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// All registers, for the control plane's bulk reads.
    pub fn as_slice(&self) -> &[T] {
        &self.cells
    }

    /// Reset every register to the default.
    pub fn clear(&mut self) {
        self.cells.fill(T::default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_and_epochs() {
        let mut r = Resources::new();
        let mut a: RegisterArray<u16> =
            RegisterArray::with_epochs(&mut r, "pkts", 4, 8, &[crate::model::param("pkts", 16)]);
        assert_eq!(a.len(), 32);
        let i = RegisterArray::<u16>::epoch_index(2, 8, 3);
        a.write(i, 7);
        assert_eq!(
            a.update(i, |v| {
                *v += 1;
                *v
            }),
            Some(8)
        );
        assert_eq!(a.read(i), 8);
        assert_eq!(a.read(99), 0);
        a.write(99, 1);
        assert_eq!(a.update(99, |v| *v), None);
        assert_eq!(r.list()[0].key_bits(), 5);
        assert_eq!(r.list()[0].value_bits(), 16);
    }
}
