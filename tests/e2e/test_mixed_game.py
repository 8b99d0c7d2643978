"""One table across two channels, played to the end: three Telegram users in a group (the host
opens the game with the Lady of the Lake and /invites four email addresses) and four mail players
who join by mail (a click on the link, a reply quoted below, one quoted above, one in French as
Gmail's HTML) and play by mail in their own languages. The narrator as ``avalon run`` starts it:
engine, Telegram gateway against the fake Bot API, email gateway against real Dovecot and SMTP on
loopback, one in-process bus, one SQLite database.

Each reader is told the public story in their own language, and only their own secrets."""

from __future__ import annotations

import random

from avalon.services.email_gateway.wording import Intent, link_body, parse
from avalon.shared.narration.render import Context, Narrator, Recipient
from tests.e2e.email_support import links_of, read_link
from tests.e2e.mixed_support import (MixedNarrator, TelegramTable, TypedMailPlayer, flat, mail_text, said,
                                     wait_until)
from tests.fakes.telegram_api import FakeTelegram
from tests.mailservers import MailUser, mail_servers  # noqa: F401 - the fixture

TELEGRAM = ["Ann", "Bob", "Cleo"]
#: (mailbox, language, how they answer): how each joins is in the test.
MAIL = [("mira", "en", "click"), ("olaf", "ru", "below"), ("pia", "fa", "above"), ("quentin", "fr", "below")]
#: Public events the group must be told of (as must every mail player seated by then, in their language).
STORY = {"game_started", "team_proposed", "votes_revealed", "quest_resolved", "lady_used", "lady_not_used",
         "merlin_accused", "assassination_resolved", "game_ended"}
#: Public events told in the group but by no mail of their own (a vote cast, a card played: counted there).
QUIET = {"player_voted", "player_played_card", "profile_updated"}
#: Events that tell only their readers a secret.
SECRETS = {"role_assigned", "lady_result"}


async def test_three_telegram_players_and_four_mail_players_play_one_game_to_the_end(mail_servers, tmp_path):
    fake = await FakeTelegram().start()
    narrator = MixedNarrator(mail_servers, fake, f"sqlite+aiosqlite:///{tmp_path / 'avalon.db'}")
    await narrator.start()
    rng = random.Random(7)
    users = [fake.user(1000 + i, name) for i, name in enumerate(TELEGRAM)]
    group = fake.group(-100500, "Camelot", members=users)
    ann = users[0]
    mailers = [TypedMailPlayer(MailUser(mail_servers, mail_servers.add_user(local)), language, mode,
                               random.Random(rng.random())) for local, language, mode in MAIL]
    game: list[str] = []

    def table():
        known = narrator.gateway.games.get(game[0]) if game else None
        if known is None:
            return {}, ()
        names = narrator.gateway.roster.names()
        players = known.table.seats.players
        return {p: names.get(p, p) for p in players}, tuple(players)

    async def state():
        loaded = await narrator.store.load(game[0])
        return loaded.state if loaded is not None else None

    for m in mailers:
        m.table = table
    tg = TelegramTable(fake, group, users, random.Random(rng.random()))
    try:
        for user in users:
            await user.start_private()
        await ann.send(group, "/newgame")
        lobby = await fake.wait_for_message(group, "A new game", timeout=15)
        game.append(lobby.callback_data[0].split(":", 1)[1])
        await ann.send(group, "/settings")
        options = await fake.wait_for_message(group, where=lambda m: f"s:{game[0]}:lady" in m.callback_data,
                                              timeout=15)
        await ann.press(options, f"s:{game[0]}:lady")
        await wait_until(lambda: _lady_on(state), 15, "the Lady of the Lake switched on")
        for user in users[1:]:
            await user.press(lobby, button="Join")
        await ann.send(group, "/invite " + " ".join(m.user.address for m in mailers))

        async def invited():
            for m in mailers:
                await m.new_mail()
            return all(any(_join_link(x) for x in m.mails) for m in mailers)
        await wait_until(invited, 30, "every invitation mail")
        for m in mailers:  # the invitation names the table they are asked to (the group's title)
            assert any("Camelot" in mail_text(x) for x in m.mails), "the invitation names the table"
        mira, olaf, pia, quentin = mailers
        await mira.user.click(_join_link(mira.mails[-1]))
        await olaf.user.reply(olaf.mails[-1], link_body("ru", "join"), quote="below")
        await pia.user.reply(pia.mails[-1], link_body("fa", "join"), quote="above")
        await quentin.user.reply(quentin.mails[-1], link_body("fr", "join"), quote="below", html_only=True)

        async def seated():
            s = await state()
            return s is not None and len(s.players) == 7
        await wait_until(seated, 60, "seven players seated")
        await ann.send(group, "/startgame")

        async def over():
            s = await state()
            return s is not None and s.over

        async def play():
            await tg.step(game[0])
            for m in mailers:
                await m.step()
        await wait_until(over, 150, "the end of the game", play)
        await narrator.gateway.outbox.idle(30)
        await narrator.telegram.outbox.idle(30)

        async def everyone_told():
            for m in mailers:
                await m.new_mail()
            return (any(line.startswith("🏁") for t in said(fake, group) for line in t.split("\n"))
                    and all(any("🏁" in mail_text(x) for x in m.mails) for m in mailers))
        await wait_until(everyone_told, 30, "the end told in the group and by mail")
        log = await narrator.store.event_log(game[0])
    finally:
        await narrator.stop()
        await fake.stop()

    people = {}
    for envelope in log:
        people.update(envelope.people)
    names = {p: person.display_name for p, person in people.items()}
    kinds = [e.event.type for e in log]
    assert "game_ended" in kinds
    assert "deadline_missed" not in kinds and "proposal_missed" not in kinds, "nobody was timed out"
    if kinds.count("quest_resolved") >= 2:
        assert "lady_used" in kinds, "the Lady of the Lake was used after the second quest"
    mailbox = {f"mail:{m.user.address}": m for m in mailers}
    for player, m in mailbox.items():
        assert people[player].language == m.language, "the language a player joined in is theirs"
        assert names[player] == m.user.address.split("@")[0], "a mail player is named from their address"
    seats = next(e.event.seats for e in log if e.event.type == "game_started")
    assert {names[p] for p in seats if p.startswith("tg:")} == set(TELEGRAM), "Telegram players by first name"
    channels = {None: said(fake, group)}  # who reads what: the group, each private chat, each mailbox
    channels.update({f"tg:{user.id}": said(fake, user.private_chat) for user in users})
    channels.update({player: [mail_text(x) for x in m.mails] for player, m in mailbox.items()})

    assert_every_seat_acted_through_its_channel(log, seats, tg, mailers)
    assert_the_story_was_told_to_everyone(log, names, channels, mailbox)
    assert_secrets_reach_only_their_readers(log, people, names, channels)
    for owner, texts in channels.items():
        for text in texts:
            assert "tg:" not in text and "mail:" not in text, f"a raw id shown to {owner}: {text}"
    for m in mailers:
        for x in m.mails:
            html = x.get_body(("html",))
            assert "tg:" not in str(x["Subject"]) and "mail:" not in str(x["Subject"]), x["Subject"]
            assert "Camelot" in str(x["Subject"]) and game[0] not in str(x["Subject"]), "the table's name, not its id"
            assert "tg:" not in html.get_content() and "mail:" not in html.get_content()


def assert_every_seat_acted_through_its_channel(log, seats, tg, mailers) -> None:
    voters = {e.event.player for e in log if e.event.type == "player_voted"}
    assert voters == set(seats), f"every seat voted: {set(seats) - voters} never did"
    assert any(p.startswith("tg:") for p in voters) and any(p.startswith("mail:") for p in voters)
    for name, presses in tg.presses.items():
        assert presses > 0, f"{name} pressed no button"
    for m in mailers:
        assert len(m.sent) > 1, f"{m.user.address} made no move by mail"
    assert {how for m in mailers for how, _ in m.sent} >= {"click", "below", "above"}
    leaders = [e.event.leader for e in log if e.event.type == "phase_opened" and e.event.phase.value == "proposal"]
    proposers = [e.event.leader for e in log if e.event.type == "team_proposed"]
    assert proposers == leaders, "each leader proposed a team themselves, through their channel"
    if any(p.startswith("mail:") for p in leaders):
        assert any(p.startswith("mail:") for p in proposers), "a mail player led a team by mail"


def assert_the_story_was_told_to_everyone(log, names, channels, mailbox) -> None:
    """Every public event the group was told of (the story's events at least) reached each mail
    player seated by then, rendered in their language; the votes and the end say the same."""
    narration, context = Narrator(), Context(names)
    group = flat("\n".join(channels[None]))
    public = [e for e in log if e.audience.kind.value == "public" and e.event.type not in QUIET]
    in_group = [e for e in public
                if flat(narration.render(e, Recipient(None, ("en",)), "telegram", context).text) in group]
    assert STORY & {e.event.type for e in log} <= {e.event.type for e in in_group}, "the group saw the story"
    for player, m in mailbox.items():
        joined = next(e.seq for e in log if e.event.type == "player_joined" and e.event.player == player)
        told = flat("\n".join(channels[player]))
        for envelope in (e for e in in_group if e.seq > joined):
            for_them = narration.render(envelope, Recipient(player, (m.language,)), "email", context)
            text = flat(for_them.text)
            assert text and text in told, f"{player} ({m.language}) was not told of {envelope.event.type}"
    english = next(p for p, m in mailbox.items() if m.language == "en")
    for envelope in (e for e in log if e.event.type == "votes_revealed"):
        count = f"{envelope.event.approvals} for, {envelope.event.rejections} against"
        assert count in group and count in flat("\n".join(channels[english])), count
    reveal = next(t for t in channels[None] if "🏁" in t)
    ended = next(e for e in log if e.event.type == "game_ended")
    for seat, _role in ended.event.roles:
        for text in [reveal, *(channels[p][-1] for p in mailbox)]:
            assert names[seat] in text, f"the end names every player ({names[seat]} missing)"


def assert_secrets_reach_only_their_readers(log, people, names, channels) -> None:
    """A role card (or what the Lady showed) rendered for its reader is in their own chat or
    mailbox and in no one else's (but a player dealt the same card, which reads the same)."""
    narration, context = Narrator(), Context(names)

    def rendered(envelope, reader) -> str:
        language = people[reader].language or "en"
        channel = "email" if reader.startswith("mail:") else "telegram"
        return flat(narration.render(envelope, Recipient(reader, (language,)), channel, context).text)

    own_card = {e.event.player: rendered(e, e.event.player) for e in log if e.event.type == "role_assigned"}
    seats = next(e.event.seats for e in log if e.event.type == "game_started")
    assert set(own_card) == set(seats), "every player got a role card"
    for envelope in (e for e in log if e.event.type in SECRETS):
        for reader in envelope.audience.players:
            secret = rendered(envelope, reader)
            assert secret and secret in flat("\n".join(channels[reader])), f"{reader} was told their {envelope.event.type}"
            for owner, texts in channels.items():
                if owner == reader or own_card.get(owner) == secret:
                    continue
                assert secret not in flat("\n".join(texts)), f"{reader}'s {envelope.event.type} reached {owner}"


async def _lady_on(state) -> bool:
    s = await state()
    return s is not None and s.options.lady


def _join_link(message) -> str | None:
    for url in links_of(message):
        intent = parse(read_link(url)[1], {}, ())
        if isinstance(intent, Intent) and intent.kind == "join":
            return url
    return None
