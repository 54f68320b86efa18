"""
``perf/floor/bench.py``: its chunk is what RabbitMQ stores (rbfly decodes
it to the messages it was built from), and its loops run without an
event loop because nothing in them suspends.
"""

import asyncio

import pytest

from perf.floor import bench as bf
from rbfly.streams.protocol._chunk import decode_chunk

def test_chunk_decodes_to_its_messages() -> None:
    _, messages = decode_chunk(bf.chunk_data(), 0, True)
    assert len(messages) == bf.CHUNK_MESSAGES
    assert messages[0].body == '0000000000'
    assert messages[-1].body == '{:010d}'.format(bf.CHUNK_MESSAGES - 1)
    assert messages[-1].stream_offset == bf.CHUNK_MESSAGES - 1


@pytest.mark.parametrize('name', sorted(bf.CASES))
def test_cases_run(name: str) -> None:
    result = bf.timed(bf.CASES[name](), bf.CHUNK_MESSAGES, 2)
    assert len(result['rounds']) == 2
    assert result['us_per_msg'] >= 0


def test_run_refuses_a_suspending_coroutine() -> None:
    """A floor measured with a coroutine that waits would not be a floor."""
    async def waits() -> None:
        await asyncio.sleep(0)

    with pytest.raises(RuntimeError, match='suspended'):
        bf.run(waits())
