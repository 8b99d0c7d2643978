"""A mail read as a player meant it, turned into a command on the bus.

Nothing acts unless the mail is a person's (no auto-reply, bounce or mail of ours), seen for the
first time, not reported as forged by the receiving server, and, for a game, carries a token
minted for that game and for the very address it comes from. A command's id is derived from
the mail's Message-ID, so the same mail read twice (a restart between reading and marking it)
is one command: the engine drops the second."""

from __future__ import annotations

import hashlib
import logging
import re

from avalon.shared.game import Phase
from avalon.shared.protocol import CommandEnvelope
from avalon.shared.throttle import Throttle, Verdict

from .compose import phase_of_message_id
from avalon.shared.delivery.channel import Game
from avalon.shared.delivery.table import Seats, Table

from .notes import MailNotes, Pending, open_games_of
from .inbound_table import ADDRESS, PREFIX, TableMail, key_id
from .reading import IncomingMail, read_mail
from .wording import Intent, Problem, parse

log = logging.getLogger(__name__)
RE_PREFIX = re.compile(r"^(\s*(re|aw|sv|fw|fwd|tr|antw|réf|ответ|пер|رد|trả lời)\s*(\[\d+\])?\s*:\s*)+", re.I)
CODE_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"

#: intent kind -> the engine command it is (those needing more are handled below)
SIMPLE = {"join": "join", "leave": "leave", "start": "start_game", "cancel": "cancel_game", "status": "show_board",
          "role": "show_role"}
#: the record of finished games: intent kind -> the engine command (answered to the asker alone, by mail)
RECORDS = {"stats": "show_stats", "top": "show_leaderboard", "history": "show_history", "hide_stats": "hide_stats",
           "show_stats": "hide_stats", "forget_me": "forget_me"}
RECORDS_GAME = "records"
#: what a mail may ask of a game that answers without the player's open choices (all else shows or uses them)
ASIDE = frozenset({"status", "role", "help", "rules"})
#: the people around the table: intent kind -> the engine command (those naming a player are handled below)
TABLE = {"pause": "pause_game", "resume": "resume_game", "void": "void_game", "away": "announce_absence",
         "watch": "watch", "unwatch": "unwatch"}


class Inbound(TableMail):
    def __init__(self, gw, throttle: Throttle | None = None) -> None:
        self.gw = gw
        #: each sender address's flood bucket (``shared.throttle``); none given: off
        self.throttle = throttle if throttle is not None else Throttle(0, 0)

    async def on_mail(self, uid: int, raw: bytes) -> None:
        """Handle one mail; returns once whatever it asked for is on the bus (then it is marked)."""
        gw = self.gw
        mail = read_mail(raw, gw.identity.address)
        key = mail.message_id or "sha256:" + hashlib.sha256(raw).hexdigest()
        if mail.kind == "own" or mail.kind == "auto_reply":
            log.info("mail %s (%s) ignored: %s", uid, key, mail.kind)
            return
        if await gw.store.seen(key):
            log.info("mail %s (%s) was read before: nothing done again", uid, key)
            return
        if mail.kind == "bounce":
            await self.bounced(mail)
            await gw.store.remember(key, mail.sender, "bounce")
            return
        if mail.sender is None or not ADDRESS.fullmatch(mail.sender):
            log.info("mail %s ignored: no usable sender", uid)
            return
        # a mail failing DMARC, SPF or DKIM is refused by act() without a word: it spends no bucket
        verdict = None if mail.auth_failure else self.throttle.check(("email", mail.sender))
        if verdict is not None and not verdict.allowed:
            outcome = await self.throttled(mail, verdict)
        else:
            # remembered only once acted on: a crash before that reads the mail again, and the
            # commands' ids (from the Message-ID) make the engine drop what it already has
            outcome = await self.act(mail, key)
        await gw.store.remember(key, mail.sender, outcome)
        log.info("mail %s from %s: %s", uid, mail.sender, outcome)

    async def throttled(self, mail: IncomingMail, verdict: Verdict) -> str:
        """Too many mails from one address: this one is not acted on (but remembered, so it is not
        read again). The sender is told once per refusal window, and at most once a day whatever
        the windows (the day is kept in the database, across restarts): a flood, perhaps with a
        forged sender, never makes the narrator flood anyone back."""
        gw = self.gw
        if verdict.first:
            log.info("%s is sending too many mails: throttled", mail.sender)
            if await gw.store.may_answer_stranger(mail.sender):
                language = mail.language or getattr(self.read(mail, None), "language", None)
                await gw.say(mail.sender, None, "too_many_mails", mail=mail, language=language,
                             params={"wait": max(60, verdict.wait_seconds)})
                return "throttled: told to wait"
        return "throttled: ignored"

    # -- who is writing, about which game ------------------------------------------------

    async def act(self, mail: IncomingMail, key: str) -> str:
        gw = self.gw
        if mail.auth_failure:
            # a forged From: acting would impersonate a player, answering would write to the victim
            return f"refused: {mail.auth_failure}"
        player = PREFIX + mail.sender
        known = await gw.store.contact(mail.sender)
        if known is None or not known.failing:
            return (await self.handle(mail, key, player, False))[0]
        # mail to this address bounced, and its owner writes again: what we sent them meanwhile may be lost
        outcome, answered = await self.handle(mail, key, player, True)
        await self.comeback(key, player, answered)
        await gw.store.mark_working(mail.sender)  # last: a crash before it reads this mail again and redoes all
        return outcome + " (back)"

    async def handle(self, mail: IncomingMail, key: str, player: str, back: bool) -> tuple[str, str | None]:
        """What the mail asks, done or refused; and the game whose open choices the answer already
        gives the player or the mail uses (a move, a refusal listing what is still open), if any."""
        gw = self.gw
        game = None  # known from a token made for this sender: the only way to "take" a seat
        if mail.tokens:
            for token in mail.tokens:
                found = gw.tokens.check(token, mail.sender)
                if found is not None:
                    game = gw.games.get(found)
                    break
            if game is None:
                await gw.say(mail.sender, None, "not_your_token", mail=mail)
                return "refused: not this sender's token", None
        by_token = game is not None
        parsed = self.read(mail, game, player)
        if isinstance(parsed, Intent) and parsed.kind == "new_game":
            return await self.new_game(mail, key, player, parsed), None
        if isinstance(parsed, Intent) and parsed.kind in RECORDS:
            return await self.records(mail, key, player, parsed), None
        if isinstance(parsed, Intent) and parsed.kind in ("standby", "standby_remove"):
            return await self.standby(mail, player, parsed), None
        if isinstance(parsed, Intent) and parsed.kind == "watch" and (parsed.text or game is None):
            return await self.watch(mail, key, player, parsed), None
        if isinstance(parsed, Intent) and parsed.kind == "take" and not by_token:
            # a seat is taken only by a reply to the mail that offered it (its token is the address's)
            if await gw.store.may_answer_stranger(mail.sender):
                await gw.say(mail.sender, None, "no_seat_offered", mail=mail, language=parsed.language)
            return "refused: take without a token", None
        if game is None:
            candidates = open_games_of(gw.games.values(), player)
            if len(candidates) == 1:
                game = candidates[0]
                parsed = self.read(mail, game)
            elif isinstance(parsed, Intent) and parsed.kind in ("help", "rules", "language", "timezone"):
                return await self.personal(mail, key, player, None, parsed), None
            elif candidates:
                await gw.say(mail.sender, None, "no_game", mail=mail)
                return "refused: which game?", None
            else:
                if await gw.store.may_answer_stranger(mail.sender):
                    await gw.say(mail.sender, None, "unknown_sender", mail=mail, language=mail.language)
                    return "stranger answered", None
                return "stranger ignored (answered today)", None
        game_id = game.table.game_id
        if isinstance(parsed, Problem):
            shown = game_id if game.table.offer(player) is not None else None  # the refusal lists it
            if back and parsed.reason == "unknown_command" and shown:
                return "no command: what is open sent again", None  # "I'm back": no refusal, the choices
            await gw.problem(game, player, parsed, mail)
            return f"problem: {parsed.reason}", shown
        return await self.command(mail, key, player, game, parsed), None if parsed.kind in ASIDE else game_id

    def read(self, mail: IncomingMail, game: Game | None, player: str | None = None) -> Intent | Problem:
        """The command in the mail's own words, else in its subject (``new game`` is written there). Outside
        a game, names (``stats Anna``) are those of everyone at the tables ``player`` sits at."""
        names = self.names_and_seats(game) if game is not None or player is None else self.tablemates(player)
        parsed = parse(mail.text, *names)
        if isinstance(parsed, Problem) and mail.subject:
            subject = RE_PREFIX.sub("", mail.subject).strip()
            from_subject = parse(subject, *names) if subject else parsed
            if isinstance(from_subject, Intent) and (parsed.reason == "unknown_command" or from_subject.kind == "new_game"):
                return from_subject
        return parsed

    def tablemates(self, player: str):
        """Everyone at the tables ``player`` sits at or sat at (finished ones the gateway still keeps), by name."""
        return self._named(dict.fromkeys(p for g in self.gw.games.values() if player in g.table.seats.players
                                         for p in g.table.seats.players)), ()

    def names_and_seats(self, game: Game | None):
        if game is None:
            return {}, ()
        players = game.table.seats.players
        return self._named(players), tuple(players)

    def _named(self, players) -> dict[str, str]:
        """Each player by the name they go by (their address's local part, their id's, when they gave none)."""
        names = self.gw.roster.names()
        return {p: names.get(p) or p.split(":", 1)[1] for p in players}

    # -- intents -----------------------------------------------------------------------------

    def phase_of(self, mail: IncomingMail, game: Game, intent: Intent) -> int | None:
        if intent.phase_id is not None:
            return intent.phase_id
        for message_id in mail.in_reply_to:
            found = phase_of_message_id(message_id, self.gw.identity)
            if found is not None and found[0] == game.table.game_id and found[1]:
                return found[1]
        return game.table.turn.phase_id or None

    async def command(self, mail: IncomingMail, key: str, player: str, game: Game, intent: Intent) -> str:
        gw = self.gw
        kind = intent.kind
        if kind in ("help", "rules", "language", "timezone"):
            return await self.personal(mail, key, player, game, intent)
        if kind == "invite" and intent.targets:
            return await self.offer_seat(mail, key, player, game, intent)
        if kind == "invite":
            return await self.invite(mail, key, player, game.table.game_id, intent.text.split())
        phase_id = self.phase_of(mail, game, intent)
        names = ", ".join(gw.roster.names().get(t, t) for t in intent.targets)
        body: dict | None = None
        what = f"what_{kind}"
        table = game.table
        if kind == "leave" and table.turn.phase != Phase.LOBBY and not table.over:
            # during a game, leaving hands the seat over: a substitute may take it (the lobby's leave stays)
            body, what, phase_id = {"type": "open_seat", "player": player}, "what_hand_over", None
        elif kind in TABLE:
            body, phase_id = {"type": TABLE[kind]}, None
        elif kind in ("open_seat", "remove"):
            body, phase_id = {"type": "open_seat" if kind == "open_seat" else "remove_player",
                              "player": intent.targets[0]}, None
        elif kind == "pass_host":
            body, phase_id = {"type": "pass_host", "to": intent.targets[0]}, None
        elif kind == "take":
            holder = self.offered(game, mail.sender, intent)
            if holder is None:
                await gw.say(mail.sender, game, "no_seat_offered", mail=mail, language=intent.language)
                return "refused: no seat offered"
            body, phase_id = {"type": "take_seat", "player": holder}, None
        elif kind in SIMPLE:
            body = {"type": SIMPLE[kind]}
            phase_id = None if kind in ("join", "leave", "start", "cancel", "status", "role") else phase_id
        elif kind in ("approve", "reject"):
            body = {"type": "cast_vote", "approve": kind == "approve"}
        elif kind in ("success", "fail"):
            body = {"type": "play_card", "card": kind}
        elif kind == "team":
            if intent.holder is not None:  # "team A, B, C; excalibur B": the holder with the team
                game.table.draft.holder = intent.holder
            body = self.team(game, player, list(intent.targets))
            if body is None:
                await gw.save_game(game)
                await gw.tell_draft(game, player)
                return "team drafted"
        elif kind == "pick":
            turn, draft = game.table.turn, game.table.draft
            # a mail read again after a crash, its pick kept with the game already, toggles nothing
            if phase_id == turn.phase_id and turn.phase == "proposal" and key not in draft.presses:
                draft.toggle(intent.targets[0], turn.team_size, press=key)
                body = self.team(game, player, list(draft.picks)) if len(draft.picks) == turn.team_size else None
            if body is None:
                await gw.save_game(game)
                await gw.tell_draft(game, player)
                return "picked"
        elif kind == "excalibur":
            turn, draft = game.table.turn, game.table.draft
            if turn.phase == "proposal":
                draft.holder = intent.targets[0]
                body = self.team(game, player, list(draft.picks)) if len(draft.picks) == turn.team_size else None
                if body is None:
                    await gw.save_game(game)
                    await gw.tell_draft(game, player)
                    return "excalibur drafted"
            else:
                body = {"type": "use_excalibur", "target": intent.targets[0]}
        elif kind == "sheathe":
            body = {"type": "use_excalibur", "target": None}
        elif kind == "lady":
            body = {"type": "use_lady", "target": intent.targets[0]}
        elif kind == "shoot":
            body = {"type": "assassinate", "target": intent.targets[0]}
        elif kind == "accuse":
            body = {"type": "accuse", "target": intent.targets[0]}
        elif kind == "hand":
            body = {"type": "hand_shot", "to": intent.targets[0]}
        elif kind == "say":
            body = {"type": "confer", "text": intent.text}
        elif kind == "last_word":
            body = {"type": "speak_last_word", "text": intent.text}
        if body is None:
            await gw.problem(game, player, Problem("unknown_command", intent.language), mail)
            return "problem: nothing to do"
        await gw.ensure_profile(player, mail, intent.language, key)
        command_id = f"{key_id(key)}:0"
        if kind not in ("status", "role"):  # answered to the player alone: no receipt
            game.own.pending[command_id] = Pending(player, what, names=names, text=intent.text[:80])
        await gw.save_game(game)
        await gw.send(CommandEnvelope(message_id=command_id, game_id=game.table.game_id, actor=player, channel="email",
                                      phase_id=phase_id, command=body))
        return f"sent {body['type']}"

    def team(self, game: Game, player: str, team: list[str]) -> dict | None:
        """The proposal, or None while Excalibur's holder is still to be chosen (kept as a draft). Its
        size is the engine's to check: a typed team of the wrong size is refused with the reason."""
        draft = game.table.draft
        needs_holder = draft.needs_holder(game.table.offer(player))
        draft.picks = team
        if needs_holder and (draft.holder is None or draft.holder not in team or draft.holder == player):
            return None
        return {"type": "propose_team", "team": team, "excalibur": draft.holder if needs_holder else None}

    async def personal(self, mail: IncomingMail, key: str, player: str, game: Game | None, intent: Intent) -> str:
        gw = self.gw
        if intent.kind in ("help", "rules"):
            await gw.say(mail.sender, game, intent.kind, mail=mail, language=intent.language)
            return intent.kind
        await gw.ensure_profile(player, mail, None, key)
        profile = {"type": "update_profile", "email": mail.sender}
        if intent.kind == "language":
            profile["language"] = intent.text
        else:
            profile["time_zone"] = intent.text
        await gw.send(CommandEnvelope(message_id=f"{key_id(key)}:p", game_id=f"profile:{player}", actor=player,
                                      channel="email", command=profile))
        await gw.say(mail.sender, game, "language_set" if intent.kind == "language" else "timezone_set", mail=mail,
                     language=intent.text if intent.kind == "language" else None,
                     params={"language": intent.text, "zone": intent.text})
        return f"profile {intent.kind}"

    async def records(self, mail: IncomingMail, key: str, player: str, intent: Intent) -> str:
        """Stats, the leaderboard and history of the games the asker hosted (a mail game's table is its
        host's: ``create_game`` without ``table``), hiding one's stats, being forgotten: asked under
        ``records`` (every game id is the mail channel's; one a reply token can carry), answered to the
        asker alone, by mail."""
        gw = self.gw
        body: dict = {"type": RECORDS[intent.kind]}
        if intent.kind == "stats" and intent.targets:
            body["player"] = intent.targets[0]
        elif intent.kind == "top":
            body.update(host=player, min_games=1)
        elif intent.kind == "history":
            body["table"] = player
        elif intent.kind in ("hide_stats", "show_stats"):
            body["hidden"] = intent.kind == "hide_stats"
        await gw.ensure_profile(player, mail, intent.language, key)
        await gw.send(CommandEnvelope(message_id=f"{key_id(key)}:r", game_id=RECORDS_GAME, actor=player,
                                      channel="email", command=body))
        return f"sent {body['type']}"

    async def new_game(self, mail: IncomingMail, key: str, player: str, intent: Intent) -> str:
        from avalon.shared.game import Options

        gw = self.gw
        # from the mail itself: the same mail read again (a crash before it was remembered) is the same game
        digest = hashlib.sha256(("game:" + key).encode("utf-8", "replace")).digest()
        code = "mail-" + "".join(CODE_ALPHABET[b % len(CODE_ALPHABET)] for b in digest[:7])
        words = mail.text.lower()
        flags = {name: True for name in ("lady", "excalibur") if name in words}
        options = Options.preset_defaults(intent.text or "classic", **flags)
        await gw.ensure_profile(player, mail, intent.language, key)
        gw.games[code] = Game(Table(code, seats=Seats(host=player)), MailNotes(title=code))
        await gw.send(CommandEnvelope(message_id=f"{key_id(key)}:0", game_id=code, actor=player, channel="email",
                                      command={"type": "create_game", "options": options}))
        invited = [a for a in ADDRESS.findall(mail.text) if a.lower() not in (mail.sender, gw.identity.address)]
        if invited:
            await self.invite(mail, key, player, code, invited)
        return f"created {code}"

    async def invite(self, mail: IncomingMail, key: str, player: str, game_id: str, addresses: list[str]) -> str:
        gw = self.gw
        good = [a.lower() for a in addresses if ADDRESS.fullmatch(a)]
        if not good:
            await gw.problem(gw.games.get(game_id), player, Problem("no_address", None), mail)
            return "problem: no address"
        for n, address in enumerate(dict.fromkeys(good), start=1):
            await gw.send(CommandEnvelope(message_id=f"{key_id(key)}:i{n}", game_id=game_id, actor=player,
                                          channel="email", command={"type": "invite", "player": PREFIX + address}))
        return f"invited {len(good)}"

    async def comeback(self, key: str, player: str, answered: str | None) -> None:
        """Mail to ``player`` bounced, and they wrote again: the host told, where they were told of
        the bounce, and what is open for the player now in each game under way where they sit sent
        again, by the engine, to them alone (but in ``answered``, where this mail's answer did)."""
        gw = self.gw
        await gw.address_working(player)
        for game in list(gw.games.values()):
            table = game.table
            if table.over or not table.seated(player) or table.turn.phase == Phase.LOBBY or table.game_id == answered:
                continue
            await gw.send(CommandEnvelope(message_id=f"{key_id(key)}:b:{table.game_id}"[:200], game_id=table.game_id,
                                          actor=player, channel="email", command={"type": "show_choices"}))

    async def bounced(self, mail: IncomingMail) -> None:
        """A bounce is believed only for an address a mail of ours it quotes was sent to (its reply
        token, made for that address, is in the bounce): anyone can send a null-sender mail naming
        a player's address, nobody but the player and us has their token."""
        gw = self.gw
        for address in mail.bounced:
            if not any(gw.tokens.check(token, address) for token in mail.quoted_tokens):
                log.warning("a bounce for %s quotes no mail of ours to that address: not believed", address)
                continue
            if await gw.store.mark_failing(address, mail.text[:500]):
                await gw.address_failing(PREFIX + address)
