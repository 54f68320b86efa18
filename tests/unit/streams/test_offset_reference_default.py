"""``Offset.reference(name, default=...)``: what it takes and how it reads."""

import pytest

from rbfly.streams import Offset
from rbfly.streams.offset import OffsetType

def test_default() -> None:
    offset = Offset.reference('app', default=Offset.NEXT)
    assert (offset.type, offset.value, offset.default) == (OffsetType.REFERENCE, 'app', Offset.NEXT)
    assert str(offset) == 'offset=reference(app, default=next)'
    assert str(Offset.reference('app')) == 'offset=reference(app)'
    assert Offset.reference('app') == Offset(OffsetType.REFERENCE, 'app')  # as RbFly 0.10's
    assert Offset.reference('app', Offset.offset(5)) != Offset.reference('app')

def test_bad_default() -> None:
    with pytest.raises(ValueError, match='is an offset that is not a reference'):
        Offset.reference('app', default=Offset.reference('other'))
    with pytest.raises(ValueError, match='only a reference has a default'):
        Offset(OffsetType.FIRST, None, Offset.NEXT)
