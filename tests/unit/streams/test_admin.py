"""
The management API client without a broker: where a stream URI's
management API is, the error of each answer, the command line's options,
and rbfly without httpx (the admin extra not installed).
"""

import os
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from rbfly.cli import parser
from rbfly.streams.admin import (
    PLUGINS,
    Admin,
    AdminAccessDenied,
    AdminAuthError,
    AdminError,
    AdminNotFound,
    AdminNotSupported,
    AdminUnavailable,
    _consumer,
    http_error,
)

ROOT = Path(__file__).resolve().parents[3]

@pytest.mark.parametrize('uri, options, base, vhost, user', [
    ('rabbitmq-stream://guest:guest@localhost:5552/', {}, 'http://localhost:15672', '/', 'guest'),
    ('rabbitmq-stream://u:p@broker:5553/prod', {'port': 15673}, 'http://broker:15673', 'prod',
     'u'),
    ('rabbitmq-stream+tls://u:p@broker/%2F', {}, 'https://broker:15672', '/', 'u'),
    ('rabbitmq-stream+tls://u:p@broker/', {'scheme': 'http'}, 'http://broker:15672', '/', 'u'),
    ('rabbitmq-stream://u:p@[::1]:5552/a%2Fb', {}, 'http://[::1]:15672', 'a/b', 'u'),
    ('rabbitmq-stream://broker/', {}, 'http://broker:15672', '/', None),
])
async def test_from_uri(
        uri: str, options: dict[str, object], base: str, vhost: str, user: str | None,
) -> None:
    """Test that the API's URL, virtual host and user come from the stream URI."""
    async with Admin.from_uri(uri, **options) as api:  # type: ignore[arg-type]
        assert (api.base_url, api.vhost, api.username) == (base, vhost, user)
        assert 'p@' not in repr(api) and ":p'" not in repr(api)

async def test_from_uri_tls_context() -> None:
    """Test that the stream client's TLS context serves https too."""
    context = ssl.create_default_context()
    async with Admin.from_uri('rabbitmq-stream+tls://u:p@b/', ssl=context) as api:
        assert api.base_url == 'https://b:15672'

def test_from_uri_bad_scheme() -> None:
    with pytest.raises(ValueError, match="scheme 'ftp': give http or https"):
        Admin.from_uri('rabbitmq-stream://b/', scheme='ftp')

URL = 'http://b:15672/api/queues/%2F'

@pytest.mark.parametrize('status, reason, url, kind, text', [
    (401, 'Not_Authorized', URL, AdminAuthError, "credentials of user 'u' refused"),
    (401, 'Not management user', URL, AdminAccessDenied, 'set_user_tags u monitoring'),
    (401, 'User not authorised to access virtual host', URL, AdminAccessDenied,
     'may not access the virtual host'),
    (403, '', URL, AdminAccessDenied, 'give it the monitoring tag'),
    (404, 'Not Found', 'http://b:15672/api/stream/consumers/%2F', AdminUnavailable,
     'the stream management plugin is off: ' + PLUGINS),
    (404, 'Not Found', 'http://b:15672/api/stream/%2F/s/tracking', AdminNotFound, 'not found'),
    (404, 'Not Found', 'http://b:15672/api/queues/%2F/s', AdminNotFound, 'not found'),
    (404, 'Not Found', 'http://b:15672/api/vhosts/v', AdminNotFound, 'no such virtual host'),
    (400, '', 'http://b:15672/api/stream/%2F/s/tracking', AdminNotSupported,
     'no stream tracking'),
    (500, 'boom', URL, AdminError, 'HTTP 500 boom'),
])
def test_http_error(status: int, reason: str, url: str, kind: type[AdminError], text: str) -> None:
    """Test that each answer's error names the URL and what to do."""
    error = http_error(status, reason, url, 'u')
    assert type(error) is kind and str(error).startswith(url + ': ') and text in str(error)

def test_http_error_no_user() -> None:
    """Test that a refusal of a URI without a user (SASL EXTERNAL) says so."""
    error = http_error(401, 'Not_Authorized', URL, None)
    assert 'no user (the URI names none)' in str(error)

def test_cli_listings() -> None:
    """Test the list commands' names (singular, as the other commands, or plural) and options."""
    for group in ('stream', 'streams', 'super-stream', 'super-streams', 'publisher',
                  'publishers', 'group', 'groups'):
        args = parser().parse_args([group, 'list', '--management-port', '15673'])
        assert (args.management_port, args.management_scheme, args.format) == (
            15673, None, 'text')
        assert args.admin_run.__name__.endswith('_list')
    args = parser().parse_args(['group', 'list', '--super-stream', 'invoices', '--format',
                                'json', '--management-scheme', 'https'])
    assert (args.stream, args.super_stream, args.management_scheme) == (
        None, 'invoices', 'https')

@pytest.mark.parametrize('argv, error', [
    (['stream', 'list', '--management-port', '0'], "management port '0'"),
    (['stream', 'list', '--management-port', 'x'], "management port 'x'"),
    (['group', 'list', '--stream', 's', '--super-stream', 't'], 'not allowed with'),
    (['publisher', 'list', '--management-scheme', 'ftp'], "invalid choice: 'ftp'"),
])
def test_cli_usage_errors(argv: list[str], error: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        parser().parse_args(argv)
    assert info.value.code == 2 and error in capsys.readouterr().err

def test_management_port_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('RBFLY_MANAGEMENT_PORT', '15675')
    assert parser().parse_args(['stream', 'list']).management_port == 15675

WITHOUT_HTTPX = '''
import sys
sys.modules['httpx'] = None  # as if not installed: importing it raises ImportError
import rbfly, rbfly.streams, rbfly.cli, rbfly.streams.admin
from rbfly.streams import streams_client
from rbfly.streams.admin import Admin, AdminMissing
try:
    Admin.from_uri('rabbitmq-stream://guest:guest@localhost:5552/')
except AdminMissing as ex:
    assert isinstance(ex, ImportError)
    print(ex)
sys.argv = ['rbfly', 'stream', 'list']
sys.exit(rbfly.cli.main())
'''

def test_without_httpx() -> None:
    """
    Test that rbfly, its client and its command line import without
    httpx, and that the admin API and the list commands say what to
    install.
    """
    env = {**os.environ, 'PYTHONPATH': str(ROOT)}
    done = subprocess.run([sys.executable, '-c', WITHOUT_HTTPX], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    text = 'rbfly.streams.admin needs httpx, which is not installed: install the admin' \
        ' extra (pip install "rbfly[admin]")'
    assert done.returncode == 1, done.stderr
    assert done.stdout == text + '\n'
    assert done.stderr == 'rbfly: error: ' + text + '\n'

# consumers as RabbitMQ lists them (/api/stream/consumers), trimmed
CONSUMER_310 = {
    'connection_details': {'name': '127.0.0.1:47820 -> 127.0.0.1:5552', 'user': 'guest'},
    'consumed': 4, 'credits': 61, 'offset': 4, 'offset_lag': 1, 'properties': {'name': 'grp'},
    'queue': {'name': 'orders', 'vhost': '/'}, 'subscription_id': 0,
}
CONSUMER_4 = {
    'active': False, 'activity_status': 'waiting',
    'connection_details': {'name': '127.0.0.1:45504 -> 127.0.0.1:5553', 'user': 'guest'},
    'consumed': 0, 'credits': 16, 'offset': 0, 'offset_lag': 0,
    'properties': {'name': 'grp', 'single-active-consumer': 'true', 'super-stream': 'inv'},
    'queue': {'name': 'inv-0', 'vhost': '/'}, 'subscription_id': 1,
}

def test_consumer_310() -> None:
    """Test that a consumer of RabbitMQ 3.10 (no single active consumer) is active, up."""
    c = _consumer(CONSUMER_310, {'127.0.0.1:47820 -> 127.0.0.1:5552': 'app-1'})
    assert (c.stream, c.name, c.client, c.super_stream) == ('orders', 'grp', 'app-1', None)
    assert (c.single_active, c.active, c.status) == (False, True, 'up')
    assert (c.offset, c.offset_lag, c.consumed, c.credits) == (4, 1, 4, 61)

def test_consumer_4() -> None:
    """
    Test a waiting member of a super stream's group on RabbitMQ 4.0,
    listed before the broker has its connection's statistics
    (``connection_details`` is ``[]`` then).
    """
    c = _consumer({**CONSUMER_4, 'connection_details': []}, {})
    assert (c.stream, c.name, c.super_stream, c.connection, c.client) == (
        'inv-0', 'grp', 'inv', '', None)
    assert (c.single_active, c.active, c.status, c.subscription_id) == (
        True, False, 'waiting', 1)
