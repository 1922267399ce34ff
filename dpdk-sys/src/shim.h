/*
 * softfabric's C shim over DPDK's static-inline fast-path calls.
 *
 * bindgen cannot bind `static inline` functions: they have no symbol. Each sf_* function here
 * is a real symbol that calls one of them, compiled with the same flags as DPDK's own users.
 * Only what the Rust side calls per burst or per packet lives here; everything DPDK exports as
 * a real function is bound directly.
 */
#ifndef SOFTFABRIC_DPDK_SHIM_H
#define SOFTFABRIC_DPDK_SHIM_H

#include <stdint.h>

struct rte_mbuf;
struct rte_mempool;

/* rte_eth_rx_burst / rte_eth_tx_burst. */
uint16_t sf_rx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n);
uint16_t sf_tx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n);

/* Mbuf allocation and release. */
struct rte_mbuf *sf_pktmbuf_alloc(struct rte_mempool *mp);
int sf_pktmbuf_alloc_bulk(struct rte_mempool *mp, struct rte_mbuf **mbufs, unsigned n);
void sf_pktmbuf_free(struct rte_mbuf *m);
void sf_pktmbuf_reset(struct rte_mbuf *m);
uint16_t sf_mbuf_refcnt_read(const struct rte_mbuf *m);
void sf_mbuf_refcnt_update(struct rte_mbuf *m, int16_t v);

/* Data pointer (rte_pktmbuf_mtod) and prefetch. */
void *sf_pktmbuf_mtod(struct rte_mbuf *m);
void sf_prefetch0(const void *p);

/* Per-lcore state: rte_errno and rte_lcore_id(). */
int sf_errno(void);
unsigned sf_lcore_id(void);

/* RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP | RTE_ETH_RSS_TCP (function-like macros bindgen cannot see). */
uint64_t sf_rss_hf_ip_udp_tcp(void);

/* The headroom DPDK reserves in front of received packets (RTE_PKTMBUF_HEADROOM). */
unsigned sf_pktmbuf_headroom_default(void);

#endif
