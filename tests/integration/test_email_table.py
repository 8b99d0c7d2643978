"""The people around the table by mail, against real Dovecot and SMTP on loopback with the real engine
(engine + email gateway in one process, in-process bus, SQLite): a host keeps a standby list and it is
told of the host's new game; a spectator follows the game with ``watch CODE``; the host pauses and
resumes by mail; a player ``leave``s mid-game, the standby address is told of the open seat and
``take``s it (a forged ``take`` and a spectator's ``take`` change nothing), receives the seat's role and
briefing; the old player's reply is refused with the engine's reason, in their language; the spectator
read the public events and no private one."""

from __future__ import annotations

import random

from sqlalchemy import select

from avalon.services.email_gateway.rows import SeenMailRow
from avalon.services.email_gateway.words import email_words
from avalon.shared.game import Phase
from avalon.shared.narration.render import Context, Narrator as Narration, Recipient
from avalon.shared.protocol import AudienceKind, AudienceModel, CommandRejected, EventEnvelope, utcnow
from tests.e2e.email_support import MailPlayer, Narrator, wait_until
from tests.mailservers import MailUser, mail_servers  # noqa: F401 - the fixture

LOCALS = ["hana", "anna", "bao", "claire", "daan"]


def text_of(message) -> str:
    return message.get_body(("plain",)).get_content()


async def outcome(narrator: Narrator, message_id: str) -> str:
    async def seen():
        async with narrator.store.engine.connect() as conn:
            row = (await conn.execute(select(SeenMailRow.outcome).where(
                SeenMailRow.message_id == message_id.strip("<>")))).first()
        return row[0] if row else None
    return await wait_until(seen, 30, f"the gateway reading {message_id}")


async def mail_saying(player: MailPlayer, words: str, what: str):
    """The first mail of ``player`` (read before or new) whose text holds ``words``."""
    async def found():
        await player.new_mail()
        return next((m for m in player.mails if words in text_of(m)), None)
    return await wait_until(found, 30, what)


async def test_standby_spectator_pause_hand_over_and_take_by_mail(mail_servers, tmp_path):
    narrator = Narrator(mail_servers, f"sqlite+aiosqlite:///{tmp_path / 'narrator.db'}")
    await narrator.start()
    rng = random.Random(21)

    def player(local: str) -> MailPlayer:
        user = MailUser(mail_servers, mail_servers.add_user(local))
        return MailPlayer(user, "en", "click", random.Random(rng.random()))

    players = [player(local) for local in LOCALS]
    host, anna = players[0], players[1]
    sam, zed, mallory = player("sam"), player("zed"), player("mallory")
    ids = {id(p): f"mail:{p.user.address}" for p in (*players, sam, zed)}
    code: list[str] = []

    async def state():
        return (await narrator.store.load(code[0])).state

    try:
        # the host's standby list, kept by the gateway and answered with the list
        await host.user.send(narrator.address, "standby", f"standby {sam.user.address}\n")
        await mail_saying(host, email_words("en", "standby_list", names=sam.user.address), "the standby list")

        await host.user.send(narrator.address, "new game forum", "\n".join(p.user.address for p in players[1:]) + "\n")

        async def created():
            return next((g for g in narrator.gateway.games if g.startswith("mail-")), None)
        code.append(await wait_until(created, 30, "the game's creation"))
        told = await mail_saying(sam, "opens a new game of Avalon", "the standby address told of the new game")
        assert code[0] in text_of(told)

        async def seated():
            return len((await state()).players) == 5

        async def tick():
            for p in players[1:]:
                await p.step()
        await wait_until(seated, 60, "five players seated", tick)
        assert ids[id(sam)] not in (await state()).players, "told, not seated: sam did not answer join"

        # a spectator by mail: a new mail naming the game's code, in French
        await zed.user.send(narrator.address, "regarder", f"regarder {code[0]}\n")
        await wait_until(lambda: _has(state, lambda s: ids[id(zed)] in s.spectators), 30, "zed watching")
        # anna reads French from now on
        await anna.user.send(narrator.address, "langue", "langue français\n")
        await mail_saying(anna, email_words("fr", "language_set", language="fr"), "anna's language set")

        await host.new_mail()
        await host.user.reply(host.mails[-1], "start", quote="below")
        await wait_until(lambda: _has(state, lambda s: s.phase is not Phase.LOBBY), 30, "the game started")

        # the host pauses and resumes by mail
        await host.new_mail()
        await host.user.reply(host.mails[-1], "pause", quote="below")
        await wait_until(lambda: _has(state, lambda s: s.paused), 30, "the game paused")
        await host.new_mail()
        await host.user.reply(host.mails[-1], "resume", quote="below")
        await wait_until(lambda: _has(state, lambda s: not s.paused), 30, "the game resumed")

        # anna leaves mid-game: her seat opens for a substitute (she is no longer a player who acts)
        await anna.new_mail()
        old_mail = anna.mails[-1]
        await anna.user.reply(old_mail, "quitter", quote="below")
        seat = (await state()).players.index(ids[id(anna)])
        await wait_until(lambda: _has(state, lambda s: seat in s.open_seats), 30, "anna's seat open")
        offer = await mail_saying(sam, "A seat is open for a substitute", "sam told of the open seat")

        # nobody else takes it by mail: a forged From, a spectator without an offer
        forged = await mallory.user.send(narrator.address, "Re: take", "take\n", from_address=sam.user.address)
        assert (await outcome(narrator, forged)).startswith("refused"), "a forged take is refused"
        zed_mail = await mail_saying(zed, "", "a mail of the game to the spectator")
        assert zed_mail["Reply-To"] and "+" in str(zed_mail["Reply-To"]), "signed for the spectator"
        spectator_take = await zed.user.reply(zed_mail, "take", quote="below")
        assert await outcome(narrator, spectator_take) == "refused: no seat offered"
        assert ids[id(anna)] in (await state()).players

        taken = await sam.user.reply(offer, "take", quote="below")
        assert (await outcome(narrator, taken)) == "sent take_seat"
        await wait_until(lambda: _has(state, lambda s: s.players[seat] == ids[id(sam)]), 30, "sam in anna's seat")
        log = await narrator.store.event_log(code[0])
        private = [e for e in log if e.audience.kind.value == "players"]
        briefed = [e.event.type for e in private if e.audience.players == (ids[id(sam)],)]
        assert briefed[:2] == ["role_assigned", "seat_briefing"], briefed
        await mail_saying(sam, "Your role:", "sam's role card by mail")

        # anna's old reply is refused with the engine's reason, in French
        refused = await anna.user.reply(old_mail, "approve", quote="below")
        assert await outcome(narrator, refused) == "sent cast_vote", "the engine's to refuse"
        names = narrator.gateway.roster.names()
        firsts = [refusal_words(reason, ids[id(sam)], names) for reason in ("seat_left", "seat_taken")]

        async def refusal():
            await anna.new_mail()
            return any(any(f in text_of(m) for f in firsts) for m in anna.mails if m is not old_mail)
        await wait_until(refusal, 30, "anna's reply refused in French")
        refusal_mail = next(m for m in anna.mails if any(f in text_of(m) for f in firsts))
        assert "Vous recevez ce mail" in text_of(refusal_mail), "in French"
        assert (await state()).players[seat] == ids[id(sam)], "her reply changed nothing"

        # the spectator read the public events, never a private one
        await narrator.gateway.outbox.idle(30)
        await zed.new_mail()
        seen_by_zed = "\n".join(text_of(m) for m in zed.mails)
        names = narrator.gateway.roster.names()

        def first_line(envelope) -> str:
            rendered = Narration().render(envelope, Recipient(ids[id(zed)], ("fr",)), "email",
                                          Context(names, {"title": code[0]}))
            return rendered.text.strip().split("\n")[0].strip()
        public = [e for e in log if e.event.type in ("game_paused", "game_resumed", "seat_opened", "seat_taken")]
        assert len(public) == 4 and all(first_line(e) in seen_by_zed for e in public), seen_by_zed
        assert private and not [first_line(e) for e in private if first_line(e) in seen_by_zed], "nothing private"
        for envelope in private:
            assert ids[id(zed)] not in envelope.readers, envelope.event.type
        assert any(ids[id(zed)] in e.readers for e in log if e.event.type == "seat_taken")
    finally:
        await narrator.stop()


def refusal_words(reason: str, by: str, names: dict[str, str]) -> str:
    """The engine's refusal ``reason`` (``by``: who took the seat) as a French reader reads it by mail."""
    envelope = EventEnvelope(message_id="x", game_id="g", seq=0, occurred_at=utcnow(),
                             audience=AudienceModel(kind=AudienceKind.PLAYERS, players=("mail:a@b.c",)),
                             event=CommandRejected(command_type="cast_vote", reason=reason, params={"player": by},
                                                   message=reason))
    text = Narration().render(envelope, Recipient("mail:a@b.c", ("fr",)), "email", Context(names, {"title": "g"})).text
    return text.strip().split("\n")[0]


async def _has(state, check) -> bool:
    return bool(check(await state()))


async def test_the_host_offers_a_seat_by_mail_and_the_invitee_takes_it(mail_servers, tmp_path):
    """``leave`` in the lobby still leaves it; once the game is under way the host writes ``invite ADDRESS
    seat NAME``: the seat opens, the address is offered it and ``take``s it; the replaced player's reply is
    refused (seat_taken); a ``take`` typed by someone offered nothing changes nothing."""
    narrator = Narrator(mail_servers, f"sqlite+aiosqlite:///{tmp_path / 'narrator.db'}")
    await narrator.start()
    rng = random.Random(4)

    def player(local: str) -> MailPlayer:
        user = MailUser(mail_servers, mail_servers.add_user(local))
        return MailPlayer(user, "en", "click", random.Random(rng.random()))

    players = [player(local) for local in [*LOCALS, "eve"]]
    host, anna, eve = players[0], players[1], players[-1]
    lea = player("lea")
    code: list[str] = []

    async def state():
        return (await narrator.store.load(code[0])).state

    try:
        await host.user.send(narrator.address, "new game", "\n".join(p.user.address for p in players[1:]) + "\n")

        async def created():
            return next((g for g in narrator.gateway.games if g.startswith("mail-")), None)
        code.append(await wait_until(created, 30, "the game's creation"))

        async def tick():
            for p in players[1:]:
                await p.step()
        await wait_until(lambda: _has(state, lambda s: len(s.players) == 6), 60, "six players seated", tick)
        await eve.new_mail()
        await eve.user.reply(eve.mails[-1], "leave", quote="below")
        await wait_until(lambda: _has(state, lambda s: f"mail:{eve.user.address}" not in s.players), 30,
                         "eve out of the lobby (leave before the start is the lobby's leave)")

        await host.new_mail()
        await host.user.reply(host.mails[-1], "start", quote="below")
        await wait_until(lambda: _has(state, lambda s: s.phase is not Phase.LOBBY), 30, "the game started")
        anna_id = f"mail:{anna.user.address}"
        seat = (await state()).players.index(anna_id)

        await host.new_mail()
        offering = await host.user.reply(host.mails[-1], f"invite {lea.user.address} seat anna", quote="below")
        assert await outcome(narrator, offering) == "offered a seat to 1"
        await mail_saying(host, email_words("en", "seat_offered", name="anna", names=lea.user.address),
                          "the host told the seat is offered")
        offer = await mail_saying(lea, "offers you the seat of anna", "lea offered anna's seat")
        await wait_until(lambda: _has(state, lambda s: seat in s.open_seats), 30, "anna's seat open")

        await anna.new_mail()
        old_mail = anna.mails[-1]
        not_offered = await eve.user.reply(eve.mails[-1], "take", quote="below")
        assert await outcome(narrator, not_offered) == "refused: no seat offered", "eve was offered nothing"

        taken = await lea.user.reply(offer, "take", quote="below")
        assert await outcome(narrator, taken) == "sent take_seat"
        lea_id = f"mail:{lea.user.address}"
        await wait_until(lambda: _has(state, lambda s: s.players[seat] == lea_id), 30, "lea in anna's seat")
        await mail_saying(lea, "Your role:", "lea's role card by mail")

        refused = await anna.user.reply(old_mail, "approve", quote="below")
        assert await outcome(narrator, refused) == "sent cast_vote"
        names = narrator.gateway.roster.names()
        english = Narration().render(
            EventEnvelope(message_id="x", game_id="g", seq=0, occurred_at=utcnow(),
                          audience=AudienceModel(kind=AudienceKind.PLAYERS, players=(anna_id,)),
                          event=CommandRejected(command_type="cast_vote", reason="seat_taken",
                                                params={"player": lea_id}, message="")),
            Recipient(anna_id, ("en",)), "email", Context(names, {"title": "g"})).text.strip().split("\n")[0]
        await mail_saying(anna, english, "anna's reply refused: her seat was taken")
        assert (await state()).players[seat] == lea_id, "her reply changed nothing"
    finally:
        await narrator.stop()
