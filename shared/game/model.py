"""Enumerations shared by the whole rules core: roles, teams, phases, options.

Every value is a string enum so it survives JSON unchanged and reads well in
logs, templates and the message protocol.
"""

from __future__ import annotations

from enum import Enum


class Team(str, Enum):
    GOOD = "good"
    EVIL = "evil"


class Role(str, Enum):
    MERLIN = "merlin"
    PERCIVAL = "percival"
    LOYAL_SERVANT = "loyal_servant"
    GOOD_LANCELOT = "good_lancelot"
    ASSASSIN = "assassin"
    MORGANA = "morgana"
    MORDRED = "mordred"
    OBERON = "oberon"
    MINION = "minion"
    EVIL_LANCELOT = "evil_lancelot"

    @property
    def team(self) -> Team:
        """The team the role starts on (a Lancelot may switch later)."""
        return _ROLE_TEAM[self]

    @property
    def is_lancelot(self) -> bool:
        return self is Role.GOOD_LANCELOT or self is Role.EVIL_LANCELOT


_ROLE_TEAM = {
    Role.MERLIN: Team.GOOD,
    Role.PERCIVAL: Team.GOOD,
    Role.LOYAL_SERVANT: Team.GOOD,
    Role.GOOD_LANCELOT: Team.GOOD,
    Role.ASSASSIN: Team.EVIL,
    Role.MORGANA: Team.EVIL,
    Role.MORDRED: Team.EVIL,
    Role.OBERON: Team.EVIL,
    Role.MINION: Team.EVIL,
    Role.EVIL_LANCELOT: Team.EVIL,
}

#: Roles the host may add on their own; the rest come with Merlin, the
#: Assassin, the Lancelot option or fill the remaining seats.
OPTIONAL_ROLES = (Role.PERCIVAL, Role.MORGANA, Role.MORDRED, Role.OBERON)


class Phase(str, Enum):
    LOBBY = "lobby"
    PROPOSAL = "proposal"
    VOTE = "vote"
    QUEST = "quest"
    EXCALIBUR = "excalibur"
    LADY = "lady"
    ASSASSINATION = "assassination"
    LAST_WORD = "last_word"
    ENDED = "ended"
    CANCELLED = "cancelled"


class Card(str, Enum):
    SUCCESS = "success"
    FAIL = "fail"

    @property
    def flipped(self) -> "Card":
        return Card.FAIL if self is Card.SUCCESS else Card.SUCCESS


class Knowledge(str, Enum):
    """What a player learns about another player in the night."""

    EVIL = "evil"  # an evil player, role not told
    MERLIN_OR_MORGANA = "merlin_or_morgana"  # Percival's two candidates
    EVIL_LANCELOT = "evil_lancelot"  # evil players know the evil Lancelot
    OTHER_LANCELOT = "other_lancelot"  # Lancelot variant 3: the Lancelots know each other


class Preset(str, Enum):
    CLASSIC = "classic"
    ONLINE = "online"
    FORUM = "forum"


class Hammer(str, Enum):
    """What a fifth proposal on one quest means (docs/rules.md section 3)."""

    CLASSIC = "classic"  # a fifth consecutive rejection makes evil win
    ONLINE = "online"  # the fifth proposal is not voted on: straight to the quest
    FORUM = "forum"  # as classic, but a proposal missed by its deadline counts as neither


class Conference(str, Enum):
    PRIVATE = "private"
    PUBLIC = "public"


class LadyTiming(str, Enum):
    AFTER_QUEST = "after_quest"  # right after quests 2, 3 and 4
    BEFORE_NEXT_PROPOSAL = "before_next_proposal"  # forum: start of the next quest, after any Lancelot draw


class Lancelot(str, Enum):
    NONE = "none"
    V1 = "1"
    V2 = "2"
    V3 = "3"


class LancelotDeck(str, Enum):
    """Variant 1's loyalty deck: forum (3 no change, 2 switch) or boxed (5, 2)."""

    FORUM = "forum"
    BOXED = "boxed"


class MissedVote(str, Enum):
    REJECT = "reject"  # a silent voter counts as a rejection
    NOT_COUNTED = "not_counted"  # forum: approval is a majority of the votes cast


class MissedRule(str, Enum):
    """What a missed deadline does in the phase that is open (docs/rules.md section 7)."""

    NONE = "none"
    PROPOSAL_COUNTS_AS_REJECTION = "proposal_counts_as_rejection"
    PROPOSAL_CANCELLED = "proposal_cancelled"
    VOTE_COUNTS_AS_REJECT = "vote_counts_as_reject"
    VOTE_NOT_COUNTED = "vote_not_counted"
    CARD_COUNTS_AS_SUCCESS = "card_counts_as_success"
    CARD_COUNTS_AS_SUCCESS_LANCELOT_FAILS = "card_counts_as_success_lancelot_fails"  # variant 2: an evil Lancelot must fail
    EXCALIBUR_NOT_USED = "excalibur_not_used"
    LADY_NOT_USED = "lady_not_used"
    SHOT_FORFEITED = "shot_forfeited"
    ACCUSED_IS_SHOT = "accused_is_shot"
    LAST_WORD_SKIPPED = "last_word_skipped"


class WinCause(str, Enum):
    THREE_FAILED_QUESTS = "three_failed_quests"
    HAMMER = "hammer"  # five rejected proposals on one quest
    MERLIN_ASSASSINATED = "merlin_assassinated"
    ASSASSIN_MISSED = "assassin_missed"  # three successes and the shot missed Merlin
    SHOT_FORFEITED = "shot_forfeited"  # three successes and no shot before the deadline


class CommandKind(str, Enum):
    CREATE_GAME = "create_game"
    JOIN = "join"
    LEAVE = "leave"
    CHANGE_OPTIONS = "change_options"
    START_GAME = "start_game"
    CANCEL_GAME = "cancel_game"
    PROPOSE_TEAM = "propose_team"
    CAST_VOTE = "cast_vote"
    PLAY_CARD = "play_card"
    USE_EXCALIBUR = "use_excalibur"
    USE_LADY = "use_lady"
    CONFER = "confer"
    HAND_SHOT = "hand_shot"
    ACCUSE = "accuse"
    SPEAK_LAST_WORD = "speak_last_word"
    ASSASSINATE = "assassinate"
    PHASE_TIMED_OUT = "phase_timed_out"
    # the people around the table (any phase once created: each handler says when)
    OPEN_SEAT = "open_seat"
    TAKE_SEAT = "take_seat"
    PAUSE_GAME = "pause_game"
    RESUME_GAME = "resume_game"
    VOID_GAME = "void_game"
    ANNOUNCE_ABSENCE = "announce_absence"
    PASS_HOST = "pass_host"
    REMOVE_PLAYER = "remove_player"
    WATCH = "watch"
    UNWATCH = "unwatch"


#: The kinds a game takes in any phase until it is over (the handler checks the rest): the table's own
#: business, not a move of the game. A paused game still takes them.
TABLE_KINDS = frozenset({
    CommandKind.OPEN_SEAT, CommandKind.TAKE_SEAT, CommandKind.PAUSE_GAME, CommandKind.RESUME_GAME,
    CommandKind.VOID_GAME, CommandKind.ANNOUNCE_ABSENCE, CommandKind.PASS_HOST, CommandKind.REMOVE_PLAYER,
    CommandKind.WATCH, CommandKind.UNWATCH,
})


class SeatReason(str, Enum):
    """Why a seat is open for a substitute."""

    ABSENT = "absent"  # its player missed ``seat_opens_after`` deadlines in a row
    HOST = "host"  # the host opened it
    LEFT = "left"  # its player handed it over (until someone takes it, the missed-deadline rule plays it)


class HostChange(str, Enum):
    PASSED = "passed"  # the host handed the duties to another player
    LEFT = "left"  # the host handed their seat over: the next seated player hosts
    REPLACED = "replaced"  # a substitute took the host's seat: the next seated player hosts
    ABSENT = "absent"  # the host's seat opened after missed deadlines: the next seated player hosts
