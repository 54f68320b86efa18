"""
Former home of helpers that now live where they belong; kept so that
imports of earlier rbfly versions keep working.
"""

from .decorator import connection
from .names import MAX_STREAM_NAME, check_name
from .protocol.connection import broker_version as version
from .types import StreamInfo

__all__ = ['MAX_STREAM_NAME', 'StreamInfo', 'check_name', 'connection', 'version']
