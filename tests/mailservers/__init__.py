"""Real mail servers on loopback for the tests: a private Dovecot (IMAP + LMTP) per test and an
SMTP server in front of it, plus MailUser, a scripted mail program for test players.

    from tests.mailservers import MailUser, mail_servers  # noqa: F401 (the fixture)

    async def test_x(mail_servers):
        alice = MailUser(mail_servers, mail_servers.add_user("alice"))

The fixture skips when Dovecot cannot run here, and fails instead under AVALON_REQUIRE_MAIL=1 (CI).
"""

from tests.mailservers.client import MailUser
from tests.mailservers.dovecot import dovecot_available
from tests.mailservers.servers import (
    MailServers,
    mail_servers,
    mailbox_of,
    require_mail_servers,
    start_mail_servers,
    stop_mail_servers,
)

__all__ = ["MailServers", "MailUser", "dovecot_available", "mail_servers", "mailbox_of",
           "require_mail_servers", "start_mail_servers", "stop_mail_servers"]
