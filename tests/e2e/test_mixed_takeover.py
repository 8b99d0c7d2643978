"""Seats change hands across channels, in one game played to the end: Bob hands his Telegram seat
over in the group and the host offers it by mail (``/invite`` in a reply to one of Bob's messages);
nina takes it by replying in Russian. Later mira, a mail player writing in French, leaves mid-game
and Eve, a member of the group who never joined, takes her seat with the "Take seat" button. Each
newcomer is told the seat's role and what it learned, in their language, and plays on; the ones
replaced are refused, in their language, and change nothing. The narrator as ``avalon run`` starts
it: engine, Telegram gateway against the fake Bot API, email gateway against real Dovecot and SMTP
on loopback, one in-process bus, one SQLite database."""

from __future__ import annotations

import random
import re

from avalon.services.email_gateway.wording import link_body
from avalon.shared.game import Phase
from avalon.shared.narration.render import Context, Narrator, Recipient
from tests.e2e.mixed_support import (MixedNarrator, TelegramTable, TypedMailPlayer, flat, mail_text, refusal_words,
                                     said, wait_until)
from tests.fakes.telegram_api import FakeTelegram
from tests.mailservers import MailUser, mail_servers  # noqa: F401 - the fixture

PLAYERS = ["Ann", "Bob", "Cleo", "Dan"]
#: Events that tell only their readers a secret.
SECRETS = {"role_assigned", "seat_briefing", "lady_result"}


class Substitutes(TelegramTable):
    """A Telegram table whose users act only while they hold a seat (``active``: the ids seated and not
    handed over now); a vote in the group is pressed once by each, whenever they sit. A leader picks a
    newcomer (``newcomers``: their names) first: a picker drawn before the seat changed hands must name
    the one sitting there now."""

    newcomers: frozenset[str] = frozenset()

    async def step(self, game: str, active: set[str]) -> None:
        for message in self.fake.messages(self.group):
            data = [d for d in message.callback_data if d.split(":")[1:2] == [game]]
            if not data:
                continue
            if data[0].startswith("p:"):  # the leader's team picker, pressed again after each edit
                key = (self.group.id, message.message_id, message.text + ",".join(data))
                leader = self.by_name.get(re.match(r"👑 (\w+):", message.text).group(1))
                if key in self.acted or leader is None or f"tg:{leader.id}" not in active:
                    continue
                self.acted.add(key)
                size = int(re.search(r"pick (\d+)", message.text).group(1))
                picked = int(re.search(r"(\d+) selected", message.text).group(1))
                seats = [b for b in message.buttons if not b["callback_data"].endswith(":-1")]
                free = [b for b in seats if not b["text"].startswith("✅")]
                first = [b["callback_data"] for b in free if b["text"] in self.newcomers]
                choice = self.rng.choice(first or [b["callback_data"] for b in free]) if picked < size else data[-1]
                await self.press(leader, message, choice)
            elif data[0].startswith("v:"):
                for user in (u for u in self.users if f"tg:{u.id}" in active):
                    key = (user.id, message.message_id, ",".join(data))
                    if key not in self.acted:
                        self.acted.add(key)
                        await self.press(user, message, data[0] if self.rng.random() < 0.75 else data[-1])
        for user in (u for u in self.users if f"tg:{u.id}" in active):
            for message in self.fake.messages(user.private_chat):
                data = [d for d in message.callback_data if d.split(":")[1:2] == [game]]
                key = (user.id, message.message_id, ",".join(data))
                if data and key not in self.acted:
                    self.acted.add(key)
                    await self.press(user, message, self.rng.choice(data))


async def test_a_telegram_seat_taken_by_mail_and_a_mail_seat_taken_in_telegram(mail_servers, tmp_path):
    fake = await FakeTelegram().start()
    narrator = MixedNarrator(mail_servers, fake, f"sqlite+aiosqlite:///{tmp_path / 'avalon.db'}")
    await narrator.start()
    rng = random.Random(21)
    users = [fake.user(1000 + i, name) for i, name in enumerate(PLAYERS)]
    eve = fake.user(1100, "Eve")
    group = fake.group(-100521, "Camelot", members=[*users, eve])
    ann, bob = users[0], users[1]
    mira = TypedMailPlayer(MailUser(mail_servers, mail_servers.add_user("mira")), "fr", "below",
                           random.Random(rng.random()))
    nina = TypedMailPlayer(MailUser(mail_servers, mail_servers.add_user("nina")), "ru", "below",
                           random.Random(rng.random()))
    ids = {"Bob": f"tg:{bob.id}", "Eve": f"tg:{eve.id}", "mira": f"mail:{mira.user.address}",
           "nina": f"mail:{nina.user.address}"}
    game: list[str] = []

    def table():
        known = narrator.gateway.games.get(game[0]) if game else None
        if known is None:
            return {}, ()
        names = narrator.gateway.roster.names()
        players = known.table.seats.players
        return {p: names.get(p, p) for p in players}, tuple(players)

    async def loaded():
        return await narrator.store.load(game[0])

    async def state():
        found = await loaded()
        return found.state if found is not None else None

    async def has(check) -> bool:
        s = await state()
        return s is not None and bool(check(s))

    for m in (mira, nina):
        m.table = table
    tg = Substitutes(fake, group, [*users, eve], random.Random(rng.random()))
    tg.newcomers = frozenset({"nina", "Eve"})

    async def play():
        s = await state()
        active = {p for i, p in enumerate(s.players) if i not in s.vacant}
        await tg.step(game[0], active)
        names = narrator.gateway.roster.names()
        for gone in (ids["Bob"], ids["mira"]):  # a choice drawn before the seat changed hands names the newcomer
            stale = refusal_words("unknown_player", gone, names, "tg:0", "en", "telegram")
            assert not any(_in(stale, said(fake, u.private_chat)) for u in users), f"refused: {stale}"
        for m in (mira, nina):
            if f"mail:{m.user.address}" in active:
                await m.step()

    try:
        # 1. four in the group, mira by mail (invited, joins in French); Eve stays out; everyone opens the bot
        for user in [*users, eve]:
            await user.start_private()
        await ann.send(group, "/newgame")
        lobby = await fake.wait_for_message(group, "A new game", timeout=15)
        game.append(lobby.callback_data[0].split(":", 1)[1])
        for user in users[1:]:
            await user.press(lobby, button="Join")
        await ann.send(group, f"/invite {mira.user.address}")

        async def invited():
            await mira.new_mail()
            return mira.mails
        await wait_until(invited, 30, "mira's invitation")
        await mira.user.reply(mira.mails[-1], link_body("fr", "join"), quote="below")
        await wait_until(lambda: has(lambda s: len(s.players) == 5), 60, "five players seated")
        await ann.send(group, "/startgame")
        await wait_until(lambda: has(lambda s: s.phase is Phase.PROPOSAL), 30, "the game under way")
        await fake.wait_for_message(bob.private_chat, "Your role", timeout=15)

        # 2. Telegram -> mail: Bob hands over in the group, the host offers his seat to nina by a reply to him
        handover = await bob.send(group, "/handover")
        bob_seat = (await state()).players.index(ids["Bob"])
        await wait_until(lambda: has(lambda s: bob_seat in s.open_seats), 30, "Bob's seat open")
        await ann.send(group, f"/invite {nina.user.address}", reply_to=handover)

        async def offered():
            await nina.new_mail()
            return nina.mails
        await wait_until(offered, 30, "the seat offered to nina by mail")
        await nina.user.reply(nina.mails[-1], link_body("ru", "take"), quote="below")
        await wait_until(lambda: has(lambda s: s.players[bob_seat] == ids["nina"]), 30, "nina in Bob's seat")
        log = await narrator.store.event_log(game[0])
        assert any(e.event.type == "seat_taken" and e.event.player == ids["nina"] and e.event.previous == ids["Bob"]
                   for e in log), "the table was told nina took Bob's seat"
        dealt = [e for e in log if e.event.type == "role_assigned"]
        bob_role = next(e.event.role for e in dealt if e.event.player == ids["Bob"])
        assert [e.event.role for e in dealt if e.event.player == ids["nina"]] == [bob_role], "Bob's role, now nina's"
        await assert_told_by_mail(nina, log, ("role_assigned", "seat_briefing"), "nina's role and briefing")

        # Bob is refused in English, and nothing changes
        version = (await loaded()).version
        names = narrator.gateway.roster.names()
        refused = refusal_words("seat_taken", ids["nina"], names, ids["Bob"], "en", "telegram")
        assert "nina" in refused, refused
        await bob.send(group, "/void")

        async def bob_refused():
            return _in(refused, said(fake, bob.private_chat))
        await wait_until(bob_refused, 30, "Bob's /void refused in private: his seat was taken")
        assert not _in(refused, said(fake, group)), "told to Bob alone"
        assert (await loaded()).version == version, "Bob's /void changed nothing"

        # play on with nina until a quest is done and a Telegram player leads the next proposal
        async def midgame():
            s = await state()
            return (len(s.quest_results) >= 1 and s.phase is Phase.PROPOSAL and not s.team
                    and s.players[s.leader].startswith("tg:")) or s.over
        await wait_until(midgame, 60, "a quest done and a new proposal", play)
        assert not (await state()).over, "the game went on past the first quest"

        # 3. mail -> Telegram: mira leaves by mail (in French), Eve takes her seat with the button
        await mira.new_mail()
        last = mira.mails[-1]
        mira_seat = (await state()).players.index(ids["mira"])
        await mira.user.reply(last, link_body("fr", "leave"), quote="below")
        opened = await fake.wait_for_message(group, timeout=30, where=lambda m: f"o:{game[0]}:{mira_seat}"
                                             in m.callback_data)
        assert any("Take this seat" in b["text"] for b in opened.buttons), opened.buttons
        await eve.press(opened, f"o:{game[0]}:{mira_seat}")
        await wait_until(lambda: has(lambda s: s.players[mira_seat] == ids["Eve"]), 30, "Eve in mira's seat")
        log = await narrator.store.event_log(game[0])
        assert any(e.event.type == "seat_taken" and e.event.player == ids["Eve"] and e.event.previous == ids["mira"]
                   for e in log), "the table was told Eve took mira's seat"
        mira_role = next(e.event.role for e in log if e.event.type == "role_assigned" and e.event.player == ids["mira"])
        assert [e.event.role for e in log if e.event.type == "role_assigned" and e.event.player == ids["Eve"]] == \
            [mira_role], "mira's role, now Eve's"
        await assert_told_in_private(fake, eve, log, ("role_assigned", "seat_briefing"))

        version = (await loaded()).version
        names = narrator.gateway.roster.names()
        seen = len(mira.mails)
        await mira.user.reply(mira.mails[-1], link_body("fr", "approve"), quote="below")
        firsts = [refusal_words(reason, ids["Eve"], names, ids["mira"], "fr", "email")
                  for reason in ("seat_left", "seat_taken")]
        assert all("partie" in f for f in firsts), firsts

        async def mira_refused():
            await mira.new_mail()
            return any(_in(f, [mail_text(x) for x in mira.mails[seen:]]) for f in firsts)
        await wait_until(mira_refused, 30, "mira's reply refused in French")
        assert (await loaded()).version == version, "mira's reply changed nothing"

        # 4. the newcomers play to the end
        await wait_until(lambda: has(lambda s: s.over), 90, "the end of the game", play)
        await narrator.gateway.outbox.idle(30)
        await narrator.telegram.outbox.idle(30)

        async def ended_by_mail():
            for m in (mira, nina):
                await m.new_mail()
            return any("🏁" in mail_text(x) for x in nina.mails)
        await wait_until(ended_by_mail, 30, "the end told to nina")
        log = await narrator.store.event_log(game[0])
    finally:
        await narrator.stop()
        await fake.stop()

    kinds = [e.event.type for e in log]
    assert "game_ended" in kinds
    assert "deadline_missed" not in kinds and "proposal_missed" not in kinds, "nobody was timed out"
    taken = next(e.seq for e in log if e.event.type == "seat_taken" and e.event.player == ids["nina"])
    left = next(e.seq for e in log if e.event.type == "seat_opened" and e.event.player == ids["mira"])
    acted = {"player_voted", "player_played_card", "team_proposed"}
    for envelope in (e for e in log if e.event.type in acted):
        who = getattr(envelope.event, "player", None) or getattr(envelope.event, "leader", None)
        assert not (who == ids["Bob"] and envelope.seq > taken), "Bob acted after his seat was taken"
        assert not (who == ids["mira"] and envelope.seq > left), "mira acted after she left"
    voters = {e.event.player for e in log if e.event.type == "player_voted"}
    assert {ids["nina"], ids["Eve"]} <= voters, "the newcomers played on"

    people = {}
    for envelope in log:
        people.update(envelope.people)
    channels = {None: said(fake, group)}  # who reads what: the group, each private chat, each mailbox
    channels.update({f"tg:{user.id}": said(fake, user.private_chat) for user in [*users, eve]})
    channels.update({f"mail:{m.user.address}": [mail_text(x) for x in m.mails] for m in (mira, nina)})
    assert_secrets_reach_only_the_seats_holders(log, people, channels)
    seat_of = {ids["Bob"]: bob_seat, ids["nina"]: bob_seat, ids["mira"]: mira_seat, ids["Eve"]: mira_seat}
    for envelope in (e for e in log if e.event.type == "role_assigned" and e.event.player in seat_of):
        holders = {p for p, seat in seat_of.items() if seat == seat_of[envelope.event.player]}
        assert set(envelope.audience.players) <= holders, f"the role of seat {seat_of[envelope.event.player]}"


async def assert_told_by_mail(player, log, kinds, what) -> None:
    """``player`` finds each of their private ``kinds`` events in their mail, in their language."""
    address = f"mail:{player.user.address}"
    wanted = [e for e in log if e.event.type in kinds and e.audience.players == (address,)]
    assert {e.event.type for e in wanted} == set(kinds), f"{address}: {[e.event.type for e in wanted]}"
    context = Context(_names(log))
    texts = [flat(Narrator().render(e, Recipient(address, (player.language,)), "email", context).text) for e in wanted]

    async def told():
        await player.new_mail()
        mails = flat("\n".join(mail_text(x) for x in player.mails))
        return all(t and t in mails for t in texts)
    await wait_until(told, 30, what)


async def assert_told_in_private(fake, user, log, kinds) -> None:
    player = f"tg:{user.id}"
    wanted = [e for e in log if e.event.type in kinds and e.audience.players == (player,)]
    assert {e.event.type for e in wanted} == set(kinds), f"{player}: {[e.event.type for e in wanted]}"
    context = Context(_names(log))
    texts = [flat(Narrator().render(e, Recipient(player, ("en",)), "telegram", context).text) for e in wanted]
    await wait_until(lambda: _all_in(texts, said(fake, user.private_chat)), 30,
                     f"{user.first_name}'s role and briefing in private")


def assert_secrets_reach_only_the_seats_holders(log, people, channels) -> None:
    """Each secret (a role card, a seat's briefing, what the Lady showed) rendered for its reader is in
    their chat or mailbox and in no one else's (but a player dealt the same card, which reads the same)."""
    narration, context = Narrator(), Context(_names(log))

    def rendered(envelope, reader) -> str:
        language = people[reader].language or "en"
        channel = "email" if reader.startswith("mail:") else "telegram"
        return flat(narration.render(envelope, Recipient(reader, (language,)), channel, context).text)

    own_card = {e.event.player: rendered(e, e.event.player) for e in log if e.event.type == "role_assigned"}
    for envelope in (e for e in log if e.event.type in SECRETS):
        for reader in envelope.audience.players:
            secret = rendered(envelope, reader)
            told = flat("\n".join(channels[reader]))
            assert secret and secret in told, f"{reader} was told their {envelope.event.type}"
            for owner, texts in channels.items():
                if owner == reader or own_card.get(owner) == secret:
                    continue
                assert secret not in flat("\n".join(texts)), f"{reader}'s {envelope.event.type} reached {owner}"


async def _all_in(texts, shown) -> bool:
    told = flat("\n".join(shown))
    return all(t and t in told for t in texts)


def _names(log) -> dict[str, str]:
    """Each player's name as the events' people give it."""
    return {p: person.display_name for e in log for p, person in e.people.items()}


def _in(text, shown) -> bool:
    return text in flat("\n".join(shown))
