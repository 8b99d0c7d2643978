"""The words a player may type in a mail, in the six languages, and how text is folded to compare them.

Each locale lists, per command kind, its phrases; the first one is the main word (the one in help texts
and in our ``mailto:`` links). A phrase starting with ``=`` only matches when typed with its accents
(Vietnamese ``mời``, "invite", would otherwise read as French ``moi``; ``hủy``, "cancel", as the name Huy). The words come from each
language's rule text (``shared/narration/locales/<locale>/glossary.toml``) where it has them.

Collisions, decided: a phrase read the same in two languages must mean the same command (tested);
argument-less commands (votes, cards, join, leave...) must stand alone on their line (politeness words
allowed), so "No idea who Merlin is" or "Leave it to me" is no command at all.
"""

from __future__ import annotations

import unicodedata

from shared.languages import LOCALES

WORDS: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {
        "join": ("join", "join game", "i'm in", "im in", "count me in"),
        "leave": ("leave", "leave game", "quit"),
        "start": ("start", "start game", "begin"),
        "cancel": ("cancel", "cancel game"),
        "approve": ("approve", "yes", "i approve", "accept"),
        "reject": ("reject", "no", "i reject"),
        "success": ("success", "succeed"),
        "fail": ("fail", "failure", "sabotage"),
        "team": ("team", "propose"),
        "pick": ("pick", "choose", "select", "add"),
        "lady": ("lady", "lady of the lake", "examine", "inspect"),
        "excalibur": ("excalibur", "use excalibur on", "flip"),
        "sheathe": ("sheathe", "keep sheathed", "keep excalibur sheathed", "sheath", "no excalibur"),
        "shoot": ("shoot", "assassinate", "kill"),
        "accuse": ("accuse", "i accuse"),
        "hand": ("hand over to", "hand over", "hand to", "hand", "hand the shot to", "delegate to", "delegate"),
        "say": ("say",),
        "last_word": ("last word", "last words"),
        "status": ("status", "board", "state"),
        "rules": ("rules",),
        "help": ("help", "commands"),
        "language": ("language", "lang"),
        "timezone": ("time zone", "timezone", "tz"),
        "new_game": ("new game",),
        "invite": ("invite",),
    },
    "fa": {
        "join": ("پیوستن", "می‌پیوندم", "هستم", "من هستم", "عضویت"),
        "leave": ("خروج", "ترک بازی", "انصراف"),
        "start": ("شروع", "شروع بازی", "آغاز"),
        "cancel": ("لغو", "لغو بازی"),
        "approve": ("موافق", "موافقم", "بله", "آری", "آره"),
        "reject": ("مخالف", "مخالفم", "نه", "خیر"),
        "success": ("موفقیت",),
        "fail": ("شکست",),
        "team": ("تیم",),
        "pick": ("انتخاب",),
        "lady": ("بانو", "بانوی دریاچه"),
        "excalibur": ("اکسکالیبر",),
        "sheathe": ("در غلاف", "غلاف", "اکسکالیبر در غلاف", "اکسکالیبر در غلاف بماند", "بدون اکسکالیبر"),
        "shoot": ("ترور", "ترور کن"),
        "accuse": ("متهم", "متهم کن", "اتهام"),
        "hand": ("بسپار به", "بسپار", "سپردن به", "واگذار به", "ترور را بسپار به"),
        "say": ("بگو", "پیام"),
        "last_word": ("آخرین حرف", "حرف آخر"),
        "status": ("وضعیت",),
        "rules": ("قوانین",),
        "help": ("راهنما", "کمک"),
        "language": ("زبان",),
        "timezone": ("منطقه زمانی", "منطقهٔ زمانی"),
        "new_game": ("بازی جدید", "بازی تازه"),
        "invite": ("دعوت",),
    },
    "ru": {
        "join": ("играю", "присоединиться", "вступить", "участвую", "я в игре"),
        "leave": ("выйти", "выхожу", "покинуть"),
        "start": ("начать", "начинаем", "старт"),
        "cancel": ("отменить", "отмена"),
        "approve": ("за", "да", "я за", "одобряю", "одобрить"),
        "reject": ("против", "нет", "я против", "отклоняю", "отклонить"),
        "success": ("успех",),
        "fail": ("провал",),
        "team": ("команда", "состав", "предлагаю"),
        "pick": ("выбрать", "выбираю", "беру"),
        "lady": ("владычица", "владычица озера", "проверить", "проверяю"),
        "excalibur": ("экскалибур",),
        "sheathe": ("в ножнах", "оставить в ножнах", "экскалибур в ножнах", "ножны"),
        "shoot": ("выстрел", "убить", "убиваю", "стреляю"),
        "accuse": ("обвинить", "обвиняю"),
        "hand": ("передать выстрел", "передать", "передаю", "передаю выстрел"),
        "say": ("сказать", "скажи", "говорю"),
        "last_word": ("последнее слово",),
        "status": ("статус", "положение", "состояние"),
        "rules": ("правила",),
        "help": ("помощь", "справка", "команды"),
        "language": ("язык",),
        "timezone": ("часовой пояс", "пояс"),
        "new_game": ("новая игра", "новая партия"),
        "invite": ("пригласить", "пригласи", "приглашаю"),
    },
    "vi": {
        "join": ("tham gia", "tôi tham gia", "=vào"),
        "leave": ("rời phòng", "rời ván", "rời khỏi", "thoát"),
        "start": ("bắt đầu",),
        "cancel": ("hủy ván", "huỷ ván", "=hủy", "=huỷ"),  # a bare "Huy" is a name
        "approve": ("đồng ý", "tôi đồng ý", "có", "tán thành"),
        "reject": ("không đồng ý", "tôi không đồng ý", "không", "phản đối", "từ chối"),
        "success": ("thành công",),
        "fail": ("thất bại",),
        "team": ("đội", "lập đội", "đề xuất"),
        "pick": ("chọn",),
        "lady": ("kiểm tra", "soi", "lady of the lake"),
        "excalibur": ("dùng excalibur", "dùng excalibur với"),
        "sheathe": ("không dùng excalibur", "không dùng"),
        "shoot": ("ám sát",),
        "accuse": ("buộc tội",),
        "hand": ("nhường cho", "nhường", "nhường quyền ám sát cho"),
        "say": ("nói",),
        "last_word": ("trăng trối", "lời trăng trối"),
        "status": ("tình hình", "trạng thái"),
        "rules": ("luật chơi", "luật"),
        "help": ("trợ giúp", "hướng dẫn", "giúp"),
        "language": ("ngôn ngữ",),
        "timezone": ("múi giờ",),
        "new_game": ("ván mới", "chơi mới", "tạo ván"),
        "invite": ("=mời",),
    },
    "nl": {
        "join": ("meedoen", "doe mee", "ik doe mee", "deelnemen"),
        "leave": ("verlaten", "afmelden", "weggaan"),
        "start": ("start", "starten", "beginnen"),
        "cancel": ("annuleren", "afbreken"),
        "approve": ("goedkeuren", "ja", "voor", "akkoord", "ik ben voor"),
        "reject": ("afkeuren", "nee", "tegen", "ik ben tegen"),
        "success": ("succes", "sukces", "sukceskaart", "succeskaart"),
        "fail": ("faal", "faalkaart", "falen"),
        "team": ("team", "voorstel"),
        "pick": ("kies", "kiezen"),
        "lady": ("vrouwe", "vrouwe van het meer", "onderzoek"),
        "excalibur": ("excalibur",),
        "sheathe": ("in de schede", "schede", "excalibur in de schede", "excalibur in de schede laten"),
        "shoot": ("schiet", "schieten", "vermoord"),
        "accuse": ("beschuldig", "beschuldigen"),
        "hand": ("geef het schot aan", "geef schot aan", "schot naar", "draag over aan", "overdragen aan"),
        "say": ("zeg", "zeggen"),
        "last_word": ("laatste woord",),
        "status": ("stand", "status", "bord"),
        "rules": ("regels", "spelregels"),
        "help": ("hulp",),
        "language": ("taal",),
        "timezone": ("tijdzone",),
        "new_game": ("nieuw spel",),
        "invite": ("uitnodigen", "nodig uit"),
    },
    "fr": {
        "join": ("rejoindre", "je rejoins", "participer", "je participe", "je joue"),
        "leave": ("quitter", "je quitte"),
        "start": ("commencer", "démarrer", "lancer"),
        "cancel": ("annuler",),
        "approve": ("pour", "oui", "je suis pour", "approuver", "j'approuve"),
        "reject": ("contre", "non", "je suis contre", "refuser", "je refuse", "rejeter"),
        "success": ("succès", "réussite"),
        "fail": ("échec", "échouer"),
        "team": ("équipe", "proposer", "je propose"),
        "pick": ("choisir", "choisis", "prendre"),
        "lady": ("dame du lac", "dame", "examiner"),
        "excalibur": ("excalibur",),
        "sheathe": ("fourreau", "au fourreau", "laisser au fourreau", "excalibur au fourreau",
                    "laisser excalibur au fourreau"),
        "shoot": ("assassiner", "tuer", "tirer"),
        "accuse": ("accuser", "j'accuse"),
        "hand": ("confier à", "confier", "confier l'assassinat à", "passer la main à"),
        "say": ("dire", "dis"),
        "last_word": ("dernier mot",),
        "status": ("état", "statut", "plateau"),
        "rules": ("règles",),
        "help": ("aide",),
        "language": ("langue",),
        "timezone": ("fuseau horaire", "fuseau"),
        "new_game": ("nouvelle partie",),
        "invite": ("inviter", "invite"),
    },
}

# Commands that take no argument: the rest of their line may only hold politeness words.
BARE = frozenset({"join", "leave", "start", "cancel", "approve", "reject", "success", "fail", "sheathe",
                  "status", "rules", "help"})
ONE_TARGET = frozenset({"pick", "lady", "excalibur", "shoot", "accuse", "hand"})
TEXT_KINDS = frozenset({"say", "last_word"})

FILLERS = frozenset(
    "please pls plz thanks thank you thx ok okay "  # en
    "svp stp s'il vous plait merci "  # fr
    "graag alsjeblieft alstublieft aub dank bedankt "  # nl
    "пожалуйста спасибо "  # ru
    "nhe nha a cam on "  # vi (nhé, nha, ạ, cảm ơn)
    "لطفا ممنون مرسی سپاس".split())  # fa

AND_WORDS = frozenset({"and", "и", "en", "et", "va", "و", "را"})  # "را": the Persian object marker

NONE_WORDS = frozenset({"none", "nobody", "no one", "noone", "nothing", "هیچ", "هیچکس", "هیچ کس", "нет",
                        "никому", "никто", "không", "không ai", "không có", "geen", "niemand", "aucun",
                        "personne", "à personne"})

PRESETS: dict[str, tuple[str, ...]] = {
    "classic": ("classic", "کلاسیک", "классика", "классические", "классическая", "классический", "cổ điển",
                "klassiek", "classique"),
    "online": ("online", "آنلاین", "онлайн", "trực tuyến", "en ligne"),
    "forum": ("forum", "انجمن", "форум", "для форума", "diễn đàn"),
}
PRESET_WORD = {  # the word our links write for a preset, per locale
    "en": {"classic": "classic", "online": "online", "forum": "forum"},
    "fa": {"classic": "کلاسیک", "online": "آنلاین", "forum": "انجمن"},
    "ru": {"classic": "классика", "online": "онлайн", "forum": "форум"},
    "vi": {"classic": "cổ điển", "online": "trực tuyến", "forum": "diễn đàn"},
    "nl": {"classic": "klassiek", "online": "online", "forum": "forum"},
    "fr": {"classic": "classique", "online": "en ligne", "forum": "forum"},
}

LANGUAGE_NAMES: dict[str, tuple[str, ...]] = {
    "en": ("en", "eng", "english", "anglais", "engels", "английский", "tiếng anh", "انگلیسی"),
    "fa": ("fa", "farsi", "persian", "فارسی", "پارسی", "persan", "perzisch", "персидский", "фарси",
           "tiếng ba tư", "ba tư"),
    "ru": ("ru", "russian", "русский", "russe", "russisch", "tiếng nga", "روسی"),
    "vi": ("vi", "vietnamese", "tiếng việt", "việt", "vietnamien", "vietnamees", "вьетнамский", "ویتنامی"),
    "nl": ("nl", "dutch", "nederlands", "néerlandais", "hollandais", "нидерландский", "голландский",
           "tiếng hà lan", "هلندی"),
    "fr": ("fr", "french", "français", "frans", "французский", "tiếng pháp", "فرانسوی", "فرانسه"),
}

# -- folding -------------------------------------------------------------------------

_EXACT = str.maketrans({"ي": "ی", "ى": "ی", "ك": "ک", "ۀ": "ه", "ە": "ه", "ة": "ه", "ـ": None,
                        "\u200c": None, "\u200d": None, "’": "'", "‘": "'", "ё": "е", "Ё": "е"})
_LOOSE = str.maketrans({"đ": "d", "ð": "d", "ø": "o", "ł": "l", "æ": "ae", "œ": "oe", "ı": "i"})
_JOINERS = "'’‘-."


def fold(text: str) -> str:
    """Case, compatibility forms, Persian letter variants, ZWNJ and ё folded; accents kept."""
    return unicodedata.normalize("NFKC", text).casefold().translate(_EXACT)


def loosen(folded: str) -> str:
    """``fold``'s result without accents or other combining marks (Vietnamese tones, Arabic harakat)."""
    decomposed = unicodedata.normalize("NFKD", folded.translate(_LOOSE))
    return "".join(c for c in decomposed if not unicodedata.category(c).startswith("M")).translate(_EXACT)


def _is_core(char: str) -> bool:
    return unicodedata.category(char)[0] in "LNM" or char in "_\u200c\u200d"


def token_spans(text: str) -> list[tuple[int, int]]:
    """Words of ``text`` as (start, end): letters, digits and marks, with inner apostrophes, hyphens, dots."""
    spans, start, n = [], None, len(text)
    for i in range(n + 1):
        char = text[i] if i < n else " "
        if start is None:
            if _is_core(char):
                start = i
        elif not (_is_core(char) or char in _JOINERS):
            end = i
            while text[end - 1] in _JOINERS:
                end -= 1
            spans.append((start, end))
            start = None
    return spans


def words(text: str) -> list[str]:
    """The loose-folded words of ``text``."""
    return [loosen(fold(text[a:b])) for a, b in token_spans(text)]


def phrase_keys(phrase: str) -> tuple[str, str, str]:
    """(exact key, loose key, loose key without spaces) of a phrase."""
    parts = [fold(phrase[a:b]) for a, b in token_spans(phrase)]
    loose = [loosen(p) for p in parts]
    return " ".join(parts), " ".join(loose), "".join(loose)


def main_word(locale: str, kind: str) -> str:
    return WORDS[locale][kind][0].lstrip("=")
