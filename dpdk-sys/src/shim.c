/* See shim.h. */
#include <rte_config.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "shim.h"

uint16_t sf_rx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
    return rte_eth_rx_burst(port, queue, pkts, n);
}

uint16_t sf_tx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
    return rte_eth_tx_burst(port, queue, pkts, n);
}

struct rte_mbuf *sf_pktmbuf_alloc(struct rte_mempool *mp)
{
    return rte_pktmbuf_alloc(mp);
}

int sf_pktmbuf_alloc_bulk(struct rte_mempool *mp, struct rte_mbuf **mbufs, unsigned n)
{
    return rte_pktmbuf_alloc_bulk(mp, mbufs, n);
}

void sf_pktmbuf_free(struct rte_mbuf *m)
{
    rte_pktmbuf_free(m);
}

void sf_pktmbuf_reset(struct rte_mbuf *m)
{
    rte_pktmbuf_reset(m);
}

uint16_t sf_mbuf_refcnt_read(const struct rte_mbuf *m)
{
    return rte_mbuf_refcnt_read(m);
}

void sf_mbuf_refcnt_update(struct rte_mbuf *m, int16_t v)
{
    rte_mbuf_refcnt_update(m, v);
}

void *sf_pktmbuf_mtod(struct rte_mbuf *m)
{
    return rte_pktmbuf_mtod(m, void *);
}

void sf_prefetch0(const void *p)
{
    rte_prefetch0(p);
}

int sf_errno(void)
{
    return rte_errno;
}

unsigned sf_lcore_id(void)
{
    return rte_lcore_id();
}

unsigned sf_pktmbuf_headroom_default(void)
{
    return RTE_PKTMBUF_HEADROOM;
}

uint64_t sf_rss_hf_ip_udp_tcp(void)
{
    return RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP | RTE_ETH_RSS_TCP;
}
