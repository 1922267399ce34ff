//! Each stream's progress, told to its reporter (`NackExt::Progress`): what the translator has
//! settled of the stream — written and acknowledged, or counted lost — so that a reporter that
//! outlives its translator knows which of its reports the dead translator answered for, and
//! counts the rest itself (see `docs/RELIABILITY.md`, "Crashes").

use wire::dta::{NackExt, NackRepr};

use super::DtaTranslator;
use crate::buf::Frame;
use crate::switch::{Dest, Emitter};

/// How often each active stream's progress goes to its reporter, ns.
pub const PROGRESS_NS: u64 = 5_000_000;
/// A stream whose reporter has been silent this long gets no more progress messages, ns.
pub const PROGRESS_QUIET_NS: u64 = 1_000_000_000;

impl DtaTranslator {
    /// When the oldest thing the translator still holds was taken, at the latest: a partial
    /// batch, a cached path, a merged sketch column, a parked report, an unacknowledged
    /// request (of the live connection or of a lost one awaiting replay). `None`: nothing.
    pub(super) fn held_since(&self) -> Option<u64> {
        let parked = self.parked.front().map(|p| p.at);
        self.qps
            .iter()
            .flat_map(|q| {
                [q.req.oldest_born(), q.orphans.as_ref().and_then(|(r, _)| r.oldest_born()), q.store.oldest()]
            })
            .chain([parked])
            .flatten()
            .min()
    }

    /// The timer's turn: every [`PROGRESS_NS`], checkpoint each active stream's settled
    /// position and send each its newest checkpoint older than anything held. With `last`
    /// (the translator stops, having counted everything it could not finish), every stream's
    /// current position is final.
    pub(super) fn send_progress<F: Frame>(&mut self, now: u64, last: bool, out: &mut Emitter<'_, F>) {
        let due = now.saturating_sub(self.progress_at) >= PROGRESS_NS;
        if !last && !due && !self.progress_due {
            return;
        }
        self.progress_due = false;
        if due {
            self.progress_at = now;
        }
        let held = if last { None } else { self.held_since() };
        let incarnation = self.s.incarnation;
        self.reporters.retain(|_, t| {
            let Some((port, flow)) = t.progress.back else { return true };
            if !t.is_tracked() || now.saturating_sub(t.last_heard) >= PROGRESS_QUIET_NS {
                return true;
            }
            if due || last || t.progress.is_fresh() {
                t.progress.checkpoint(now, t.settled(), t.lost);
            } else {
                // Between periods only streams just joined speak.
                return true;
            }
            // Nothing newer confirmable: the last word again (the reporter learns this
            // translator's incarnation, and a joined stream's first number, at once).
            let (settled, lost) = t.progress.confirmed(held).unwrap_or(t.progress.told);
            let (settled, lost) =
                if settled >= t.progress.told.0 { (settled, lost) } else { t.progress.told };
            t.progress.told = (settled, lost);
            let (newest, span) = t.newest();
            let r = NackRepr {
                seqnum: newest,
                nack: false,
                slow_down: false,
                ext: Some(NackExt::Progress {
                    epoch: t.epoch,
                    first: t.first_seq,
                    joined: t.joined,
                    last,
                    settled: settled as u32,
                    lost,
                    span: span as u32,
                    incarnation,
                }),
            };
            out.emit(Dest::Port(port), 7, |f| Self::write_nack(f, &flow, &r));
            true
        });
    }
}
