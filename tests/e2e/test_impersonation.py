"""A player can act only as themself, on every channel, and only the host runs the lobby.

The narrator as ``avalon run`` starts it (engine, the real Telegram gateway against the fake Bot API,
the real email gateway mailing through SMTP on loopback, one in-process bus, one SQLite database;
mail in goes to the gateway's inbound handler as a mail program's bytes, stamped with the
receiving server's verdict). At a table of five (three on Telegram, two by mail) and in lobbies of
their own, players try to act as someone else:

- Telegram: pressing the team picker when not the leader, a vote when not at the table, another
  player's private card or target button (forged button data, as a modified client can send), a
  group command naming another player, a message in private claiming to be someone else, another
  player's message forwarded to the bot;
- mail: a forged From with the victim's token (the receiving server reports DMARC failing), one's
  own From with another player's token, a reply to another player's mail, a token of another game;
- the bus: a command whose channel is not the channel of its actor;
- and the host's actions (start, cancel, invite, the options) from anyone else.

Each attempt is refused, with a reason in the sender's language where they should be told (never
an answer to a forger, which would write to the victim), or acts only as the sender; the games
change in nothing else. The number of attempts of each kind is printed."""

from __future__ import annotations

from avalon.services.email_gateway.wording import link_body
from avalon.shared.protocol import CommandEnvelope

from .mixed_support import flat
from .secrets_attempts import (Attempts, answer_to, eventually, eventually_count, eventually_count_mail,
                               eventually_mail, forward, lobby, log_of, mail_of, mail_refusal, mailed, move,
                               open_table, outcome, players_are, refusal, settle, state_of, wait_phase)
from .secrets_spec import Seat
from .secrets_stack import NARRATOR, stack  # noqa: F401 - the fixture


async def test_on_telegram_a_player_acts_only_as_themself_and_only_the_host_runs_the_lobby(stack):
    fake, attempts = stack.fake, Attempts()
    group2, dave, (erin,), game2, _ = await lobby(stack, 1, "Davezz", "en", [("Erinzz", "vi")])
    await eventually(lambda: len(stack.telegram.game(game2).table.seats.players) == 2, "Erin seated")
    await settle(stack)
    before2 = await log_of(stack, game2)
    host_only = refusal("vi", "not_host")
    for text in ("/startgame", "/cancel", "/invite zedzz@example.test", "/cancel Davezz"):
        await erin.send(group2, text)
        attempts[f"telegram: {text.split()[0]} by a non-host in the lobby"] += 1
    forward(fake, erin, group2, "/cancel", dave)
    attempts["telegram: the host's /cancel forwarded by another player"] += 1
    await eventually_count(fake, erin.private_chat, host_only, 5)
    await erin.send(group2, "/settings")
    board = await fake.wait_for_message(group2, timeout=20, where=lambda m: any(d.startswith(f"s:{game2}:")
                                                                                  for d in m.callback_data))
    for key in ("lady", "excalibur", "lang"):
        answer = await answer_to(fake, await erin.press(board, f"s:{game2}:{key}"))
        assert answer.show_alert and flat(answer.text) == host_only, answer
        attempts["telegram: a settings button pressed by a non-host"] += 1
    await settle(stack)
    assert await log_of(stack, game2) == before2, "the lobby did not change"
    assert not stack.mails("zedzz@example.test"), "nobody was invited"

    table = await open_table(stack)
    game, names = table.game, table.names
    s = await state_of(stack, game)
    telegram = [p for p in s.players if p.startswith("tg:")]
    leader = s.players[s.leader]
    outsider = fake.user(959_999, "Samzz", language_code="nl")
    table.group.add(outsider)
    if leader.startswith("tg:"):
        picker = await fake.wait_for_message(table.group, timeout=20, where=lambda m: any(
            d.startswith(f"p:{game}:{s.phase_id}:") for d in m.callback_data))
    else:  # a leader by mail picks by mail: the group gets no picker, and a forged one is refused alike
        await settle(stack)
        assert not any(d.startswith("p:") for m in fake.messages(table.group) for d in m.callback_data)
        picker = fake.messages(table.group)[-1]  # any message of the bot's carries a forged press
    forged = not leader.startswith("tg:")
    print(f"the first leader: {leader} ({'a forged picker' if forged else 'the group picker'} pressed)")
    for player in (p for p in telegram if p != leader):
        user = table.users[player]
        for data in (f"p:{game}:{s.phase_id}:0", f"p:{game}:{s.phase_id}:-1"):
            answer = await answer_to(fake, await user.press(picker, data, force=forged))
            assert answer.show_alert and flat(answer.text) == refusal(table.seats[player].language, "not_your_turn")
            attempts["telegram: the team picker pressed by a player who is not the leader"] += 1
    answer = await answer_to(fake, await outsider.press(picker, f"p:{game}:{s.phase_id}:0", force=forged))
    assert flat(answer.text) == refusal("nl", "not_a_player")
    attempts["telegram: the team picker pressed by someone not at the table"] += 1
    mira = next(p for p in s.players if p.startswith("mail:") and p != leader)
    off_team = next(p for p in telegram if p != s.host)  # the intruder: neither host nor on the team
    on_team = next(p for p in telegram if p != off_team)
    await move(table, leader, ("propose_team", [on_team, mira], None), "proposal")

    vote = await fake.wait_for_message(table.group, timeout=20,
                                       where=lambda m: any(d.startswith("v:") for d in m.callback_data))
    answer = await answer_to(fake, await outsider.press(vote, vote.callback_data[0]))
    assert flat(answer.text) == refusal("nl", "not_a_player")
    attempts["telegram: a vote by someone not at the table"] += 1
    for player in s.players:
        await move(table, player, ("cast_vote", True), "vote")
    quest = await wait_phase(stack, game, "quest")
    await eventually(lambda: any(d.startswith(f"c:{game}:{quest.phase_id}:") for m in fake.messages(
        table.users[on_team].private_chat) for d in m.callback_data), "the card buttons")
    await settle(stack)
    before = await log_of(stack, game)
    intruder = table.users[off_team]
    language = table.seats[off_team].language
    somewhere = fake.messages(intruder.private_chat)[-1]  # any message of the bot's carries a forged press
    for data in (f"c:{game}:{quest.phase_id}:fail", f"c:{game}:{quest.phase_id}:success"):
        await answer_to(fake, await intruder.press(somewhere, data, force=True))
        attempts["telegram: another player's quest card button (forged data)"] += 1
    await eventually_count(fake, intruder.private_chat, refusal(language, "not_your_turn"), 2)
    for data in (f"t:{game}:{quest.phase_id}:e:0", f"t:{game}:{quest.phase_id}:l:1", f"t:{game}:{quest.phase_id}:a:0"):
        answer = await answer_to(fake, await intruder.press(somewhere, data, force=True))
        assert answer.show_alert and flat(answer.text) == refusal(language, "not_your_turn")
        attempts["telegram: another player's private target button (forged data)"] += 1
    answer = await answer_to(fake, await outsider.press(vote, f"c:{game}:{quest.phase_id}:fail", force=True))
    assert flat(answer.text) == refusal("nl", "not_a_player")
    attempts["telegram: a quest card forged by someone not at the table"] += 1
    await intruder.send(table.group, f"/cancel {names[s.host]}")
    attempts["telegram: /cancel naming the host, by another player"] += 1
    await eventually_count(fake, intruder.private_chat, refusal(language, "not_host"), 1)
    quiet = len(fake.messages(intruder.private_chat))
    await intruder.send(None, f"{names[on_team]}: I play fail")
    attempts["telegram: a private message claiming to be another player"] += 1
    forward(fake, intruder, intruder.private_chat, "fail", table.users[on_team])
    attempts["telegram: another player's message forwarded in private"] += 1
    await settle(stack)
    assert len(fake.messages(intruder.private_chat)) == quiet, "a claim in words is not a move"
    assert await log_of(stack, game) == before, "no forged press, command or message changed the game"
    await move(table, on_team, ("play_card", "success"), "quest")  # the real buttons still work
    await move(table, mira, ("play_card", "success"), "quest")
    await wait_phase(stack, game, "proposal")
    attempts.report("Telegram")


async def test_by_mail_a_player_acts_only_as_themself_and_only_the_host_runs_the_lobby(stack):
    attempts = Attempts()
    table = await open_table(stack)
    game, seats = table.game, table.seats
    s = await state_of(stack, game)
    mira, olaf = (next(p for p, seat in seats.items() if seat.name == name) for name in ("Mirazz", "Olafzz"))
    m, o = seats[mira], seats[olaf]
    await move(table, s.players[s.leader], ("propose_team", list(s.players[:2]), None), "proposal")
    vote = await wait_phase(stack, game, "vote")
    mira_mail = await mail_of(table, mira, vote.phase_id)
    await mail_of(table, olaf, vote.phase_id)
    group2, pieter, _, game2, _ = await lobby(stack, 2, "Pietzz", "en")
    await pieter.send(group2, f"/invite {o.address}")
    invitation = await eventually_mail(stack, o.address, game2)
    await settle(stack)
    before, before2 = await log_of(stack, game), await log_of(stack, game2)
    boxes = (len(stack.mails(m.address)), len(stack.mails(o.address)))
    approve = link_body("nl", "approve", [], vote.phase_id)

    forged = await stack.mail_in(m.address, m.name, mira_mail.reply_to, "Re: " + mira_mail.subject, approve,
                                 dmarc="fail")
    assert (await outcome(stack, forged)).startswith("refused: dmarc"), await outcome(stack, forged)
    attempts["mail: From forged as another player, with that player's token"] += 1
    bare = await stack.mail_in(m.address, m.name, NARRATOR, "vote", approve, dmarc="fail")
    assert (await outcome(stack, bare)).startswith("refused: dmarc")
    attempts["mail: From forged as another player, no token"] += 1
    await settle(stack)
    assert (len(stack.mails(m.address)), len(stack.mails(o.address))) == boxes, \
        "a forged mail is answered to nobody: an answer would go to the victim"

    theirs = await stack.mail_in(o.address, o.name, mira_mail.reply_to, "Re: " + mira_mail.subject, approve)
    assert (await outcome(stack, theirs)).startswith("refused")
    attempts["mail: one's own From with another player's token"] += 1
    reply = await stack.mail_in(o.address, o.name, mira_mail.reply_to, "Re: " + mira_mail.subject,
                                f"{approve}\n\n> " + mira_mail.text[:300].replace("\n", "\n> "), in_reply_to=mira_mail)
    assert (await outcome(stack, reply)).startswith("refused")
    attempts["mail: a reply to another player's mail, with its token"] += 1
    other = await stack.mail_in(o.address, o.name, invitation.reply_to, "Re: " + invitation.subject,
                                link_body("fa", "approve", [], vote.phase_id), in_reply_to=invitation)
    assert (await outcome(stack, other)).startswith("sent")  # read as a vote in the token's game: refused there
    attempts["mail: a token of another game"] += 1
    await eventually_count_mail(stack, o.address, mail_refusal("fa", "not_your_token"), 2)
    await mailed(stack, o.address, refusal("fa", "stale_phase", "email"), "Olaf told his vote is not for game 2")
    assert len(stack.mails(m.address)) == boxes[0], "Mira was not written to about Olaf's attempts"

    for what in ("cancel", "invite"):
        words = ["zedzz@example.test"] if what == "invite" else []
        await stack.mail_in(m.address, m.name, mira_mail.reply_to, "Re: " + mira_mail.subject,
                            link_body("nl", what, words), in_reply_to=mira_mail)
        attempts[f"mail: {what} by a player who is not the host"] += 1
    await eventually_count_mail(stack, m.address, refusal("nl", "not_host", "email"), 2)

    hana, ivo = Seat("Hanazz", "email", "en"), Seat("Ivozz", "email", "ru")
    await stack.mail_in(hana.address, hana.name, NARRATOR, "new game", f"new game classic\n{ivo.address}")
    invited = await eventually_mail(stack, ivo.address, "mail-")
    await stack.mail_in(ivo.address, ivo.name, invited.reply_to, "Re: " + invited.subject, link_body("ru", "join"),
                        in_reply_to=invited)
    game3 = invited.message_id.split(".")[1]
    await eventually(lambda: players_are(stack, game3, 2), "Ivo seated")
    await settle(stack)
    before3 = await log_of(stack, game3)
    for what in ("start", "cancel", "invite"):
        words = ["zedzz@example.test"] if what == "invite" else []
        await stack.mail_in(ivo.address, ivo.name, invited.reply_to, "Re: " + invited.subject,
                            link_body("ru", what, words), in_reply_to=invited)
        attempts[f"mail: {what} by a player who is not the host, in the lobby"] += 1
    await eventually_count_mail(stack, ivo.address, refusal("ru", "not_host", "email"), 3)

    await settle(stack)
    assert await log_of(stack, game) == before, "nothing changed in the game"
    assert await log_of(stack, game2) == before2 and await log_of(stack, game3) == before3, "nor in the lobbies"
    assert not stack.mails("zedzz@example.test"), "nobody was invited"
    attempts.report("mail")


async def test_on_the_bus_a_gateway_channel_is_believed_only_for_its_own_players(stack):
    """What the engine can tell without knowing who published: the channel a command claims is the
    channel of its actor (``tg:`` Telegram, ``mail:`` email). A command claiming the Telegram
    channel for a mail player, or the other way round, is dead-lettered and changes nothing."""
    attempts = Attempts()
    table = await open_table(stack)
    game = table.game
    s = await state_of(stack, game)
    await settle(stack)
    before = await log_of(stack, game)
    mail_player = next(p for p in s.players if p.startswith("mail:"))
    tg_player = next(p for p in s.players if p.startswith("tg:") and p != s.host)
    forged = [(mail_player, "telegram", {"type": "cancel_game"}), (tg_player, "email", {"type": "cancel_game"}),
              (mail_player, "telegram", {"type": "propose_team", "team": list(s.players[:2]), "excalibur": None}),
              (s.host, "email", {"type": "cancel_game"}), (mail_player, "telegram", {"type": "show_board"})]
    for actor, channel, body in forged:
        await stack.bus.send_command(CommandEnvelope(game_id=game, actor=actor, channel=channel,
                                                     phase_id=s.phase_id, command=body))
        attempts[f"bus: a {actor.split(':')[0]} player's command on the {channel} channel"] += 1
    await stack.bus.send_command(CommandEnvelope(game_id=game, actor="@scheduler", channel="telegram",
                                                 phase_id=s.phase_id, command={"type": "phase_timed_out"}))
    attempts["bus: the scheduler's timeout on a gateway's channel"] += 1
    await settle(stack)
    dead = await stack.bus.dead_letters()
    assert len(dead) == len(forged), f"{len(dead)} of {len(forged)} forged commands dead-lettered"
    assert await log_of(stack, game) == before, "no forged command changed the game"
    attempts.report("bus")
