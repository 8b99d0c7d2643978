"""The pictures' words in the reader's language: the narration's catalogs and glossary, as plain text.

New labels are the ``pictures`` book of the catalogs (shared/narration/templates/pictures.html); the
others are the sentences the text board and the end of a game already say, so a picture and its
caption read alike. Names inside right-to-left text are isolated (FSI...PDI), as in the narration.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache

from babel import Locale

from avalon.shared.narration.render import FSI, PDI, RTL, glossary, keyed_text, pick_locale, sentence

_TAGS = re.compile(r"<[^>]+>")
_EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F]")  # not in the font: the text says it


def plain(markup) -> str:
    """A rendered sentence as the text a picture draws: no markup, no emoji, entities decoded."""
    return _EMOJI.sub("", html.unescape(_TAGS.sub("", str(markup)))).strip()


class Words:
    """Every label of one language (cached: the same object for every picture in that language)."""

    def __init__(self, locale: str):
        self.locale = locale
        self.rtl = locale in RTL
        self.g = glossary(locale)
        self._plural_form = Locale.parse(locale).plural_form

    def name(self, shown: str) -> str:
        return f"{FSI}{shown}{PDI}" if self.rtl else shown

    def key(self, key: str, **params) -> str:
        return plain(keyed_text(self.locale, "pictures", key, **params))

    def say(self, source: str, **params) -> str:
        """One sentence of the narration's templates (its English text is the catalogs' msgid)."""
        return plain(sentence(self.locale, source).render(names={}, **params))

    def plural(self, forms: dict[str, str], n: int) -> str:
        return forms.get(self._plural_form(n)) or forms["other"]

    @lru_cache(maxsize=64)
    def quest_number(self, number: int) -> str:
        return self.key("quest_number", number=number)

    @lru_cache(maxsize=16)
    def two_fails(self, fails: int) -> str:
        return self.say('{{ _("(%(fails)s %(fail_cards)s)", fails=n, fail_cards=g.fail_cards|plural(n)) }}', n=fails)

    def fails(self, count: int) -> str:
        return f"{count} {self.plural(self.g['fail_cards'], count)}"

    def vote_track(self, count: int) -> str:
        return self.say('{{ _("%(Vote_track)s: %(count)s/5", vote_track=g.vote_track, count=n) }}', n=count)

    def leader(self, shown: str) -> str:
        return self.say('{{ _("%(Leader)s: %(player)s", leader=g.leader, player=p) }}', p=self.name(shown))

    def lady(self, shown: str) -> str:
        return self.say('{{ _("%(Lady)s: %(player)s", lady=g.lady, player=p) }}', p=self.name(shown))

    def excalibur(self, shown: str) -> str:
        return self.key("excalibur_holder", player=self.name(shown))

    def phase(self, phase: str) -> str:
        return self.g["phases"][phase]

    def winner(self, team: str, cause: str) -> str:
        return self.say('{{ _("🏁 <b>%(Winner)s wins</b>: %(cause)s.", winner=g.team_short[t], cause=c|cause) }}',
                        t=team, c=cause)

    def role_line(self, shown: str, role: str, ended: str | None) -> str:
        """``Name: Role`` (``(ended good)`` for a Lancelot who switched), the end of a game's sentence."""
        if ended is None:
            text = self.say('{{ _("• %(player)s: %(role)s", player=p, role=r|role) }}', p=self.name(shown), r=role)
        else:
            text = self.say('{{ _("• %(player)s: %(role)s (ended %(team)s)", player=p, role=r|role, '
                            'team=g.team_short[t]) }}', p=self.name(shown), r=role, t=ended)
        return text.lstrip("• ").strip()


def words(locale: str) -> Words:
    """The words of ``locale``; a language the narrator does not speak reads as English, as the
    narration's fallback does."""
    return _words(pick_locale((locale,)))


@lru_cache(maxsize=None)
def _words(locale: str) -> Words:
    return Words(locale)
