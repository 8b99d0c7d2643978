"""The record of finished games by mail, against real Dovecot and SMTP on loopback: a 5-player mail
game played to its end by clicks, then the host's "stats", "history" and "leaderboard" mails are
answered by mail with the finished game (its code, its players); a stranger's "stats" shows nothing
of anyone's game; a player's "forget me" removes them from the history and the leaderboard."""

from __future__ import annotations

import asyncio
import random

from avalon.services.email_gateway.wording import link_body
from avalon.shared.game.codes import game_code
from tests.e2e.email_support import MailPlayer, Narrator, wait_until
from tests.mailservers import MailUser, mail_servers  # noqa: F401 - the fixture

LOCALS = ["host", "anna", "bao", "claire", "daan"]


def text_of(message) -> str:
    return message.get_body(("plain",)).get_content()


async def answer_to(user: MailPlayer, contains: str, what: str) -> str:
    """The text of the first new mail of ``user`` containing ``contains``."""
    async def found():
        for m in await user.new_mail():
            if contains in text_of(m):
                return text_of(m)
        return None
    return await wait_until(found, 30, what)


async def test_stats_history_and_leaderboard_by_mail_after_a_finished_game(mail_servers, tmp_path):
    narrator = Narrator(mail_servers, f"sqlite+aiosqlite:///{tmp_path / 'narrator.db'}")
    await narrator.start()
    rng = random.Random(5)
    players = [MailPlayer(MailUser(mail_servers, mail_servers.add_user(local)), "en", "click",
                          random.Random(rng.random())) for local in LOCALS]
    host, anna = players[0], players[1]
    stranger = MailPlayer(MailUser(mail_servers, mail_servers.add_user("zed")), "en", "click", random.Random(1))
    code: list[str] = []

    def table():
        game = narrator.gateway.games.get(code[0]) if code else None
        if game is None:
            return {}, ()
        names = narrator.gateway.roster.names()
        return {p: names.get(p, p) for p in game.table.seats.players}, tuple(game.table.seats.players)

    for p in players:
        p.table = table
    try:
        await host.user.send(narrator.address, "new game", "\n".join(p.user.address for p in players[1:]) + "\n")

        async def created():
            found = [g for g in narrator.gateway.games if g.startswith("mail-")]
            return found[0] if found else None
        code.append(await wait_until(created, 30, "the game's creation"))

        async def seated():
            loaded = await narrator.store.load(code[0])
            return loaded is not None and len(loaded.state.players) == 5

        async def tick():
            for p in players[1:]:
                await p.step()
        await wait_until(seated, 60, "five players seated", tick)
        await host.new_mail()
        await host.user.reply(host.mails[-1], link_body("en", "start"), quote="below")

        async def over():
            loaded = await narrator.store.load(code[0])
            return loaded is not None and loaded.state.over

        async def play():
            await asyncio.gather(*(p.step() for p in players))
        await wait_until(over, 300, "the end of the game", play)
        await narrator.gateway.outbox.idle(60)
        for p in players:
            await p.new_mail()

        await host.user.send(narrator.address, "my record", "history\n")
        history = await answer_to(host, "The last finished games", "the history by mail")
        assert game_code(code[0]) in history, history
        names = narrator.gateway.roster.names()
        for p in players:
            assert f"{names[f'mail:{p.user.address}']}:" in history, history

        await host.user.send(narrator.address, "stats", "stats\n")
        stats = await answer_to(host, "Stats of", "the host's stats by mail")
        assert "Finished games: 1" in stats, stats

        anna_name = names[f"mail:{anna.user.address}"]
        await host.user.send(narrator.address, "anna's stats", f"stats {anna_name}\n")
        hers = await answer_to(host, f"Stats of {anna_name}", "anna's stats asked for by name by mail")
        assert "Finished games: 1" in hers, hers

        await host.user.send(narrator.address, "top", "leaderboard\n")
        top = await answer_to(host, "Leaderboard", "the leaderboard by mail")
        assert sum(f"{names[f'mail:{p.user.address}']} —" in top for p in players) == 5, top

        await stranger.user.send(narrator.address, "stats", "stats\n")
        zed = await answer_to(stranger, "Stats of", "a stranger's stats by mail")
        assert "No finished games yet." in zed and "Finished games:" not in zed, zed

        await anna.user.send(narrator.address, "forget", "forget me\n")
        await answer_to(anna, "Your records are forgotten (finished games deleted: 1)", "anna forgotten")
        await host.user.send(narrator.address, "history again", "history\n")
        history = await answer_to(host, "The last finished games", "the history after anna's forget me")
        assert f"{anna_name}:" not in history, history
        await host.user.send(narrator.address, "top again", "leaderboard\n")
        top = await answer_to(host, "Leaderboard", "the leaderboard after anna's forget me")
        assert anna_name not in top and top.count(" — ") == 4, top
    finally:
        await narrator.stop()
