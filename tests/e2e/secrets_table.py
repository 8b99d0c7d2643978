"""One random game of the security tests, from the lobby to the end: the host opens it on their
channel and sets its options there, the others join on theirs (Telegram players with the Join
button, mail players by answering the invitation), and then everyone plays random legal moves.

Which moves are legal comes from the rules core (``legal_commands`` on the engine's state, as the
gateways draw their buttons from it); each move is made through the player's own channel
(``secrets_hands``). A council word and a last word carry a random marker, so that each renders as
a line of its own for the leak check."""

from __future__ import annotations

import asyncio
import random

from avalon.services.engine.rules import CommandKind, Team, legal_commands, pending_players
from avalon.shared.game.model import Phase
from avalon.shared.narration.render import LOCALES

from .secrets_hands import TARGETED, MailHands, TelegramHands
from .secrets_spec import GameSpec
from .secrets_stack import NARRATOR

K = CommandKind


class Table:
    def __init__(self, stack, spec: GameSpec) -> None:
        self.stack, self.spec, self.fake = stack, spec, stack.fake
        self.rng = random.Random(spec.seed + 1)
        self.game: str | None = None
        self.seats = {s.player: s for s in spec.seats}
        self.names = {s.player: s.name for s in spec.seats}
        self.users = {s.player: self.fake.user(s.tg_id, s.name, language_code=s.language)
                      for s in spec.seats if s.channel == "telegram"}
        self.group = None if spec.mail_only else self.fake.group(spec.group_id, f"Table {spec.index}",
                                                                 members=list(self.users.values()))
        self.tg = TelegramHands(stack, self.group, self.users, self.names)
        self.mail = MailHands(stack, self.seats, self.names)
        self.plans: dict[tuple, tuple] = {}  # (phase_id, player) -> the move chosen
        self.done: set[tuple] = set()
        self.council_at: dict[int, float] = {}  # phase_id -> when its last council word was sent
        self.moves = 0

    # -- the lobby -------------------------------------------------------------------------------

    async def open(self, state) -> None:
        """Lobby, seats, options and the deal; ``state(game)`` reads the engine's state."""
        spec, host = self.spec, self.spec.host
        mailers = [s for s in spec.seats[1:] if s.channel == "email"]
        if spec.mail_only:
            body = "\n".join([f"new game {spec.preset.value}", " ".join(s.address for s in mailers),
                              " ".join(spec.mail_words)])
            await self.stack.mail_in(host.address, host.name, NARRATOR, "new game", body)
            self.game = await _until(lambda: _hosted(self.stack, host.player), "the mail game's code")
        else:
            for user in self.users.values():
                await user.start_private()
            hoster = self.users[host.player]
            await hoster.send(self.group, f"/newgame {spec.preset.value}")
            lobby = await self.fake.wait_for_message(self.group, timeout=30, where=lambda m: any(
                d.startswith("j:") for d in m.callback_data))
            self.game = lobby.callback_data[0].split(":", 1)[1]
            for seat in spec.seats[1:]:
                if seat.channel == "telegram":
                    await self.users[seat.player].press(lobby, f"j:{self.game}")
            await hoster.send(self.group, "/invite " + " ".join(s.address for s in mailers))
        for seat in mailers:
            await _until(lambda seat=seat: self.mail.reply_any(self.game, seat.player, "join"),
                         f"{seat.name}'s invitation")
        await _until(lambda: _seated(state, self.game, len(spec.seats)), "every player seated", 60)
        if spec.keys:
            await self.settings(state)
        if spec.mail_only:
            await _until(lambda: self.mail.reply_any(self.game, host.player, "start"), "the host's start")
        else:
            await self.users[host.player].send(self.group, "/startgame")
        await _until(lambda: _started(state, self.game), f"the start of {spec.describe()}", 60)

    async def settings(self, state) -> None:
        from avalon.services.engine.rules import Options
        from avalon.services.telegram_gateway.settings_screen import changed

        hoster = self.users[self.spec.host.player]
        telegram = self.stack.telegram
        await _until(lambda: _true(telegram.game(self.game)), "the lobby")
        await _until(lambda: _true(len(telegram.game(self.game).table.seats.players) == len(self.spec.seats)),
                     "the group told of every join")
        await hoster.send(self.group, "/settings")
        board = await self.fake.wait_for_message(self.group, timeout=30, where=lambda m: any(
            d.startswith(f"s:{self.game}:") for d in m.callback_data))
        options = Options.preset_defaults(self.spec.preset)
        for key in self.spec.keys:
            deals = telegram.game(self.game).table.deals  # what the engine says it deals before this press
            await hoster.press(board, f"s:{self.game}:{key}")
            if key == "lang":
                continue  # the group's language: no command, the gateway redraws the board
            options = changed(options, key, deals)

            async def applied(expected=options):  # and the board redrawn with it, before the next press
                s = await state(self.game)
                known = telegram.game(self.game)
                return s is not None and s.options == expected and known is not None \
                    and known.table.options == expected
            await _until(applied, f"the option {key}")
        language = LOCALES[self.spec.keys.count("lang") % len(LOCALES)]
        await _until(lambda: _true(telegram.game(self.game).own.language == language), "the group's language")
        assert (await state(self.game)).options == self.spec.options

    def diagnose(self) -> str:
        """The newest messages of the game's chats and mailboxes, for a game that is stuck."""
        lines = [repr(m) for m in self.fake.messages(self.group)[-3:]] if self.group is not None else []
        for player, seat in self.seats.items():
            if seat.channel == "telegram":
                lines += [f"{seat.name}: {m!r}" for m in self.fake.messages(self.users[player].private_chat)[-2:]]
            else:
                lines += [f"{seat.name}: {m.message_id} {m.subject}" for m in self.stack.mails(seat.address)[-2:]]
        lines += [repr(a) for a in self.fake.callback_answers[-3:]]
        return "\n".join(lines)

    # -- the play --------------------------------------------------------------------------------

    async def step(self, s) -> None:
        """Every move the state waits for that has not been made yet (tried again next time when
        what it needs has not arrived)."""
        for player, move in self.wanted(s):
            key = (s.phase_id, player, move[0])
            if key in self.done:
                continue
            if await self.make(s, player, move):
                self.done.add(key)
                self.moves += 1

    def wanted(self, s) -> list[tuple[str, tuple]]:
        out = []
        waiting = set(pending_players(s))
        council = []
        if s.phase is Phase.ASSASSINATION:  # the evil players have a word first, each once
            council = [p for i, p in enumerate(s.players) if s.team_of(i) is Team.EVIL]
        for player in s.players:
            if player in council and (s.phase_id, player, "confer") not in self.done:
                out.append((player, ("confer", f"plan {self.marker()}")))
        if any(p for p, _ in out) or self.council_at.get(s.phase_id, 0) > _now() - 1.5:
            waiting -= set(council)  # the shot waits until the council has had its say
        for player in s.players:
            if player not in waiting:
                continue
            key = (s.phase_id, player)
            if key not in self.plans:
                self.plans[key] = self.choose(s, player)
            out.append((player, self.plans[key]))
        return out

    def marker(self) -> str:
        return "".join(self.rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(10))

    def choose(self, s, player: str) -> tuple:
        rng = self.rng
        legal = [c for c in legal_commands(s, player) if c.kind not in (K.CANCEL_GAME, K.CONFER)]
        c = rng.choice(legal)
        kind = c.kind.value
        if c.kind is K.PROPOSE_TEAM:
            team = rng.sample(list(c.targets), c.count)
            others = [p for p in team if p != player]
            return kind, team, rng.choice(others) if c.excalibur and others else None
        if c.kind is K.CAST_VOTE:
            return kind, rng.random() < 0.8
        if c.kind is K.PLAY_CARD:  # fail one time in four: more games reach the assassination and its council
            cards = [card.value for card in c.cards]
            return kind, "fail" if "fail" in cards and (cards == ["fail"] or rng.random() < 0.25) else "success"
        if c.kind is K.SPEAK_LAST_WORD:
            return kind, f"farewell {self.marker()}"
        if c.optional and rng.random() < 0.3:
            return kind, None
        return kind, rng.choice(c.targets)

    async def make(self, s, player: str, move: tuple) -> bool:
        kind, game, phase, seats = move[0], self.game, s.phase_id, tuple(s.players)
        on_mail = self.seats[player].channel == "email"
        if kind in ("confer", "speak_last_word"):
            text = move[1]
            if on_mail:
                sent = await self.mail.type(game, phase, player, "say" if kind == "confer" else "last_word", [text])
            else:
                sent = await self.tg.say(game, phase, player, kind, text)
            if sent and kind == "confer":
                self.council_at[phase] = _now()
            return sent
        if kind == "propose_team":
            _, team, sword = move
            if not on_mail:
                return await self.tg.propose(game, phase, player, seats, team, sword)
            if sword is not None and (phase, player, "sword") not in self.done:
                if not await self.mail.click(game, phase, player, "excalibur", (sword,), seats):
                    return False
                self.done.add((phase, player, "sword"))
            return await self.mail.type(game, phase, player, "team", [self.names[p] for p in team])
        if kind == "cast_vote":
            if on_mail:
                return await self.mail.click(game, phase, player, "approve" if move[1] else "reject", (), seats)
            return await self.tg.vote(game, phase, player, move[1])
        if kind == "play_card":
            if on_mail:
                return await self.mail.click(game, phase, player, move[1], (), seats)
            return await self.tg.card(game, phase, player, move[1])
        target = move[1]
        if on_mail:
            word = "sheathe" if target is None else TARGETED[kind][0]
            return await self.mail.click(game, phase, player, word, () if target is None else (target,), seats)
        return await self.tg.target(game, phase, player, kind, target)


async def _until(predicate, what: str, timeout: float = 45.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s")
        await asyncio.sleep(0.15)


def _now() -> float:
    return asyncio.get_running_loop().time()


async def _true(value):
    return value


async def _hosted(stack, host: str):
    return next((g.table.game_id for g in stack.email.games.values() if g.table.seats.host == host), None)


async def _seated(state, game: str, n: int) -> bool:
    s = await state(game)
    return s is not None and len(s.players) == n


async def _started(state, game: str) -> bool:
    s = await state(game)
    return s is not None and s.phase is not Phase.LOBBY
