"""
The soak's bookkeeping: what each publisher sent and its broker confirmed
(:py:class:`Ledger`), what each consumer saw (:py:class:`Seen`), and the
run's counts of faults, errors and memory (:py:class:`Stats`).

Bookkeeping is a bitmap per publisher (a bit per sequence number), so the
soak's own memory does not hide the client's in the RSS figures.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

class Bits:
    """A growable bitmap of sequence numbers."""
    def __init__(self) -> None:
        self.data = bytearray()

    def add(self, n: int) -> bool:
        """Set bit ``n``; ``False`` when it was set already."""
        i, b = divmod(n, 8)
        if i >= len(self.data):
            self.data.extend(bytes(i + 1 - len(self.data) + 4096))
        if self.data[i] >> b & 1:
            return False
        self.data[i] |= 1 << b
        return True

    def __contains__(self, n: int) -> bool:
        i, b = divmod(n, 8)
        return i < len(self.data) and bool(self.data[i] >> b & 1)

@dataclass
class Ledger:
    """What one publisher sent and what its broker confirmed."""
    key: str
    stream: str
    binary: bool = False
    sent: int = 0        # sequence numbers 0..sent-1 were handed to the publisher
    failed: Bits = field(default_factory=Bits)   # a send/flush raised: maybe stored
    failures: int = 0

    def confirmed(self, n: int) -> bool:
        return n < self.sent and n not in self.failed

@dataclass
class Seen:
    """What a consumer saw: per publisher a bitmap, and order per stream."""
    name: str
    bits: dict[str, Bits] = field(default_factory=lambda: collections.defaultdict(Bits))
    last: dict[str, int] = field(default_factory=dict)  # by stream
    messages: int = 0
    duplicates: int = 0
    out_of_order: int = 0

    def see(self, stream: str, body: object) -> None:
        text = body.decode() if isinstance(body, bytes | bytearray) else str(body)
        key, _, seq_text = text.partition(':')
        seq = int(seq_text)
        self.messages += 1
        if not self.bits[key].add(seq):
            self.duplicates += 1
            return
        order_key = stream + '/' + key
        if seq <= self.last.get(order_key, -1):
            self.out_of_order += 1
        self.last[order_key] = seq

@dataclass
class Stats:
    faults: collections.Counter[str] = field(default_factory=collections.Counter)
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    rss: list[int] = field(default_factory=list)

def ledger_failed(ledger: Ledger) -> int:
    """The messages whose call failed (maybe stored, not confirmed)."""
    return sum(bin(b).count('1') for b in ledger.failed.data)
