# bfrt_python: the table entries and multicast groups the configuration implies.
p4 = bfrt.macswap.pipe
ing = p4.SfIngress
egr = p4.SfEgress
