"""
Interoperability with the official Java stream client on compressed
sub-entry batches: what the Java client publishes (gzip, snappy, lz4,
zstd), rbfly reads message by message, and the other way round. The Java
side is ``perf/java/Interop.java``, built and run by
``scripts/java-perf.sh --interop`` (it installs a JDK and Maven with
apt-get, as root, and resolves the client and its compression libraries
with Maven).
"""

import asyncio
import subprocess
from contextlib import aclosing
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import pytest

from rbfly.streams import Offset, PublisherBatchFast, StreamsClient

SCRIPT = str(Path(__file__).resolve().parents[2] / 'scripts' / 'java-perf.sh')
COUNT = 300

# the JVM's start is most of each test; the event loop plays no part
pytestmark = pytest.mark.one_loop

@pytest.fixture(scope='module')
def java() -> str:
    """The Java side, built once (the first build resolves jars: a minute)."""
    result = subprocess.run([SCRIPT, '--prepare'], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        pytest.fail('scripts/java-perf.sh --prepare failed:\n{}'.format(result.stderr[-2000:]))
    return SCRIPT

async def interop(java: str, url: str, *args: str) -> str:
    p = urlsplit(url)
    # the Java client wants the virtual host in the path, quoted
    uri = urlunsplit((p.scheme, p.netloc, '/' + quote(p.path[1:] or '/', safe=''), '', ''))
    proc = await asyncio.create_subprocess_exec(
        java, '--interop', '--uri', uri, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode(errors='replace')[-2000:]
    return out.decode()

@pytest.mark.parametrize('compression', ['gzip', 'snappy', 'lz4', 'zstd'])
async def test_java_publishes_rbfly_reads(
        java: str, url: str, client310: StreamsClient, stream: str, compression: str,
) -> None:
    """Batches of 100 compressed by the Java client: every message, in order."""
    await interop(java, url, '--stream', stream, '--mode', 'publish',
                  '--count', str(COUNT), '--compression', compression)
    received = []
    async with asyncio.timeout(30), \
            aclosing(client310.subscribe(stream, offset=Offset.FIRST)) as bodies:
        async for body in bodies:
            received.append(body)
            if len(received) == COUNT:
                break
    assert received == ['m{}'.format(i).encode() for i in range(COUNT)]

@pytest.mark.parametrize('compression', ['gzip', 'snappy', 'lz4', 'zstd'])
async def test_rbfly_publishes_java_reads(
        java: str, url: str, client310: StreamsClient, stream: str, compression: str,
) -> None:
    """Batches of 100 compressed by rbfly: the Java client reads every message."""
    async with client310.publisher(
            stream, cls=PublisherBatchFast, sub_entry_size=100, compression=compression,
    ) as publisher:
        for i in range(COUNT):
            publisher.batch('m{}'.format(i))
        await publisher.flush()
    out = await interop(java, url, '--stream', stream, '--mode', 'read', '--count', str(COUNT))
    assert out.splitlines() == ['m{}'.format(i) for i in range(COUNT)]
