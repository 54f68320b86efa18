"""
Offsets stored under a name: a reference's, read and written (with an
acknowledged commit, or without), and a consumer group's, where it stands
and moving it; the methods of :py:class:`~rbfly.streams.StreamsClient`
that do it (see :py:mod:`.forward`), over
:py:mod:`rbfly.streams.parts.offsets` and
:py:mod:`rbfly.streams.parts.groups`.
"""

from __future__ import annotations

from ..names import check_name
from ..offset import Offset
from ..parts.groups import ACTIVITY_WATCH, Groups
from ..parts.offsets import COMMIT_TIMEOUT, Offsets
from ..types import PartitionReset, PartitionStatus

class StoredOffsets:
    """
    The facade's methods on stored offsets and consumer groups.

    :param offsets: Reads and stores offsets.
    :param groups: A consumer group's status and reset.
    """
    def __init__(self, offsets: Offsets, groups: Groups) -> None:
        self._offsets = offsets
        self._groups = groups

    # -- offsets --

    async def query_offset(self, stream: str, reference: str) -> int:
        """
        Read the offset stored under a reference name.

        :raises rbfly.streams.error.NoOffset: When nothing is stored.
        """
        check_name('stream', stream)
        check_name('offset reference', reference)
        return await self._offsets.query(stream, reference)

    async def write_offset(
            self, stream: str, reference: str, value: int | None = None, *,
            wait: bool = False,
    ) -> None:
        """
        Store an offset under a reference name, to resume from it later
        with ``Offset.reference(reference)``.

        StoreOffset has no answer: without ``wait``, this returns once the
        command is sent, and a query right after may still return the
        previous offset. A consumer handing a partition over, or a
        service stopping, wants :py:meth:`commit_offset` (or ``wait``).

        :param value: Offset to store; by default the offset of the message
            being processed (:py:func:`get_message_ctx`; nothing is stored
            when no message was processed in the task yet).
        :param wait: Return once the broker reports the offset stored (see
            :py:meth:`commit_offset`).
        """
        check_name('stream', stream)
        check_name('offset reference', reference)
        await self._offsets.write(stream, reference, value, wait)

    async def commit_offset(
            self, stream: str, reference: str, value: int | None = None, *,
            timeout: float = COMMIT_TIMEOUT,
    ) -> None:
        """
        Store an offset under a reference name and return once the broker
        reports it stored (an acknowledged commit, as Kafka's
        ``commit()``): the offset is queried until it comes back.

        :param value: Offset to store; by default the offset of the message
            being processed (nothing is stored when no message was
            processed in the task yet).
        :param timeout: Seconds to wait for the broker to report it.
        :raises rbfly.streams.error.OffsetCommitTimeout: When it does not
            (e.g. another consumer stores under the same name meanwhile).
        """
        check_name('stream', stream)
        check_name('offset reference', reference)
        await self._offsets.write(stream, reference, value, True, timeout)

    # -- consumer groups --

    async def group_status(
            self, name: str, *, stream: str | None = None, super_stream: str | None = None,
    ) -> list[PartitionStatus]:
        """
        Where a consumer group (the subscriptions named ``name``, storing
        their offsets under it) stands on a stream, or on each partition
        of a super stream, in order: the offset stored under the name, the
        stream's first and last offsets, and the lag between them (RabbitMQ
        3.11+; on 3.10, the offset stored only). See
        :py:class:`~rbfly.streams.types.PartitionStatus` and
        :doc:`/group-tooling`.

        Which consumer of the group is active the stream protocol does not
        tell; RabbitMQ does, through ``rabbitmq-streams
        list_stream_group_consumers`` and its management API.

        :param name: The group's name, its offset reference.
        :param stream: The stream; or
        :param super_stream: the super stream (RabbitMQ 3.11+).
        :raises ValueError: Unless exactly one of ``stream`` and
            ``super_stream`` is given.
        :raises rbfly.streams.error.StreamDoesNotExist: When there is no
            such stream, or super stream.
        """
        return await self._groups.status(name, stream, super_stream)

    async def reset_group(
            self, name: str, to: Offset, *, stream: str | None = None,
            super_stream: str | None = None, force: bool = False, dry_run: bool = False,
            watch: float = ACTIVITY_WATCH,
    ) -> list[PartitionReset]:
        """
        Move a consumer group: store under its name, on a stream or each
        partition of a super stream, the offset before the one it is to
        resume at (acknowledged commits, as :py:meth:`commit_offset`), so
        that ``Offset.reference(name)`` starts there. Return what was
        stored, per stream, in order.

        ``to`` is where the group resumes: ``Offset.FIRST``, the stream's
        first message; ``Offset.LAST`` or ``Offset.NEXT``, the end, after
        every message there now (RabbitMQ 4.3+; on 3.11-4.2 the first
        offset of the last committed chunk: its messages come again);
        ``Offset.offset(n)``, ``n``; ``Offset.timestamp(t)``, the first
        chunk stored at or after ``t`` (RabbitMQ 4.3+);
        ``Offset.reference(other)``, where group ``other`` resumes;
        ``Offset.from_end(n)``, ``n`` messages before the end now (read
        from each stream's last chunk, as a subscription does).

        Stop the group's consumers first: a running consumer neither reads
        the stored offset again nor stops storing its own. The stream
        protocol cannot tell whether one runs; without ``force`` the reset
        watches the offsets stored under the name for ``watch`` seconds
        and refuses when one changes (a quiet group passes).

        :param force: Do not watch.
        :param dry_run: Return what would be stored, and store nothing.
        :raises rbfly.streams.error.GroupActive: When an offset changed
            while watched (nothing is stored).
        :raises rbfly.streams.FeatureNotSupported: For the end on
            RabbitMQ 3.10, or for a time before RabbitMQ 4.3.
        :raises rbfly.streams.error.OffsetCommitTimeout: When the broker
            does not report an offset stored (a consumer storing over it).
        :raises ValueError: Unless exactly one of ``stream`` and
            ``super_stream`` is given.
        :raises rbfly.streams.error.StreamDoesNotExist: When there is no
            such stream, or super stream.
        """
        return await self._groups.reset(name, to, stream, super_stream, force, dry_run, watch)

__all__ = ['StoredOffsets']
