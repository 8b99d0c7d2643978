"""Load: concurrent games end to end through the broker, the engine and both gateways. Not a test: it
prints numbers.

The narrator runs as a host runs it: ``avalon engine``, ``avalon telegram`` and ``avalon email``,
each its own process started by its console script, on the real RabbitMQ (a fresh prefix) and a
fresh PostgreSQL database (``--database sqlite``: each service its own SQLite file, SQLite being the
embedded default's database and a file no three processes should write at once), configured by the
environment variables of README.md. Around it, two processes of this benchmark:

- bench/load_telegram.py: the fake Bot API (tests/fakes, flood control off; the gateway's own pacing
  opened up with TELEGRAM_LIMITS) and the scripted Telegram players, pressing what the bot shows;
- bench/load_mail.py: a loopback SMTP server (aiosmtpd) recording every mail's arrival and handing
  it to the scripted mail players, who answer by SMTP; their mail goes over LMTP into a private
  Dovecot, where the email gateway's IMAP watcher reads it (the path a real player's mail takes).

Tables are mixed (``--split`` telegram,mail,mixed in percent; a mixed table is a Telegram group
whose host invites ``--mixed-mail`` mail players), 5 players each, opened over ``--ramp`` seconds,
played until the phase ``--phases`` opens (3: the lobby, the first proposal and its vote are played,
the first quest opens; 0: to the end). Printed: the baselines (the raw broker round trip, the fake
Bot API's, a player's SMTP submission, and mail -> Dovecot -> IMAP watcher with no narrator),
commands and messages, throughput, latency from a player's action to the first message reaching
that player (their private chat or their group; their mailbox), errors (must all be 0: otherwise
the exit status is 1), and CPU and peak RSS of every process.

    python bench/load_bench.py [--games 1000] [--split 80,10,10] [--mixed-mail 2] [--phases 3]
                               [--ramp 30] [--database postgres|sqlite] [--linger 1.0] [--max-seconds 480]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine_bench import AMQP, pct, raw_round_trip  # noqa: E402 - bench/ is this script's own directory
from load_baselines import fake_api_round_trip, imap_floor, smtp_submission  # noqa: E402
from load_mail import address, mail_world_process  # noqa: E402
from load_services import (  # noqa: E402
    SERVICES,
    Postgres,
    Services,
    Watch,
    mail_reads,
    queue_depths,
    read_delays,
    status_kb,
    total,
)
from load_telegram import telegram_world_process  # noqa: E402
from avalon.shared.bus.rabbit import RabbitBus  # noqa: E402
from tests.mailservers.dovecot import dovecot_available  # noqa: E402

SPAWN = multiprocessing.get_context("spawn")


def plan_tables(args) -> tuple[list, list, dict[int, str]]:
    """(the Telegram world's tables, the mail world's tables, each table's kind)."""
    shares = [float(x) for x in args.split.split(",")]
    mail, mixed = (round(args.games * s / sum(shares)) for s in shares[1:])
    kinds = ["mail"] * mail + ["mixed"] * mixed
    kinds += ["telegram"] * (args.games - len(kinds))
    random.Random(args.seed).shuffle(kinds)
    telegram, mails = [], []
    for i, kind in enumerate(kinds):
        if kind == "telegram":
            telegram.append((i, args.players, []))
        elif kind == "mixed":
            seats = args.players - args.mixed_mail
            addresses = [address(i, s) for s in range(seats, args.players)]
            telegram.append((i, seats, addresses))
            mails.append((i, "mixed", addresses))
        else:
            mails.append((i, "mail", [address(i, s) for s in range(args.players)]))
    return telegram, mails, dict(enumerate(kinds))


class World:
    """A world's process, asked and answered over a pipe."""

    def __init__(self, target, *args) -> None:
        self.control, theirs = SPAWN.Pipe()
        self.process = SPAWN.Process(target=target, args=(theirs, *args), daemon=True)
        self.process.start()
        self.info = self.control.recv()

    async def ask(self, *request):
        def exchange():
            self.control.send(request)
            return self.control.recv()
        return await asyncio.to_thread(exchange)

    def close(self) -> None:
        if self.process.is_alive():
            try:
                self.control.send(("stop",))
                if self.control.poll(30):
                    self.control.recv()
            except (OSError, EOFError):
                pass
        self.process.join(10)
        if self.process.is_alive():
            self.process.kill()


# -- the report --------------------------------------------------------------------------------------

def line(values: list[float]) -> str:
    values = [v for v in values if v == v]
    if not values:
        return "n=0"
    return (f"n={len(values):6d}  p50 {1000 * pct(values, .5):7.0f}  p90 {1000 * pct(values, .9):7.0f}  "
            f"p99 {1000 * pct(values, .99):7.0f}  max {1000 * max(values):7.0f} ms")


def print_latency(title: str, latency: dict[str, list[float]]) -> None:
    """Per kind of action; an action no message reached its player after (by the end) is counted apart."""
    everything = [v for values in latency.values() for v in values]
    print(f"  {title:34s} {line(everything)}")
    for kind, values in sorted(latency.items(), key=lambda kv: -len(kv[1])):
        unanswered = sum(1 for v in values if v != v)
        answered = f"{line(values)}" if unanswered < len(values) else ""
        print(f"    {kind:32s} {answered}{f'  ({unanswered} never answered)' if unanswered else ''}")


async def main(args) -> int:
    reason = dovecot_available()
    if reason:
        sys.exit(f"no mail servers here: {reason}")
    telegram_plan, mail_plan, kinds = plan_tables(args)
    counts = {k: list(kinds.values()).count(k) for k in ("telegram", "mail", "mixed")}
    print(f"load: {args.games} concurrent {args.players}-player games ({counts['telegram']} Telegram, "
          f"{counts['mail']} mail, {counts['mixed']} mixed with {args.mixed_mail} mail players), "
          f"{'to the end' if not args.phases else f'until phase {args.phases} opens'}, opened over {args.ramp:g} s; "
          f"preset {args.preset}; {args.database}; EMAIL_LINGER {args.linger:g} s; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f} before the run (other work shares this machine)", flush=True)
    prefix = f"load.{uuid.uuid4().hex[:8]}"
    workdir = Path(tempfile.mkdtemp(prefix="avalon-load-services-"))
    pg = Postgres() if args.database == "postgres" else None
    worlds: list[World] = []
    services = None
    errors: dict[str, int] = {}
    try:
        print("baselines (the same machine, just before the run):", flush=True)
        p50, p99, rate = await raw_round_trip(1000)
        print(f"  raw broker round trip (aio-pika publish -> consume, persistent): p50 {p50:.2f} ms, "
              f"p99 {p99:.2f} ms; {rate:.0f} msg/s")
        tg = World(telegram_world_process, telegram_plan, args.phases, args.preset, args.games)
        mail = World(mail_world_process, mail_plan, args.phases, args.preset, args.seed, args.games)
        worlds = [tg, mail]
        floors = {"fake": await fake_api_round_trip(tg.info), "smtp": await smtp_submission(mail.info),
                  "imap": await imap_floor(mail.info)}
        print(f"  fake Bot API round trip (sendMessage over HTTP):           {line(floors['fake'])}")
        print(f"  a player's SMTP submission to the loopback server:         {line(floors['smtp'])}")
        print(f"  mail sent -> read by the IMAP watcher (no narrator):        {line(floors['imap'])}")

        urls = {name: f"sqlite+aiosqlite:///{workdir / name}.db" for name in SERVICES}
        if pg is not None:
            url = await pg.create()
            urls = {name: url for name in SERVICES}
        profile = tuple(args.profile.split("=", 1)) if args.profile else None
        services = Services(workdir, urls, prefix, tg.info, mail.info, args.linger, profile)
        for name in SERVICES:  # the engine first: it declares the broker's exchanges and queues
            await services.start(name)
        watch = Watch({**{name: p.pid for name, p in services.processes.items()},
                       "telegram world": tg.process.pid, "mail world": mail.process.pid},
                      mail.info["dovecot_pid"], pg)
        sampling = asyncio.create_task(watch.sample())
        before_metrics = await services.metrics()
        cpu_before = watch.cpus()
        t0 = time.monotonic() + 0.5
        for world in worlds:
            await world.ask("start", t0, args.ramp)
        print(f"running (mail in: players' SMTP -> LMTP -> Dovecot -> the gateway's IMAP watcher):", flush=True)
        done: set[int] = set()
        last_print = time.monotonic()
        while time.monotonic() - t0 < args.max_seconds:
            await asyncio.sleep(2)
            progress = [await w.ask("progress") for w in worlds]
            done = set(progress[0]["done"]) | set(progress[1]["done"])
            if len(done) >= args.games:
                break
            if time.monotonic() - last_print > 15:
                last_print = time.monotonic()
                m, depths = await services.metrics(), await queue_depths(prefix)
                print(f"  {time.monotonic() - t0:5.0f} s: {len(done)}/{args.games} games done; "
                      f"{total(m, 'engine:avalon_commands_total'):.0f} commands; "
                      f"{progress[0]['messages']} Telegram messages, {progress[1]['mails']} mails; waiting in the "
                      f"broker: {depths['commands']} commands, events {depths['events.telegram']} for Telegram, "
                      f"{depths['events.email']} for email", flush=True)
        finished = time.monotonic() - t0
        # let what is still on its way arrive: outboxes empty and nothing new for two seconds
        quiet_deadline = time.monotonic() + 60
        while time.monotonic() < quiet_deadline:
            m = await services.metrics()
            depth = sum(total(m, f"{s}:avalon_outbox_depth") for s in SERVICES)
            progress = [await w.ask("progress") for w in worlds]
            last = max(p["last_arrival"] for p in progress)
            if depth == 0 and time.monotonic() - last > 2:
                break
            await asyncio.sleep(0.5)
        span = max(p["last_arrival"] for p in progress) - t0
        cpu_after = watch.cpus()
        for pid, (first, last_cpu) in watch.pg_cpu.items():
            cpu_after["postgres"] = cpu_after.get("postgres", 0.0) + last_cpu - first
        sampling.cancel()
        m = await services.metrics()
        reports = [await w.ask("report") for w in worlds]
        hwm = {name: status_kb(p.pid, "VmHWM") / 1024 for name, p in services.processes.items()}
        hwm.update({"telegram world": status_kb(tg.process.pid, "VmHWM") / 1024,
                    "mail world": status_kb(mail.process.pid, "VmHWM") / 1024})
        dead_letters = (await queue_depths(prefix))["dead"]
        codes = services.stop()

        # -- what happened
        tgr, mr = reports
        commands = {r: total(m, "engine:avalon_commands_total", result=r) - total(
            before_metrics, "engine:avalon_commands_total", result=r)
            for r in ("applied", "rejected", "ignored", "duplicate")}
        n_commands = sum(commands.values())
        tg_messages = tgr["calls"].get("sendMessage", 0) + tgr["calls"].get("editMessageText", 0) + \
            tgr["calls"].get("editMessageReplyMarkup", 0)
        mails = mr["mails"].get("narrator", 0)
        print(f"result: {len(done)}/{args.games} games done in {finished:.1f} s; the last message arrived at "
              f"{span:.1f} s (ramp {args.ramp:g} s included)")
        print(f"  commands (engine): {n_commands:.0f} = {n_commands / span:.0f}/s "
              f"({', '.join(f'{k} {v:.0f}' for k, v in commands.items())}); player actions: "
              f"{tgr['actions']} on Telegram, {mr['actions']} by mail")
        print(f"  Telegram gateway: {tg_messages} messages = {tg_messages / span:.0f}/s (sendMessage "
              f"{tgr['calls'].get('sendMessage', 0)}, edits {tgr['calls'].get('editMessageText', 0)} + "
              f"{tgr['calls'].get('editMessageReplyMarkup', 0)}), {tgr['calls'].get('answerCallbackQuery', 0)} "
              f"button answers, {tgr['calls'].get('getUpdates', 0)} getUpdates")
        outcomes, read = mail_reads(services)
        print(f"  email gateway: {mails} mails = {mails / span:.1f}/s; "
              f"{sum(outcomes.values())} mails read over IMAP = {sum(outcomes.values()) / span:.1f}/s")
        print(f"  messages in all: {(tg_messages + mails) / span:.0f}/s")
        print("latency, a player's action -> the first message reaching them (their private chat or their "
              "group; their mailbox):")
        print_latency("Telegram (press or command)", tgr["latency"])
        print(f"  {'Telegram press -> button answered':34s} {line(tgr['answer_latency'])}")
        print_latency("mail (sending started)", mr["latency"])
        print(f"  {'mail sent -> read by the gateway':34s} {line(read_delays(mr['sent_wall'], read))} "
              f"(its log line's time)")
        print(f"  (a mail to a group member or a vote tally edited for the group may come from another player's "
              f"action; a vote by mail is answered once every vote is in; floors above)")

        errors = {
            "commands rejected by the engine": commands["rejected"],
            "dead-lettered (dead queue)": dead_letters,
            "dead messages (metrics)": sum(total(m, f"{s}:avalon_dead_messages_total") for s in SERVICES),
            "failed sends (metrics)": sum(total(m, f"{s}:avalon_deliveries_total", result="failed")
                                          for s in SERVICES),
            "failed Bot API calls": sum(tgr["failed_calls"].values()),
            "errors counted (metrics)": sum(total(m, f"{s}:avalon_errors_total") for s in SERVICES),
            "ERROR log lines": sum(len(services.log_lines(s, "ERROR")) for s in SERVICES),
            "refused button presses (alerts)": tgr["alerts"],
            "mail not acted on (problem/refused)": sum(n for o, n in outcomes.items() if not o.startswith(
                ("sent", "created", "invited"))),
            "players' own failures": tgr["failure_count"] + mr["failure_count"],
            "games not done": args.games - len(done),
            "service exits not 0": sum(1 for c in codes.values() if c != 0),
        }
        print("errors (each must be 0): " + ", ".join(f"{k} {v:.0f}" for k, v in errors.items()))
        for name in SERVICES:
            for text in services.log_lines(name, "ERROR")[:3]:
                print(f"    {name}: {text[:300]}")
        for text in tgr["failures"][:3] + mr["failures"][:3]:
            print(f"    player: {text[:300]}")
        if tgr["failed_calls"]:
            print(f"    failed Bot API calls: {tgr['failed_calls']}")
        if any(o for o in outcomes if not o.startswith(("sent", "created", "invited"))):
            print(f"    mail outcomes: {outcomes}")
        if errors["games not done"]:
            missing = sorted(set(range(args.games)) - done)
            print(f"    not done: {', '.join(f'{i} ({kinds[i]})' for i in missing[:12])}; Telegram tables "
                  f"{tgr['not_done'][:5]}")
        warnings = {s: len(services.log_lines(s, "WARNING")) for s in SERVICES}
        print(f"  warnings logged (not counted as errors): {warnings}")

        spent = {k: cpu_after.get(k, 0.0) - cpu_before.get(k, 0.0) for k in cpu_after}
        print(f"CPU seconds over the run (of {2 * span:.0f} core-seconds on 2 cores; the broker and PostgreSQL "
              f"also serve other work here): " + ", ".join(f"{k} {v:.1f}" for k, v in spent.items()))
        for name in SERVICES:
            per = 1000 * spent.get(name, 0) / max(1, {"engine": n_commands, "telegram": tg_messages,
                                                      "email": mails}[name])
            print(f"  {name}: {per:.1f} ms per {'command' if name == 'engine' else 'message'}")
        print("peak RSS (MB): " + ", ".join(f"{k} {hwm.get(k, v):.0f}" for k, v in {**watch.peak, **hwm}.items())
              + " (services and worlds: VmHWM; Dovecot: its processes summed; broker: sampled each second; "
              "PostgreSQL: our database's backends summed, shared buffers counted in each)")
        return 1 if any(errors.values()) else 0
    finally:
        if services is not None:
            services.stop()
            keep = Path(f"/tmp/{prefix}-logs")
            shutil.copytree(workdir, keep, ignore=shutil.ignore_patterns("*.db*"), dirs_exist_ok=True)
            print(f"service logs: {keep}")
        for world in worlds:
            world.close()
        await RabbitBus(AMQP, prefix=prefix).delete_everything("telegram", "email")
        if pg is not None:
            await pg.drop()
        shutil.rmtree(workdir, ignore_errors=True)

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--players", type=int, default=5)
    parser.add_argument("--split", default="80,10,10", help="percent of Telegram, mail and mixed tables")
    parser.add_argument("--mixed-mail", type=int, default=2, help="mail players at a mixed table")
    parser.add_argument("--phases", type=int, default=3, help="play until this phase opens (0: to the end)")
    parser.add_argument("--ramp", type=float, default=30.0, help="seconds over which the tables open")
    parser.add_argument("--preset", default="classic", choices=("classic", "online", "forum"))
    parser.add_argument("--database", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--linger", type=float, default=1.0, help="EMAIL_LINGER (the setting's default: 1.0)")
    parser.add_argument("--max-seconds", type=float, default=480.0, help="give up on the games after this")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", metavar="SERVICE=FILE", help="run that service (engine, telegram, email) "
                        "under cProfile, writing FILE when it stops")
    import uvloop

    sys.exit(uvloop.run(main(parser.parse_args())))
