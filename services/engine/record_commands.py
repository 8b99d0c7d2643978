"""The record's side commands: a person's stats, a table's leaderboard and history, hiding one's stats
and being forgotten (``shared/protocol_records.py``). Each is answered outside any game's stream, to
the one who asked alone, with the people it names (``EventEnvelope.people``) so their gateway can name
them; the record itself is ``records.py``'s, read through ``record_queries.py``."""

from __future__ import annotations

from avalon.shared.protocol import CommandEnvelope, audience_model
from avalon.shared.protocol_records import (
    HistoryShown,
    Leader,
    LeaderboardShown,
    PastGame,
    RecordsForgotten,
    RoleLine,
    SizeLine,
    StatsHidden,
    StatsShown,
    TeamLine,
)
from avalon.services.engine.rules import Audience

from . import record_queries as q
from .batcher import StagedBatch
from .envelopes import Envelopes
from .people import People
from .store import LoadedGame, Store

UNKNOWN_PERSON = ("unknown_person", "The narrator has no record of {player}.")
HIDDEN = ("hidden_stats", "{player} keeps their stats hidden.")


class RecordCommands:
    def __init__(self, store: Store, people: People, envelopes: Envelopes) -> None:
        self.store = store
        self.people = people
        self.envelopes = envelopes
        self.handlers = {"show_stats": self.show_stats, "show_leaderboard": self.show_leaderboard,
                         "show_history": self.show_history, "hide_stats": self.hide_stats,
                         "forget_me": self.forget_me}

    @property
    def db(self):
        return self.store.engine

    async def show_stats(self, env: CommandEnvelope, loaded: LoadedGame | None, batch: StagedBatch) -> None:
        """The actor's own stats, or another person's unless they hid them; a person the narrator never
        met (no profile, no finished game) is refused."""
        person = env.command.player or env.actor
        if person != env.actor and not await q.known(self.db, person):
            self._refuse(env, batch, UNKNOWN_PERSON, person)
            return
        privacy = await q.privacy(self.db, person)
        if privacy.hidden and person != env.actor:
            self._refuse(env, batch, HIDDEN, person)
            return
        s = await q.person_stats(self.db, person)
        body = StatsShown(
            player=person, hidden=privacy.hidden, games=s.games, wins=s.wins,
            by_role=tuple(RoleLine(role=t.key, games=t.games, wins=t.wins) for t in s.by_role),
            by_team=tuple(TeamLine(team=t.key, games=t.games, wins=t.wins) for t in s.by_team),
            by_size=tuple(SizeLine(players=int(t.key), games=t.games, wins=t.wins) for t in s.by_size),
            merlin_shot_at=s.merlin_shot_at, merlin_survived=s.merlin_survived,
            assassin_shots=s.assassin_shots, assassin_hits=s.assassin_hits)
        await self._answer(env, batch, "stats", body, (person,))

    async def show_leaderboard(self, env: CommandEnvelope, loaded: LoadedGame | None, batch: StagedBatch) -> None:
        c = env.command
        leaders = await q.leaderboard(self.db, c.table, host=c.host, min_games=c.min_games)
        body = LeaderboardShown(table=c.table, host=c.host, min_games=c.min_games,
                                leaders=tuple(Leader(player=l.person, games=l.games, wins=l.wins) for l in leaders))
        named = ((c.host,) if c.host else ()) + tuple(l.person for l in leaders)
        await self._answer(env, batch, "leaderboard", body, named)

    async def show_history(self, env: CommandEnvelope, loaded: LoadedGame | None, batch: StagedBatch) -> None:
        c = env.command
        games = await q.history(self.db, c.table, count=c.count)
        body = HistoryShown(table=c.table, games=tuple(
            PastGame(code=g.code, ended_at=g.ended_at, players=g.size, winner=g.winner, cause=g.cause,
                     roles=g.roles) for g in games))
        named = tuple(dict.fromkeys(person for g in games for person, _ in g.roles))
        await self._answer(env, batch, "history", body, named)

    async def hide_stats(self, env: CommandEnvelope, loaded: LoadedGame | None, batch: StagedBatch) -> None:
        await q.set_hidden(self.db, env.actor, env.command.hidden)
        await self._answer(env, batch, "hidden", StatsHidden(player=env.actor, hidden=env.command.hidden), ())

    async def forget_me(self, env: CommandEnvelope, loaded: LoadedGame | None, batch: StagedBatch) -> None:
        games = await q.forget(self.db, env.actor)
        await self._answer(env, batch, "forgotten", RecordsForgotten(player=env.actor, games=games), ())

    async def _answer(self, env: CommandEnvelope, batch: StagedBatch, kind: str, body, named: tuple[str, ...]):
        channels = self.envelopes.router.to(env.actor, via=env.channel)
        people = await self.people.of(tuple(dict.fromkeys((env.actor, *named))))
        batch.accept(env, [self.envelopes.reply(env, kind, body, audience_model(Audience.to(env.actor)), channels,
                                                people=people)])

    def _refuse(self, env: CommandEnvelope, batch: StagedBatch, refusal: tuple[str, str], person: str) -> None:
        reason, message = refusal
        batch.reject(env, self.envelopes.rejection(env, reason, {"player": person}, message.format(player=person)))
