"""
The Java stream client as the ``java`` implementation of the publishing
benchmark: rbfly's harness in a JVM a round (:py:class:`JavaRunner`),
publishing to the stream the benchmark created, checked and deleted by
the benchmark as every other one.
"""

from __future__ import annotations

from perf.common.java import WARMUP_NOTE, WARMUP_SECONDS, JavaRunner, round_result
from perf.common.results import JsonDict
from perf.common.scenarios import Case
from perf.publish.publishers import Admin, StreamAdmin, expected_body

PUBLISH_WARMUP = 'to one stream of its own, by a new producer each run'
JAVA_NAMED = 'java-named'
"""
The Java client with named producers (``ProducerBuilder.name``): the broker
deduplicates their messages as it does rbfly's publishers' by default
(``java`` is anonymous, as the Java client's producers are by default, and
as ``rbfly-anonymous``).
"""
PRODUCER_NAME = 'rbfly-perf-java'


class JavaStreamAdmin:
    """
    The stream admin of the publishing benchmark for the Java client: the Java
    client sends an AMQP message as a data section, which rbfly reads as
    bytes, so the last message is checked as the bytes of message ``count -
    1`` (binary: as for every client).
    """

    def __init__(self, admin: StreamAdmin) -> None:
        self.admin = admin

    async def create(self, case: Case, impl: str) -> str:
        return await self.admin.create(case, impl)

    async def check(self, target: str, case: Case, impl: str) -> None:
        body = expected_body(case)
        await self.admin.check(
            target, case, impl, body.encode() if isinstance(body, str) else body,
        )

    async def delete(self, target: str) -> None:
        await self.admin.delete(target)

    async def close(self) -> None:
        pass   # the shared admin is closed by its owner


class JavaPublishRunner(JavaRunner):
    """The ``java`` implementation of the publishing benchmark (a ``Runner``)."""

    def __init__(
            self, url: str, broker_pid: int | None, admin: StreamAdmin, *,
            warmup_seconds: float = WARMUP_SECONDS, via: str | None = None,
            producer_name: str | None = None,
    ) -> None:
        super().__init__(
            url, broker_pid, warmup_seconds=warmup_seconds, via=via, producer_name=producer_name,
        )
        if producer_name is not None:
            self.name = JAVA_NAMED
        self.admin: Admin = JavaStreamAdmin(admin)
        self._api: dict[str, str] = {}
        self._info['api'] = self._api

    def unsupported(self, case: Case) -> str | None:
        return None   # every scenario, amqp and binary

    async def run(self, case: Case, target: str) -> JsonDict:
        doc = await self._round(
            case.scenario, case.fmt, case.count, target, batch=case.batch, window=case.window,
        )
        named = '' if self.producer_name is None else 'ProducerBuilder.name({!r}), '.format(
            self.producer_name,
        )
        self._api[case.scenario] = '{}{}; {}'.format(
            named, doc['api'], WARMUP_NOTE.format(
                doc['warmup_percent'], self.warmup_seconds, PUBLISH_WARMUP,
            ),
        )
        return round_result(doc)
