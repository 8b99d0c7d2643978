"""A whole 7-player game by email, with the Lady of the Lake and Excalibur, against real Dovecot
(IMAP) and SMTP on loopback: the host opens it by mail, the invitees join by replying, and every
move is a mail: a click on a mailto: link, or a typed reply in the player's own language with the
thread quoted below or above."""

from __future__ import annotations

import asyncio
import random


from avalon.services.email_gateway.wording import link_body
from avalon.shared.pictures import draw_board, draw_end, picture_of
from avalon.shared.protocol import to_core_event
from tests.e2e.email_support import MailPlayer, Narrator, wait_until
from tests.mailservers import MailUser, mail_servers  # noqa: F401 - the fixture

PLAYERS = [("host", "en", "below"), ("anna", "ru", "above"), ("bao", "vi", "click"), ("claire", "fr", "below"),
           ("daan", "nl", "click"), ("dara", "fa", "above"), ("eve", "en", "click")]


class TypedPlayer(MailPlayer):
    """Types the command in their own language when they reply (a click sends the link unchanged)."""

    async def answer(self, message, body, url=None):
        if self.mode != "click" or url is None:
            body = self.retype(body)
        await super().answer(message, body, url)

    def retype(self, body: str) -> str:
        from avalon.services.email_gateway.wording import Intent, parse

        players, seats = self.table() if self.table else ({}, ())
        intent = parse(body, players, seats)
        if not isinstance(intent, Intent):
            return body
        return link_body(self.language, intent.kind, [players[t] for t in intent.targets], intent.phase_id)


async def test_seven_players_play_a_whole_game_with_lady_and_excalibur_by_email(mail_servers, tmp_path):
    narrator = Narrator(mail_servers, f"sqlite+aiosqlite:///{tmp_path / 'narrator.db'}")
    await narrator.start()
    rng = random.Random(11)
    players: list[TypedPlayer] = []
    for local, language, mode in PLAYERS:
        address = mail_servers.add_user(local)
        players.append(TypedPlayer(MailUser(mail_servers, address), language, mode, random.Random(rng.random())))
    host = players[0]
    code: list[str] = []

    def table():
        game = narrator.gateway.games.get(code[0]) if code else None
        if game is None:
            return {}, ()
        names = narrator.gateway.roster.names()
        players = game.table.seats.players
        return {p: names.get(p, p) for p in players}, tuple(players)

    for p in players:
        p.table = table
    try:
        invitees = "\n".join(p.user.address for p in players[1:])
        await host.user.send(narrator.address, "new game", f"lady excalibur\n{invitees}\n")

        async def created():
            found = [g for g in narrator.gateway.games if g.startswith("mail-")]
            return found[0] if found else None
        code.append(await wait_until(created, 30, "the game's creation"))

        # the players who click first say their language in a reply to the invitation
        async def invited_all():
            for p in players[1:]:
                await p.new_mail()
            return all(p.mails for p in players[1:])
        await wait_until(invited_all, 30, "every invitation")
        for p in players[1:]:
            if p.mode == "click" and p.language != "en":
                invitation = p.mails[-1]
                await p.user.reply(invitation, f"language {p.language}", quote="below")

        async def seated():
            loaded = await narrator.store.load(code[0])
            return loaded is not None and len(loaded.state.players) == 7

        async def tick():
            for p in players[1:]:
                await p.step()
        await wait_until(seated, 60, "seven players seated", tick)
        await host.new_mail()
        await host.user.reply(host.mails[-1], link_body("en", "start"), quote="below")

        async def over():
            loaded = await narrator.store.load(code[0])
            return loaded is not None and loaded.state.over

        asked: list[bool] = []

        async def play():
            await asyncio.gather(*(p.step() for p in players))
            if not asked and any(e.event.type == "quest_resolved" for e in await narrator.store.event_log(code[0])):
                asked.append(True)  # mid-game, the host asks for the board by mail
                await host.user.reply(host.mails[-1], "status", quote="below")
        await wait_until(over, 400, "the end of the game", play)
        await narrator.gateway.outbox.idle(60)
        await asyncio.sleep(1.5)
        for p in players:
            await p.new_mail()
        log = await narrator.store.event_log(code[0])
        counts = await narrator.gateway.outbox.counts()
    finally:
        await narrator.stop()

    kinds = [e.event.type for e in log]
    assert "lady_used" in kinds, "the Lady of the Lake was used by mail"
    assert any(e.event.type == "team_proposed" and e.event.excalibur for e in log), "Excalibur was handed by mail"
    assert "game_ended" in kinds
    assert counts.get("dead", 0) == 0, counts
    people = narrator.gateway.roster.people
    languages = {people[f"mail:{p.user.address}"].language for p in players}
    assert len(languages) >= 3, languages
    modes = {how for p in players for how, _ in p.sent}
    assert {"click", "below", "above"} <= modes, modes
    ended = next(e for e in log if e.event.type == "game_ended")
    for p in players:
        last = p.mails[-1]
        text = last.get_body(("plain",)).get_content()
        for seat, _role in ended.event.roles:
            name = people[seat].display_name
            assert name in text, f"{p.user.address}'s last mail names every player in the reveal ({name} missing)"
        assert "mail:" not in text
    # the pictures: the board the host asked for, and the end in each player's language, inline
    core = [to_core_event(e.event, e.audience) for e in log if hasattr(e.event, "core")]
    names = {seat: people[seat].display_name for seat, _role in ended.event.roles}
    board = [m for m in host.mails if "📋" in m.get_body(("plain",)).get_content()]
    assert len(board) == 1 and len(pictures_of(board[0])) == 1, "the board mail carries its picture inline"
    boards = {draw_board(picture_of(core[:k]), names, "en") for k in range(1, len(core))
              if core[k - 1].audience.kind.value == "public"}
    assert pictures_of(board[0])[0] in boards, "the board as the group knew it when it was asked for"
    for p in players:
        last = p.mails[-1]
        locale = last["Content-Language"]  # the reader's language, as the mail says it
        assert pictures_of(last) == [draw_end(picture_of(core), names, locale)], (p.user.address, locale)
    for mail in (board[0], players[0].mails[-1]):
        text = mail.get_body(("plain",))
        assert "cid:" not in text.get_content() and text.get_content_type() == "text/plain"
        assert mail.get_content_type() == "multipart/alternative", "the text part beside the page, not inside"
    cyrillic = [m for m in players[1].mails[-3:] if any("а" <= ch <= "я" for ch in m.get_body(("plain",)).get_content())]
    assert cyrillic, "the Russian player reads the game in Russian"



def pictures_of(mail) -> list[bytes]:
    """The PNGs a mail shows inline: each an image part of the HTML page's multipart/related, named
    by the Content-ID the page's <img src="cid:..."> uses."""
    page = mail.get_body(("related", "html"))
    html = mail.get_body(("html",)).get_content()
    if page is None or page.get_content_type() != "multipart/related":
        return []
    out = []
    for part in page.iter_parts():
        if part.get_content_type() == "image/png":
            assert f'cid:{part["Content-ID"].strip("<>")}' in html, "the page shows the picture it carries"
            out.append(part.get_content())
    return out
