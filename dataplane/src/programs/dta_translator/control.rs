//! Control: `show dta` and the one-line counters.

use super::*;

impl DtaTranslator {
    pub(super) fn stats_line(&self) -> String {
        let s = &self.stats;
        let ready = self.qps.iter().filter(|q| q.phase == Phase::Ready).count();
        format!(
            "ready={ready}/{} keywrite={} append={} keyincrement={} postcarder={} sketchmerge={} rdma_packets={} \
             retransmitted={} acks={} nacks={} slow_downs={} parked={} unparked={} connects={} resets={} outstanding={} \
             seq_gaps={} seq_recovered={} seq_unrecoverable={} seq_superseded={} reporter_restarts={} hellos={} untracked={} \
             replayed={} lost_requests={} lost_entries={} unknown_requests={} unknown_entries={} \
             region_lost_entries={} rate_cuts={} ack_probes={} \
             seq_missing={} held={}",
            self.qps.len(),
            s.reports[0],
            s.reports[1],
            s.reports[2],
            s.reports[3],
            s.reports[4],
            s.rdma_packets,
            s.retransmitted,
            s.acks,
            s.nacks,
            s.slow_downs,
            s.parked,
            s.unparked,
            s.connects,
            s.resets,
            self.qps.iter().map(|q| u64::from(q.req.outstanding())).sum::<u64>(),
            s.seq_gaps,
            s.seq_recovered,
            s.seq_unrecoverable,
            s.seq_superseded,
            s.reporter_restarts,
            s.hellos,
            s.untracked,
            s.replayed,
            s.lost_requests,
            s.lost_entries,
            s.unknown_requests,
            s.unknown_entries,
            s.region_lost_entries,
            s.rate_cuts,
            s.ack_probes,
            self.seq_missing(),
            self.held(),
        )
    }

    pub(super) fn show(&self) -> String {
        let mut s = String::new();
        for q in &self.qps {
            s += &format!(
                "qp {} qpn {:#x} collector {} {:?} remote_qpn {:#x} va {:#x} len {} rkey {:#x} slots {} outstanding {} {:?}\n",
                q.name,
                q.local_qpn,
                q.peer,
                q.phase,
                q.req.dest_qp(),
                q.meta.va,
                q.meta.len,
                q.meta.rkey,
                q.slots,
                q.req.outstanding(),
                q.req.stats()
            );
        }
        for c in &self.collectors {
            s += &format!("collector {} {} metered {}\n", c.name, c.ip, c.metered);
        }
        s += &format!("{:?}\nparked now {}\n", self.stats, self.parked.len());
        s
    }
}
