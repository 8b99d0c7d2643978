"""The leak check of the security tests: what each reader was told against what they may know.

A reader is a game's Telegram group, a Telegram player's private chat or a mail player's mailbox;
what they were told is every line of every text they received (each version of an edited message,
each mail's subject, plain text and HTML part). What they may know comes from the engine's event log:

1. **Secret lines.** Every event addressed to some players (a role card and what its holder saw in
   the night, a Lady result, an Excalibur peek, a quest card, a vote, the private evil council, the
   choices offered to each player) is rendered for each of its readers in all six languages and
   both channels. A line of those renderings that a reader received, although they are not among
   that event's readers and the same line is not also theirs to read (from an event addressed to
   them, or from a public event of their game), is a leak: someone else's card, result or choices
   reached them, in whatever language. Catches a private message sent to the group, to the wrong
   player, or to a player of another game.
2. **A name beside a secret.** Before the end-of-game reveal, no line a reader received puts a
   player's name right beside a role (``Ann: Merlin``, ``Merlin — Ann``, ``Ann (Morgana``), a quest
   card or, with anonymous votes, a vote (``👍 Ann``), in any language, other than the reader's own
   role. Catches a secret written in a new sentence that no template has.
3. **Buttons.** A group shows only the table's buttons (join, options, the team picker and Excalibur's
   holder with it, the vote); a private chat only the card and target buttons offered to that
   player in that phase (an assassin's keyboard lists the good players: it is a secret too).
4. **Sanity.** Each reader did receive their own role card, Lady results, Excalibur peeks, cards and
   votes, line for line as the check renders them: the fingerprints of (1) are the texts the
   channels really send, so the check cannot pass by looking for the wrong thing.

Checks 1-3 were each seen to fail on a leak planted in the gateways while the test was written (a
role card also sent to the group; a Lady result also mailed to the host; a name and a role written
in the group; a player's card buttons drawn in the group), and to pass once it was taken out."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from avalon.services.email_gateway.words import email_words
from avalon.shared.narration.render import CHANNELS, LOCALES, Context, Narrator, Recipient, glossary

from .mixed_support import flat
from .secrets_hands import TARGETED

#: Private events each reader must have been told (the sanity check).
OWN = {"role_assigned", "lady_result", "excalibur_used", "card_played", "vote_cast"}
MIN_LINE = 8  # shorter lines ("Fail.") say nothing on their own
SEPARATORS = r"\s*(?::|\(|—|–|-|=)\s*"


@dataclass
class Findings:
    leaks: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    readers: int = 0
    texts: int = 0
    lines_checked: int = 0
    secret_lines: int = 0
    secret_events: int = 0


def lines_of(text: str) -> list[str]:
    return [line for line in (flat(x) for x in text.split("\n")) if line]


class Renderer:
    def __init__(self) -> None:
        self.narrator = Narrator()
        self.same: dict[tuple[str, str], bool] = {}  # (locale, kind) -> the email text is the Telegram one

    def _channels(self, locale: str, kind: str, channels) -> tuple[str, ...]:
        if channels != CHANNELS:
            return channels
        key = (locale, kind)
        if key not in self.same:
            from avalon.shared.narration.render import TEMPLATES

            self.same[key] = not (TEMPLATES / "email" / f"{kind}.html").exists()  # email reads the shared one
        return ("telegram",) if self.same[key] else channels

    def lines(self, envelope, reader: str | None, names: dict, game: str, locales=LOCALES,
              channels=CHANNELS) -> set[str]:
        out: set[str] = set()
        context = Context(names, {"title": game})
        for locale in locales:
            for channel in self._channels(locale, envelope.event.type, channels):
                text = self.narrator.render_in(locale, envelope, Recipient(reader, (locale,)), channel, context).text
                out.update(line for line in lines_of(text) if len(line) >= MIN_LINE)
        return out


def check(played: list) -> Findings:
    """``played``: secrets_run.Played of every game of one narrator."""
    found = Findings()
    render = Renderer()
    secret: dict[str, set[str]] = defaultdict(set)  # line -> the players it is meant for
    names_of: dict[str, dict[str, str]] = {}
    for p in played:
        names = names_of[p.game] = {s.player: s.name for s in p.spec.seats}
        for envelope in p.log:
            if envelope.audience.kind.value == "public":
                continue
            found.secret_events += 1
            for reader in envelope.audience.players:
                for line in render.lines(envelope, reader, names, p.game):
                    secret[line].update(envelope.audience.players)
    found.secret_lines = len(secret)
    for p in played:
        names = names_of[p.game]
        roles = dict(next(e.event.roles for e in p.log if e.event.type == "game_ended"))
        allowed: dict[str | None, set[str]] = defaultdict(set)
        for line, owners in secret.items():
            for owner in owners & set(names):
                allowed[owner].add(line)
        public: set[str] | None = None  # the game's public lines, rendered when first needed
        for reader, texts in p.transcripts.items():
            found.readers += 1
            found.texts += len(texts)
            who = "the group" if reader is None else names[reader]
            received = [line for text in texts for line in lines_of(text)]
            found.lines_checked += len(received)
            for line in received:
                owners = secret.get(line)
                if not owners or reader in owners or line in allowed[reader]:
                    continue
                if public is None:
                    public = {line for e in p.log if e.audience.kind.value == "public"
                              for line in render.lines(e, None, names, p.game)}
                if line not in public:
                    here = sorted(names[o] for o in owners if o in names)
                    elsewhere = f" (and {len(owners) - len(here)} of other games)" if len(owners) > len(here) else ""
                    found.leaks.append(f"{p.spec.describe()}: {who} read a line meant for {here}{elsewhere}: "
                                       f"{line!r}")
            found.leaks += beside(p, reader, texts, names, roles, allowed[reader])
        found.leaks += keyboards(p, names)
        found.missing += sanity(p, render, names)
    return found


def _terms(section: str) -> dict[str, str]:
    """term (case-folded, any language) -> its key (a role, a card...)."""
    out = {}
    for locale in LOCALES:
        for key, term in glossary(locale)[section].items():
            out[flat(term).casefold()] = key
    return out


def own_labels(p, reader, names: dict[str, str]) -> list[str]:
    """The labels of the shooter's own links, in every language (a Russian one reads ``Выстрел: Ann —
    Мерлин``, "shoot Ann as Merlin"): the shooter's own choices, not a secret told to them."""
    out = set()
    for e in p.log:
        if e.event.type == "choices_offered" and e.event.player == reader:
            for c in e.event.choices:
                key = {"assassinate": "label_shoot", "accuse": "label_accuse"}.get(c.kind.value)
                for target in c.targets if key else ():
                    out |= {flat(email_words(locale, key, name=names[target])) for locale in LOCALES}
    return sorted(out, key=len, reverse=True)


def beside(p, reader, texts: list[str], names: dict[str, str], roles: dict, mine: set[str]) -> list[str]:
    """Lines before the end that put a name right beside a role, a card or (anonymous votes) a vote
    (but the reader's own secrets, as a Russian night reads ``• Ann — Мерлин или Моргана``, and the
    labels of their own choices)."""
    terms = {"role": _terms("roles"), "card": _terms("cards")}
    if p.spec.options.anonymous_votes:
        terms["vote"] = {flat(glossary(loc)[w]).casefold(): w for loc in LOCALES for w in ("approve", "reject")}
    by_name = {name: player for player, name in names.items()}
    name_re = "|".join(re.escape(n) for n in sorted(by_name, key=len, reverse=True))
    all_terms = {t: (kind, key) for kind, table in terms.items() for t, key in table.items()}
    term_re = "|".join(re.escape(t) for t in sorted(all_terms, key=len, reverse=True))
    after = re.compile(rf"(?<!\w)({name_re}){SEPARATORS}(.{{0,80}})")
    before = re.compile(rf"(?i)(?<!\w)({term_re}){SEPARATORS}({name_re})(?!\w)")
    votes = re.compile(rf"[👍👎]\s*({name_re})(?!\w)") if "vote" in terms else None
    own = roles.get(reader).value if reader in roles else None
    labels = own_labels(p, reader, names) if reader is not None else []
    out = []
    for text in texts:
        if "🏁" in text:
            break  # the end-of-game reveal names every role: from here on nothing is secret
        for line in lines_of(text):
            if line in mine:
                continue
            for label in labels:
                line = line.replace(label, " … ")
            hits = []
            for match in after.finditer(line):
                rest = match.group(2).casefold()
                hit = next((all_terms[t] for t in all_terms if rest.startswith(t)), None)
                if hit:
                    hits.append((by_name[match.group(1)], hit))
            for match in before.finditer(line):
                hits.append((by_name[match.group(2)], all_terms[match.group(1).casefold()]))
            if votes is not None:
                hits += [(by_name[m.group(1)], ("vote", "?")) for m in votes.finditer(line)]
            for player, (kind, key) in hits:
                if not (kind == "role" and player == reader and key == own):
                    who = "the group" if reader is None else names[reader]
                    out.append(f"{p.spec.describe()}: {who} read {names[player]} beside a {kind}: {line!r}")
    return out


def keyboards(p, names: dict[str, str]) -> list[str]:
    """Buttons shown where they do not belong (see the module's docstring)."""
    offered: dict[tuple, set[str]] = defaultdict(set)  # (player, phase_id) -> "c:fail", "t:a"...
    for e in p.log:
        if e.event.type == "choices_offered":
            for c in e.event.choices:
                kind = c.kind.value
                if kind == "play_card":
                    offered[(e.event.player, e.event.phase_id)] |= {f"c:{card.value}" for card in c.cards}
                elif kind in TARGETED:
                    offered[(e.event.player, e.event.phase_id)].add(f"t:{TARGETED[kind][1]}")
    out = []
    for reader, datas in p.buttons.items():
        for data in set(datas):
            parts = data.split(":")
            if len(parts) < 2 or parts[1] != p.game:
                ok = False
            elif reader is None:
                ok = parts[0] in ("j", "s", "p", "v") or parts[0] == "t" and parts[3] == "x"
            elif parts[0] in ("c", "t") and parts[3] != "x":
                ok = f"{parts[0]}:{parts[3]}" in offered[(reader, int(parts[2]))]
            else:
                ok = False
            if not ok:
                who = "the group" if reader is None else names[reader]
                out.append(f"{p.spec.describe()}: {who} was shown the button {data!r}")
    return out


def sanity(p, render: Renderer, names: dict[str, str]) -> list[str]:
    """Each reader's own secrets are in their chat or mailbox, as the check renders them."""
    out = []
    seats = {s.player: s for s in p.spec.seats}
    received = {reader: {line for text in texts for line in lines_of(text)}
                for reader, texts in p.transcripts.items()}
    people = {}
    for envelope in p.log:
        people.update(envelope.people)
    for envelope in p.log:
        if envelope.event.type not in OWN:
            continue
        for reader in envelope.audience.players:
            seat = seats[reader]
            language = (people.get(reader).language if people.get(reader) else None) or seat.language
            channel = "email" if seat.channel == "email" else "telegram"
            lines = render.lines(envelope, reader, names, p.game, (language,), (channel,))
            lost = lines - received[reader]
            if lost:
                out.append(f"{p.spec.describe()}: {seat.name} ({language}) was not told their "
                           f"{envelope.event.type}: {sorted(lost)}")
    return out
