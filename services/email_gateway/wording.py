"""Reading a player's mail as a command, in any of the six languages, and writing the bodies of our links.

``parse`` reads the first line that has a word on it: a command phrase of any language (see
``lexicon``), then what the command needs: player names or seat numbers, a language, a time zone, a
preset, addresses, or the message itself. ``link_body`` writes what ``parse`` reads back.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, Mapping, NamedTuple, Sequence
from zoneinfo import ZoneInfo, available_timezones

from avalon.shared.narration.render import glossary

from . import lexicon as lx

KINDS = ("join", "leave", "start", "cancel", "approve", "reject", "success", "fail", "team", "pick",
         "lady", "excalibur", "sheathe", "shoot", "accuse", "hand", "say", "last_word", "status",
         "role", "rules", "help", "language", "timezone", "new_game", "invite")
#: about the record of finished games, outside any game (answered by mail to the asker alone: no receipt)
RECORD_KINDS = ("stats", "top", "history", "hide_stats", "show_stats", "forget_me")
#: the people around the table: the host's pause, resume, seats and duties, a player's absence or hand-over,
#: taking an open seat, following a game (``watch CODE``), and the host's standby list (``standby ADDRESS``)
TABLE_KINDS = ("pause", "resume", "void", "away", "take", "open_seat", "pass_host", "remove", "watch", "unwatch",
               "standby", "standby_remove")


@dataclass(frozen=True)
class Intent:
    kind: str
    language: str
    targets: tuple[str, ...] = ()
    text: str = ""
    phase_id: int | None = None
    holder: str | None = None  # a team typed with Excalibur's holder ("team A, B, C; excalibur B")
    # ``invite ADDRESS seat NAME``: ``targets`` holds the seat's holder, ``text`` the addresses


@dataclass(frozen=True)
class Problem:
    reason: Literal["unknown_command", "ambiguous_name", "unknown_name", "missing_name", "unknown_language",
                    "unknown_timezone", "no_address"]
    language: str | None
    word: str = ""
    candidates: tuple[str, ...] = ()


_MARKER = re.compile(r"#(\d{1,18})(?!\d)")
_GROUP_SEPARATORS = re.compile(r"[,;،؛、，&+/|\n]")
_ADDRESS = re.compile(r"[\w.!#$%&'*+/=?^`{|}~-]+@[\w-]+(?:\.[\w-]+)+")


# -- the command phrase ------------------------------------------------------------------

@lru_cache(maxsize=1)
def _index() -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]], int]:
    """(exact index, loose index, longest phrase in words): key -> (kind, the first locale that has it)."""
    exact: dict[str, tuple[str, str]] = {}
    loose: dict[str, tuple[str, str]] = {}
    longest = 1
    for locale in lx.LOCALES:
        for kind, phrases in lx.WORDS[locale].items():
            for phrase in phrases:
                spaced, loosened, joined = lx.phrase_keys(phrase.lstrip("="))
                longest = max(longest, spaced.count(" ") + 1)
                keys = [(exact, spaced), (exact, spaced.replace(" ", ""))]
                keys += [] if phrase.startswith("=") else [(loose, loosened), (loose, joined)]
                for index, key in keys:
                    index.setdefault(key, (kind, locale))
    return exact, loose, longest


def _command(parts: list[str], loose: list[str]) -> tuple[str, str, int] | None:
    """(kind, locale, words used) of the longest command phrase at the start of the line."""
    exact_index, loose_index, longest = _index()
    for k in range(min(longest, len(parts)), 0, -1):
        for index, words in ((exact_index, parts), (loose_index, loose)):
            for key in (" ".join(words[:k]), "".join(words[:k])):
                if key in index:
                    return *index[key], k
    return None


# -- names ------------------------------------------------------------------------------

_CYRILLIC_ENDINGS = "ой ей ом ем ым им ою ею а я у ю е ы и о ь й".split()


def _stem(word: str) -> str:
    if not any("а" <= c <= "я" for c in word):
        return word
    for ending in _CYRILLIC_ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 2:
            return word[: -len(ending)]
    return word


class _Name(NamedTuple):
    player: str
    exact: str  # the folded words of the display name, accents kept
    words: tuple[str, ...]  # the same without accents
    loose: str


def _names(players: Mapping[str, str]) -> list[_Name]:
    out = []
    for player, shown in players.items():
        shown = unicodedata.normalize("NFKC", str(shown))
        spans = lx.token_spans(shown)
        exact = " ".join(lx.fold(shown[a:b]) for a, b in spans)
        words = tuple(lx.loosen(part) for part in exact.split())
        out.append(_Name(player, exact, words, " ".join(words)))
    return out


def _tiers(span_exact: str, span_loose: list[str], names: list[_Name], seats: Sequence[str]) -> list[list[str]]:
    """Who a span of words may mean, from the surest reading to the loosest: the same name as typed, the
    same without accents, a seat number, the start of a name, the start of a later word of a name, the
    same Russian stem ("Аню" for "Аня")."""
    joined = " ".join(span_loose)
    seat = int(joined) if joined.isdecimal() and len(joined) <= 3 else 0
    stems = [_stem(w) for w in span_loose]
    return [
        [n.player for n in names if n.exact == span_exact],
        [n.player for n in names if n.loose == joined or "".join(n.words) == "".join(span_loose)],
        [seats[seat - 1]] if 1 <= seat <= len(seats) else [],
        [n.player for n in names if n.loose.startswith(joined)],
        [n.player for n in names if any(" ".join(n.words[k:]).startswith(joined) for k in range(1, len(n.words)))],
        [n.player for n in names
         if any([_stem(w) for w in n.words[k:k + len(stems)]] == stems for k in range(len(n.words)))],
    ]


def _in_order(found: list[str], players: Mapping[str, str], seats: Sequence[str]) -> tuple[str, ...]:
    order = {p: i for i, p in enumerate(list(seats) + [p for p in players if p not in seats])}
    return tuple(sorted(dict.fromkeys(found), key=lambda p: order.get(p, len(order))))


def _targets(rest: str, players: Mapping[str, str], seats: Sequence[str], locale: str,
             one: bool) -> tuple[str, ...] | Problem:
    names = _names(players)
    longest = max([len(n.words) for n in names] + [1])
    name_words = {w for n in names for w in n.words}
    targets: list[str] = []
    for group in _GROUP_SEPARATORS.split(rest[:2000]):  # a longer list of names is no team
        spans = lx.token_spans(group)
        originals = [group[a:b] for a, b in spans]
        exact = [lx.fold(o) for o in originals]
        loose = [lx.loosen(e) for e in exact]
        keep = [i for i, w in enumerate(loose) if w not in lx.AND_WORDS or w in name_words]
        originals, exact, loose = [originals[i] for i in keep], [exact[i] for i in keep], [loose[i] for i in keep]
        i = 0
        while i < len(loose):
            found = _span(exact, loose, i, longest, names, seats)
            if found is None:
                return Problem("unknown_name", locale, originals[i])
            width, candidates = found
            if len(candidates) > 1:
                return Problem("ambiguous_name", locale, " ".join(originals[i:i + width]),
                               _in_order(candidates, players, seats))
            targets.append(candidates[0])
            if one:
                return tuple(targets)
            i += width
    if not targets:
        return Problem("missing_name", locale)
    return tuple(targets)


def _span(exact: list[str], loose: list[str], i: int, longest: int, names: list[_Name], seats: Sequence[str]):
    widths = range(min(longest, len(loose) - i), 0, -1)
    readings = {w: _tiers(" ".join(exact[i:i + w]), loose[i:i + w], names, seats) for w in widths}
    for tier in range(6):
        for width in widths:
            candidates = readings[width][tier]
            if candidates:
                return width, list(dict.fromkeys(candidates))
    return None


# -- arguments -----------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _folded_sets():
    def keys(words):
        return {k for w in words for k in lx.phrase_keys(w)[1:]}
    languages = {key: code for code, names in lx.LANGUAGE_NAMES.items() for key in keys(names)}
    presets = {key: preset for preset, names in lx.PRESETS.items() for key in keys(names)}
    return keys(lx.FILLERS), keys(lx.NONE_WORDS), languages, presets


@lru_cache(maxsize=1)
def _zones() -> dict[str, str]:
    zones = {z.casefold(): z for z in available_timezones()}
    zones.setdefault("utc", "UTC")
    cities: dict[str, list[str]] = {}
    for name in zones.values():
        if "/" in name:
            cities.setdefault(name.rsplit("/", 1)[1].casefold(), []).append(name)
    for city, found in cities.items():
        if len(found) == 1:
            zones.setdefault(city, found[0])
    return zones


def _zone(rest: str) -> str | None:
    rest = rest.strip(" \t.,;:!?\"'«»“”()")
    for candidate in (rest.replace(" ", "_"), rest.split(" ", 1)[0] if rest else ""):
        name = _zones().get(candidate.casefold())
        if name:
            try:
                ZoneInfo(name)
            except (ValueError, OSError):
                continue
            return name
    return None


def _lookup(rest: str, table: dict[str, str]) -> str | None:
    """What the first words of ``rest`` name in ``table`` (language names, presets)."""
    found = lx.words(rest)
    for k in range(min(3, len(found)), 0, -1):
        for key in (" ".join(found[:k]), "".join(found[:k])):
            if key in table:
                return table[key]
    if found and re.fullmatch(r"[a-z]{2}[-_][a-z0-9]{2,8}", found[0]):  # en-GB, fa_IR
        return table.get(found[0][:2])
    return None


# -- parse ----------------------------------------------------------------------------------

def _blank(line: str, spans: list[tuple[int, int]]) -> str:
    for a, b in spans:
        line = line[:a] + " " * (b - a) + line[b:]
    return line


def parse(text: str, players: Mapping[str, str] = {}, seats: Sequence[str] = ()) -> Intent | Problem:
    """``players``: player id -> display name of the game's players; ``seats``: player ids in seat order
    (seat numbers are 1-based)."""
    lines = unicodedata.normalize("NFKC", text or "").splitlines()
    at = next((i for i, line in enumerate(lines) if lx.token_spans(line)), None)
    if at is None:
        return Problem("unknown_command", None)
    line, after = lines[at], "\n".join(lines[at + 1:])
    markers = list(_MARKER.finditer(line))
    unmarked = _blank(line, [m.span() for m in markers])
    spans = lx.token_spans(unmarked)
    parts = [lx.fold(unmarked[a:b]) for a, b in spans]
    found = _command(parts, [lx.loosen(p) for p in parts])
    if found is None:
        return Problem("unknown_command", None)
    kind, locale, used = found
    end = spans[used - 1][1]
    marker = _chosen_marker(markers, kind, unmarked, end)
    phase = int(marker.group(1)) if marker else None
    rest = (_blank(line, [marker.span()] if marker else []) if kind in lx.TEXT_KINDS else unmarked)[end:]
    fillers, nones, _, _ = _folded_sets()

    def intent(kind: str = kind, targets: tuple[str, ...] = (), text: str = "") -> Intent:
        return Intent(kind, locale, targets, text, phase)

    if kind in ("stats", "take") and not all(w in fillers for w in lx.words(rest)):  # "stats Anna": hers
        targets = _targets(rest, players, seats, locale, one=True)
        return targets if isinstance(targets, Problem) else intent(targets=targets)
    if kind in lx.BARE:
        return intent() if all(w in fillers for w in lx.words(rest)) else Problem("unknown_command", None)
    if kind in lx.TEXT_KINDS:
        message = (rest + "\n" + after).strip().lstrip(":：,،-–—").strip()
        return intent(text=message)
    if kind == "excalibur" and " ".join(lx.words(_GROUP_SEPARATORS.split(rest)[0])) in nones:
        return intent("sheathe")
    if kind in ("team", "excalibur"):
        both = _team_and_holder(kind, rest, players, seats, locale)
        if both is not None:
            return both if isinstance(both, Problem) else Intent("team", locale, both[0], "", phase, both[1])
    if kind == "team" or kind in lx.ONE_TARGET:
        targets = _targets(rest, players, seats, locale, one=kind != "team")
        return targets if isinstance(targets, Problem) else intent(targets=targets)
    if kind == "language":
        code = _lookup(rest, _folded_sets()[2])
        return intent(text=code) if code else Problem("unknown_language", locale, rest.strip())
    if kind == "timezone":
        zone = _zone(rest)
        return intent(text=zone) if zone else Problem("unknown_timezone", locale, rest.strip())
    if kind == "new_game":
        return intent(text=_lookup(rest, _folded_sets()[3]) or "")
    if kind == "watch":  # the game's code (none: the game of the mail replied to)
        spans = lx.token_spans(rest)
        return intent(text=rest[spans[0][0]:spans[0][1]] if spans else "")
    if kind == "take":
        return intent()
    addresses = dict.fromkeys(a.lower().strip(".") for a in _ADDRESS.findall(rest + "\n" + after))
    if kind in ("standby", "standby_remove"):  # none: the list as it is
        return intent(text=" ".join(addresses))
    if kind == "invite" and addresses:
        holder = _seat_of(_ADDRESS.sub(" ", rest), players, seats, locale)
        if holder is not None:
            return holder if isinstance(holder, Problem) else intent(targets=holder, text=" ".join(addresses))
    return intent(text=" ".join(addresses)) if addresses else Problem("no_address", locale)


@lru_cache(maxsize=1)
def _seat_phrases() -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(lx.phrase_keys(p)[1].split()) for p in lx.SEAT_WORDS)


def _seat_of(rest: str, players: Mapping[str, str], seats: Sequence[str],
             locale: str) -> tuple[str, ...] | Problem | None:
    """``invite ADDRESS seat NAME``: the holder of the seat offered (None: no seat named, a plain invitation)."""
    spans = lx.token_spans(rest)
    loose = [lx.loosen(lx.fold(rest[a:b])) for a, b in spans]
    for i in range(len(loose)):
        for phrase in _seat_phrases():
            if tuple(loose[i:i + len(phrase)]) == phrase and i + len(phrase) < len(loose):
                return _targets(rest[spans[i + len(phrase)][0]:], players, seats, locale, one=True)
    return None


_CLAUSES = re.compile(f"({_GROUP_SEPARATORS.pattern})")  # split keeping the separators
_OTHER = {"team": "excalibur", "excalibur": "team"}


def _team_and_holder(kind: str, rest: str, players: Mapping[str, str], seats: Sequence[str],
                     locale: str) -> tuple[tuple[str, ...], str] | Problem | None:
    """A team and Excalibur's holder typed on one line, in either order and any language's words
    ("team A, B, C; excalibur B", "excalibur B; team A, B, C"): (team, holder); None when the line
    names only one of them."""
    pieces = _CLAUSES.split(rest)
    for at in range(2, len(pieces), 2):  # each clause after a separator
        clause = pieces[at]
        spans = lx.token_spans(clause)
        parts = [lx.fold(clause[a:b]) for a, b in spans]
        found = _command(parts, [lx.loosen(p) for p in parts]) if parts else None
        if found is None or found[0] != _OTHER[kind]:
            continue
        before = "".join(pieces[:at - 1])
        after = clause[spans[found[2] - 1][1]:] + "".join(pieces[at:][1:])
        team_rest, holder_rest = (before, after) if kind == "team" else (after, before)
        team = _targets(team_rest, players, seats, locale, one=False)
        if isinstance(team, Problem):
            return team
        holder = _targets(holder_rest, players, seats, locale, one=True)
        return holder if isinstance(holder, Problem) else (team, holder[0])
    return None


def _chosen_marker(markers: list[re.Match], kind: str, unmarked: str, end: int) -> re.Match | None:
    """The phase marker of the line: the last one (the others are ignored); for a message, only one right
    after the command word or at the end of the line (a "#3" inside the message is the player's own text)."""
    if not markers:
        return None
    if kind not in lx.TEXT_KINDS:
        return markers[-1]
    for marker in markers:
        if marker.start() >= end and not lx.token_spans(unmarked[end:marker.start()]):
            return marker
    last = markers[-1]
    return last if last.start() >= end and not lx.token_spans(unmarked[last.end():]) else None


# -- writing ------------------------------------------------------------------------------

def command_words(locale: str) -> dict[str, str]:
    """kind -> the main word of that command in ``locale`` (for help texts)."""
    return {kind: lx.main_word(locale, kind) for kind in KINDS + RECORD_KINDS + TABLE_KINDS}


def link_body(locale: str, kind: str, names: Sequence[str] = (), phase_id: int | None = None) -> str:
    """The body of a mailto: link (and the typed example) that ``parse`` reads back as that command.

    ``names``: display names or seat numbers of the targets; for ``language``, ``timezone``,
    ``new_game`` (a preset: classic, online, forum), ``invite`` and ``say``/``last_word``, the argument."""
    word = lx.main_word(locale, kind)
    marker = f"#{phase_id}" if phase_id is not None else ""
    if kind in lx.TEXT_KINDS:
        return " ".join(part for part in (word, marker, *names) if part)
    if kind == "new_game":
        names = [lx.PRESET_WORD[locale].get(n, n) for n in names]
    spaced = ("invite", "language", "timezone", "new_game", "watch", "standby", "standby_remove")
    separator = " " if kind in spaced else glossary(locale)["list_separator"]
    return " ".join(part for part in (word, separator.join(names), marker) if part)


def team_with_holder(locale: str, names: Sequence[str], holder: str, phase_id: int | None = None) -> str:
    """A team and Excalibur's holder as one typed line ("team A, B, C; excalibur B #7"), read back by
    ``parse`` as one proposal."""
    clause = "؛ " if locale == "fa" else "; "
    return link_body(locale, "team", names) + clause + link_body(locale, "excalibur", [holder], phase_id)
