"""
Long runs under faults: ``soak/soak.py`` (publishing and consuming while
connections are cut and brokers restarted, run as a script) and the
consumer group of several worker processes (``python -m
soak.consumer_group``: rolling deploys and crashes of single active
consumers of a super stream).
"""
