"""
How rbfly's cost grows with the work one process does (issue 40, item 6):
1 to 1,000 streams published to and read from, 1 to 10,000
subscriptions, a super stream of 1 to 100 partitions; the rate, the
client's CPU a message, the resident memory a publisher and a
subscription take, and the connections used (``python -m perf.scale``).
"""
