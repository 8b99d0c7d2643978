"""A 7-player game with Excalibur by mail (real Dovecot and SMTP on loopback), played by people who
only do what the mails say: each reads the newest mail that lists choices, and clicks one of its
links or types what the mail shows (for a team, the mail's own typed example, or the "pick" links one
at a time until the mail asks who gets Excalibur). They know their language (the words of its
catalog) and nothing of the narrator's inside. Mid-game, a reply to a phase that is over, a reply
with another player's link and a forged bounce are answered in the mail's own words (or, for the
bounce, not at all) and change nothing."""

from __future__ import annotations

import asyncio
import html as _html
import random
import re
from dataclasses import dataclass, field
from email.message import EmailMessage

from avalon.services.email_gateway.wording import link_body
from avalon.services.email_gateway.words import email_words
from tests.e2e.email_support import Narrator, unseen, wait_until
from tests.e2e.test_email_safety import bounce_for
from tests.mailservers import MailUser, mail_servers  # noqa: F401 - the fixture

PEOPLE = [("host", "en", "type"), ("anna", "ru", "click"), ("bao", "vi", "type"), ("claire", "fr", "click"),
          ("daan", "nl", "type"), ("dara", "fa", "click"), ("eve", "en", "click")]
ITEM = re.compile(r'<li><a href="(mailto:[^"]+)">([^<]*)</a></li>')
QUOTED = re.compile(r"[“«‘„]\s?([^”»’“]+?)\s?[”»’“]")


def text_of(message: EmailMessage) -> str:
    return message.get_body(("plain",)).get_content().replace("\r\n", "\n")


def label_pattern(locale: str, key: str) -> re.Pattern:
    """A choice's label in ``locale`` with any name in it (as a reader recognises "Pick or drop X")."""
    marker = "\x00"
    prefix, _, suffix = email_words(locale, key, name=marker).partition(marker)
    return re.compile(re.escape(prefix) + r"(.+)" + re.escape(suffix))


@dataclass
class Person:
    """At their mail program, in their language; ``mode``: how they answer besides team proposals."""

    user: MailUser
    name: str
    language: str
    mode: str  # click | type
    rng: random.Random
    proposals: list  # shared: how the last team was put together (the table mixes both ways)
    mails: list = field(default_factory=list)
    seen: set = field(default_factory=set)
    acted_on: set = field(default_factory=set)
    clicked: dict = field(default_factory=dict)  # phase marker -> names picked by link
    did: list = field(default_factory=list)  # (how, what)

    async def new_mail(self) -> list[EmailMessage]:
        return await unseen(self.user, self.seen, self.mails)

    def choices(self, message: EmailMessage) -> list[tuple[str, str, str]]:
        """(label, what to type, link) of each choice the mail lists."""
        html = message.get_body(("html",))
        links = {_html.unescape(label): _html.unescape(url) for url, label in ITEM.findall(html.get_content())} \
            if html is not None else {}
        out = []
        for line in text_of(message).splitlines():
            if line.startswith("- ") and ": " in line:
                label, typed = line[2:].rsplit(": ", 1)
                if label in links:
                    out.append((label, typed, links[label]))
        return out

    def example(self, message: EmailMessage) -> str | None:
        """The typed example of the mail's "To answer, reply..." sentence."""
        how = email_words(self.language, "how_to_answer", example="\x00").split("\x00")[0].strip()
        for paragraph in text_of(message).split("\n\n"):
            if paragraph.strip().startswith(how[:20]):
                found = QUOTED.findall(paragraph)
                return found[0] if found else None
        return None

    async def step(self) -> None:
        await self.new_mail()
        listing = [m for m in self.mails if self.choices(m)]
        if not listing or listing[-1]["Message-ID"] in self.acted_on:
            return
        latest = listing[-1]
        self.acted_on.add(latest["Message-ID"])
        await self.act(latest, self.choices(latest))

    async def act(self, message: EmailMessage, choices) -> None:
        text = text_of(message)
        pick = label_pattern(self.language, "label_pick")
        sword = label_pattern(self.language, "label_excalibur")
        picks = [(c, pick.fullmatch(c[0]).group(1)) for c in choices if pick.fullmatch(c[0])]
        swords = [(c, sword.fullmatch(c[0]).group(1)) for c in choices if sword.fullmatch(c[0])]
        if picks:
            marker = re.search(r"#\d+", picks[0][0][1])
            phase = marker.group(0) if marker else ""
            mine = self.clicked.setdefault(phase, [])
            if email_words(self.language, "team_excalibur_needed") in text:  # the mail asks for the holder
                choice = self.rng.choice([c for c, name in swords if name in mine] or [c for c, _ in swords])
                self.did.append(("excalibur asked", phase))
                return await self.answer(message, choice, click=True)
            if not mine:  # a new team: the table takes turns typing it whole and clicking it together
                self.proposals.append("type" if len(self.proposals) % 2 == 0 else "click")
                if self.proposals[-1] == "type":
                    example = self.example(message)
                    self.did.append(("typed team", example))
                    self.clicked[phase] = ["(typed)"]
                    return await self.reply(message, example)
            if mine == ["(typed)"]:
                return  # answered with a whole team: the next mail says what became of it
            name = self.rng.choice([n for _, n in picks if n not in mine])
            mine.append(name)
            return await self.answer(message, next(c for c, n in picks if n == name), click=True)
        approve = email_words(self.language, "label_approve")
        if any(c[0] == approve for c in choices) and self.rng.random() < 0.75:
            choice = next(c for c in choices if c[0] == approve)
        else:
            choice = self.rng.choice(choices)
        await self.answer(message, choice, click=self.mode == "click")

    async def answer(self, message: EmailMessage, choice, click: bool) -> None:
        label, typed, url = choice
        if click:
            self.did.append(("click", label))
            await self.user.click(url)
        else:
            await self.reply(message, typed)

    async def reply(self, message: EmailMessage, typed: str) -> None:
        self.did.append(("typed", typed))
        await self.user.reply(message, typed, quote="below")


async def test_seven_people_finish_a_game_with_excalibur_doing_only_what_the_mails_say(mail_servers, tmp_path):
    narrator = Narrator(mail_servers, f"sqlite+aiosqlite:///{tmp_path / 'narrator.db'}")
    await narrator.start()
    rng = random.Random(20)
    proposals: list[str] = []
    people = []
    for local, language, mode in PEOPLE:
        user = MailUser(mail_servers, mail_servers.add_user(local))
        people.append(Person(user, local, language, mode, random.Random(rng.random()), proposals))
    host = people[0]
    code: list[str] = []
    try:
        invitees = "\n".join(p.user.address for p in people[1:])
        await host.user.send(narrator.address, "new game", f"excalibur\n{invitees}\n")

        async def invited_all():
            for p in people[1:]:
                await p.new_mail()
            return all(p.mails for p in people[1:])
        await wait_until(invited_all, 30, "every invitation")
        code.append(next(g for g in narrator.gateway.games if g.startswith("mail-")))
        for p in people[1:]:
            if p.language != "en":  # they say their language first, in their words
                await p.user.reply(p.mails[-1], link_body(p.language, "language", [p.language]), quote="below")

        async def seated():
            loaded = await narrator.store.load(code[0])
            return loaded is not None and len(loaded.state.players) == 7

        async def joining():
            for p in people[1:]:
                await p.step()
        await wait_until(seated, 60, "seven players seated", joining)
        await host.new_mail()

        def words_to_write(m) -> list[str]:  # the one-word commands a mail quotes, above its footer
            return [w for w in QUOTED.findall(text_of(m).rsplit("-- \n", 1)[0]) if len(w.split()) == 1]
        created = next(m for m in host.mails if len(words_to_write(m)) >= 3)  # invite, join, start
        start = words_to_write(created)[-1]
        await host.user.reply(created, start, quote="below")

        async def over():
            loaded = await narrator.store.load(code[0])
            return loaded is not None and loaded.state.over

        async def quests_done():
            return [e for e in await narrator.store.event_log(code[0]) if e.event.type == "quest_resolved"]

        async def play():
            await asyncio.gather(*(p.step() for p in people))
        await wait_until(quests_done, 300, "the first quest", play)
        await odd_mails_change_nothing(narrator, code[0], people)
        await wait_until(over, 400, "the end of the game", play)
        await narrator.gateway.outbox.idle(60)
        await asyncio.sleep(1.5)
        for p in people:
            await p.new_mail()
        log = await narrator.store.event_log(code[0])
        counts = await narrator.gateway.outbox.counts()
    finally:
        await narrator.stop()

    kinds = [e.event.type for e in log]
    assert "game_ended" in kinds and counts.get("dead", 0) == 0, counts
    handed = [e for e in log if e.event.type == "team_proposed" and e.event.excalibur]
    assert handed, "Excalibur was handed by mail"
    done = [how for p in people for how, _ in p.did]
    assert "typed team" in done and "excalibur asked" in done and "click" in done and "typed" in done, done
    typed_teams = [what for p in people for how, what in p.did if how == "typed team"]
    assert all(";" in t or "؛" in t for t in typed_teams), f"every typed example named the holder: {typed_teams}"
    for p in people:
        texts = [text_of(m) for m in p.mails]
        heading, draft = email_words(p.language, "choices_heading"), email_words(p.language, "team_draft",
                                                                                 names="\x00", count=0, size=0)
        draft_start = re.split(r"[0(]", draft)[0]
        assert len(draft_start) > 4, draft
        assert all(t.count(heading) <= 1 for t in texts), "one set of choices per mail"
        assert all(t.count(draft_start) <= 1 for t in texts), "one team draft per mail"
        footers = [t.rsplit("-- \n", 1)[1].strip() for t in texts]
        lobby, playing = email_words(p.language, "footer"), email_words(p.language, "footer_playing")
        first_playing = footers.index(playing)
        assert lobby not in footers[first_playing:], "once the game runs, no mail says how to leave the lobby"
        assert footers[-1] == email_words(p.language, "footer_over")


async def odd_mails_change_nothing(narrator: Narrator, game_id: str, people: list[Person]) -> None:
    """While nobody plays: a reply to a vote that is over, a reply through another player's link, a
    forged bounce. Each is answered in the mail's words (the bounce: the host is told nothing), and
    the game's events stay as they were."""
    await narrator.gateway.outbox.idle(30)
    await asyncio.sleep(1)
    quiet = ("command_rejected", "phase_reminder")  # a refusal, and a reminder the clock may send meanwhile
    before = [e.event for e in await narrator.store.event_log(game_id) if e.event.type not in quiet]
    voter = next(p for p in people if any(k == "typed" and "#" in w for k, w in p.did))
    approve = email_words(voter.language, "label_approve")
    old = next(m for m in voter.mails if any(c[0] == approve for c in voter.choices(m)))
    typed = next(c[1] for c in voter.choices(old) if c[0] == approve)
    await voter.user.reply(old, typed, quote="below")
    stale = "⚠️ " + email_words(voter.language, "stale_phase")
    await voter.user.wait_for(lambda m: stale in text_of(m), timeout=30)

    other = next(p for p in people if p is not voter and p.language != "en")
    await other.user.reply(old, typed, quote="below")  # through the voter's link (a forwarded mail)
    foreign = "⚠️ " + email_words(other.language, "not_your_token")
    await other.user.wait_for(lambda m: foreign in text_of(m), timeout=30)

    host = people[0]
    mails_to_host = len(await host.user.inbox())
    narrator.servers.deliver_directly(narrator.address, bounce_for(narrator.address, other.user.address))

    async def bounce_read():
        return await narrator.gateway.store.seen("bounce-1@mx.example.test")
    await wait_until(bounce_read, 30, "the forged bounce read")
    await narrator.gateway.outbox.idle(30)
    await asyncio.sleep(1)
    assert len(await host.user.inbox()) == mails_to_host, "the host is told nothing of a forged bounce"
    contact = await narrator.gateway.store.contact(other.user.address)
    assert contact is None or not contact.failing
    after = [e.event for e in await narrator.store.event_log(game_id) if e.event.type not in quiet]
    assert after == before, "nothing changed"
