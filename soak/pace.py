"""The soak's publishers' pace: batches at a steady rate."""

import asyncio
import time

class Pace:
    """
    A publisher's batches at a steady rate, one every ``period`` seconds;
    a batch that took longer starts the schedule again from now (no burst
    to catch up).
    """
    def __init__(self, period: float) -> None:
        self.period = period
        self.next_at = time.monotonic()

    async def wait(self) -> None:
        """Wait for the next batch's time."""
        self.next_at += self.period
        delay = self.next_at - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        else:
            self.next_at = time.monotonic()
