"""
``get_message_ctx()`` where no message is processed: a clear typed error,
still a LookupError.
"""

import asyncio

import pytest

from rbfly.error import NoMessageContext, RbFlyError
from rbfly.streams import get_message_ctx

def test_outside_subscription() -> None:
    with pytest.raises(NoMessageContext, match=r'only inside the\s+iteration of a subscription'):
        get_message_ctx()
    assert issubclass(NoMessageContext, LookupError)
    assert issubclass(NoMessageContext, RbFlyError)

def test_in_a_task_without_message() -> None:
    async def check() -> None:
        with pytest.raises(LookupError, match='no message is being processed'):
            get_message_ctx()

    asyncio.run(check())
