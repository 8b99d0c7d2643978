"""The compose stack on a three-node RabbitMQ cluster, as docs/operations.md sets it up: `docker compose
-f docker-compose.yml -f docker-compose.cluster.yml up -d --scale engine=3` with ENGINE_PARTITIONS=6 (and
RABBITMQ_ERLANG_COOKIE) in .env. The three nodes form one cluster before `broker-users` declares the
queues, so every command partition is a quorum queue with a member on each node; the engines list the
three nodes in AMQP_URL. A game is played over the stack's bus (tests/e2e/stack_player.py in a container
of the image, as in test_compose_stack.py), and after its first quest the RabbitMQ node that the engine
serving the game's partition is connected to is stopped (`docker compose stop`): the engines reconnect to
another node, the partition's queue goes on with the two members left, and the game ends with each
command applied once. The node is started again and rejoins: every command queue has its three members online again.

Docker as test_compose_stack.py needs it: a missing Docker skips the test, unless AVALON_REQUIRE_DOCKER=1
(.ci/run sets it where it installed Docker): then it fails.
"""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import time
from pathlib import Path

import pytest

from avalon.shared.bus.rabbit import partition_of
from tests.e2e.test_compose_stack import (ENGINES, PARTITIONS, ROOT, Playing, Stack, assert_applied_once_in_order,
                                         require_docker)

BUILT = ("broker-users", "migrate", "engine")  # the services built from the Dockerfile (no gateway here)
NODES = ("rabbitmq", "rabbitmq2", "rabbitmq3")  # the services, and hostnames, of the three nodes
COMMAND_QUEUES = ["avalon.commands"] + [f"avalon.commands.{p}" for p in range(1, PARTITIONS)]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    require_docker("the compose cluster")
    scratch = tmp_path_factory.mktemp("cluster")
    env = scratch / "env"
    admin = secrets.token_hex(12)
    env.write_text(f"POSTGRES_PASSWORD={secrets.token_hex(12)}\nRABBITMQ_PASSWORD={admin}\n"
                   f"ENGINE_AMQP_PASSWORD={secrets.token_hex(12)}\nRABBITMQ_ERLANG_COOKIE={secrets.token_hex(24)}\n"
                   f"ENGINE_PARTITIONS={PARTITIONS}\n")
    # Builds on the host's network (a daemon without a default bridge, as here, cannot build otherwise).
    # And short DNS timeouts: this machine's containers reach no DNS server outside, so Docker's resolver
    # takes 20 s to say that a stopped container's name is unknown (elsewhere it says so at once); each
    # node and CLI call that looks the stopped node up would wait that long.
    override = scratch / "override.yml"
    services: dict[str, dict] = {s: {"build": {"network": "host"}} for s in BUILT}
    for s in (*NODES, "engine"):  # the players run in containers of the engine's service too
        services.setdefault(s, {})["dns_opt"] = ["timeout:1", "attempts:1"]
    override.write_text(json.dumps({"services": services}))  # JSON is YAML
    nodes = ",".join(f"amqp://avalon:{admin}@{node}:5672/" for node in NODES)
    cluster = Cluster(f"avalon-cluster-test-{secrets.token_hex(3)}", env, override, nodes)
    try:
        cluster.compose("build", timeout=900)
        yield cluster
    finally:
        cluster.compose("down", "-v", "--remove-orphans", "--timeout", "20", check=False, timeout=240)


class Cluster(Stack):
    """test_compose_stack.py's Stack, with docker-compose.cluster.yml between the compose file and the
    test's override; and the RabbitMQ nodes."""

    def __init__(self, project: str, env: Path, override: Path, admin_url: str) -> None:
        self.project = project
        self.admin_url = admin_url  # the players log in as the broker's admin, listing the three nodes
        self.base = ["docker", "compose", "-p", project, "--env-file", str(env),
                     "-f", str(ROOT / "docker-compose.yml"), "-f", str(ROOT / "docker-compose.cluster.yml"),
                     "-f", str(override)]

    def rabbit(self, node: str, *command: str, timeout: float = 60) -> str:
        """A RabbitMQ CLI command in a node's container (tried again while the cluster settles)."""
        deadline = time.monotonic() + timeout
        while True:
            out = self.compose("exec", "-T", node, *command, check=False, timeout=120)
            if out.returncode == 0:
                return out.stdout
            assert out.returncode != 64, f"{' '.join(command)}: {out.stderr[-2000:]}"  # a usage error
            said = out.stdout[-2000:] + out.stderr[-2000:]
            assert time.monotonic() < deadline, f"{node}: {' '.join(command)}:\n{said}"
            time.sleep(2)

    def cluster_status(self, node: str) -> dict:
        return json.loads(self.rabbit(node, "rabbitmq-diagnostics", "-q", "cluster_status", "--formatter", "json"))

    def queues(self, node: str = "rabbitmq") -> dict[str, dict[str, str]]:
        """Every queue as the node lists it: type, members, online (members running now), leader."""
        columns = ("type", "members", "online", "leader")
        out = self.rabbit(node, "rabbitmqctl", "-q", "list_queues", "--formatter", "json", "name", *columns)
        return {row["name"]: {c: row.get(c) for c in columns} for row in json.loads(out)}

    def nodes_healthy(self, nodes: tuple[str, ...] = NODES, timeout: float = 180) -> float:
        started = time.monotonic()
        while (states := {n: self.states().get(n) for n in nodes}) != {n: "running/healthy" for n in nodes}:
            assert time.monotonic() - started < timeout, f"the nodes are {states} after {timeout} s:\n{self.logs()}"
            time.sleep(1)
        return time.monotonic() - started

    def diagnosis(self) -> str:
        """What the engines and the nodes said last, and the containers' states (for a failure's message)."""
        said = [f"--- engine-{n}\n" + self.engine_log(n)[-2500:] for n in self.running_engines()]
        for node in NODES:
            said.append(f"--- {node}\n" + self.compose("logs", "--no-color", "--tail", "25", node, check=False,
                                                         timeout=60).stdout[-3000:])
        return "\n".join(said) + f"\n{self.states()}"

    def node_of_engine(self, n: int) -> str:
        """The RabbitMQ node (its service) that engine n is connected to."""
        address = subprocess.run(
            ["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
             self.engine_name(n)], capture_output=True, text=True, timeout=60).stdout.split()
        deadline = time.monotonic() + 60
        while True:
            out = self.rabbit("rabbitmq", "rabbitmqctl", "-q", "list_connections", "--no-table-headers",
                              "user", "peer_host", "pid")
            nodes = {re.search(r"<rabbit@([\w-]+)\.", pid).group(1)  # the connection's process names its node
                     for user, host, pid in (line.split("\t") for line in out.splitlines() if line.count("\t") == 2)
                     if user == "avalon-engine" and host in address}
            if len(nodes) == 1:
                return nodes.pop()
            assert time.monotonic() < deadline, f"engine-{n} ({address}) has connections on {nodes}:\n{out}"
            time.sleep(1)


def test_a_game_goes_on_while_the_rabbitmq_node_its_engine_uses_is_stopped(cluster):
    # the override: the engine and the gateways list the three nodes; broker-users keeps the first and
    # waits for the three to be healthy (a cluster of three)
    config = json.loads(cluster.compose("--profile", "telegram", "--profile", "email", "config", "--format",
                                        "json", timeout=60).stdout)["services"]
    for service in ("engine", "telegram", "email"):
        hosts = [re.search(r"@([\w-]+):5672/$", url).group(1)
                 for url in config[service]["environment"]["AMQP_URL"].split(",")]
        assert hosts == list(NODES), (service, config[service]["environment"]["AMQP_URL"])
    assert "," not in config["broker-users"]["environment"]["AMQP_URL"]
    assert {n: c["condition"] for n, c in config["broker-users"]["depends_on"].items() if n in NODES} == {
        n: "service_healthy" for n in NODES}

    took = cluster.up_until_healthy(timeout=300)
    served, evened = cluster.sharing([2, 2, 2])
    print(f"\nthree nodes and three engines: the engines healthy {took:.1f} s after `up -d`, "
          f"the partitions evened out {evened:.1f} s later: {served}")
    for node in NODES:
        status = cluster.cluster_status(node)
        assert sorted(status["running_nodes"]) == sorted(status["disk_nodes"]) == [f"rabbit@{n}" for n in NODES], \
            (node, status["running_nodes"], status["disk_nodes"])
    queues = cluster.queues()
    everywhere = sorted(f"rabbit@{n}" for n in NODES)
    for name in COMMAND_QUEUES:  # declared by broker-users once the cluster had formed: a member on each node
        assert queues[name]["type"] == "quorum", (name, queues[name])
        assert sorted(queues[name]["members"]) == sorted(queues[name]["online"]) == everywhere, (name, queues[name])
    leaders = {queues[name]["leader"] for name in COMMAND_QUEUES}
    print(f"command queues: 3 members each, leaders on {sorted(leaders)}; avalon.dead: {queues.get('avalon.dead')}")

    game_id = "cluster-game"
    partition = partition_of(game_id, PARTITIONS)
    queue_name = COMMAND_QUEUES[partition]
    playing = Playing(cluster, game_id, 1, 2)
    try:
        playing.paused(1)
        engine, _ = cluster.server_of(partition)
        node = cluster.node_of_engine(engine)
        leader = cluster.queues(node)[queue_name]["leader"]
        print(f"partition {partition} ({queue_name}, leader {leader}) is served by engine-{engine}, connected to "
              f"{node}: stopping {node}")
        started = time.monotonic()
        stopping = subprocess.Popen([*cluster.base, "stop", node], cwd=ROOT, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
        playing.go(1)  # the second quest is played as the node shuts down: commands in flight
        assert stopping.wait(timeout=120) == 0, f"docker compose stop {node} failed"
        stopped = time.monotonic() - started
        try:
            playing.paused(2)
            playing.go(2)  # and the rest of the game without the node
            game = playing.result(timeout=240)
        except AssertionError as error:
            raise AssertionError(f"{error}\n{cluster.diagnosis()}") from None
        played = time.monotonic() - started
    finally:
        playing.close()
    print(f"{node} stopped in {stopped:.1f} s, the game ended {played:.1f} s after the stop began; the players saw "
          f"{len(game['duplicates'])} event(s) twice; the bus sent {sum('sent again' in line for line in playing.err)} "
          f"command(s) again, cut off by the stop")
    states = cluster.states()
    assert states[node].startswith("exited"), states
    code = subprocess.run(["docker", "inspect", "-f", "{{.State.ExitCode}}", f"{cluster.project}-{node}-1"],
                          capture_output=True, text=True, timeout=60).stdout.strip()
    assert code == "0", f"{node} did not stop cleanly (exit status {code}: killed at the end of its stop_grace_period?)"
    assert cluster.running_engines() == list(range(1, ENGINES + 1)), f"no engine died with the node: {states}"
    lost = cluster.engine_log(engine)
    assert "RabbitMQ connection lost" in lost and "RabbitMQ connection back" in lost, lost[-3000:]
    survivors = tuple(n for n in NODES if n != node)
    during = cluster.queues(survivors[0])[queue_name]
    assert sorted(during["online"]) == sorted(f"rabbit@{n}" for n in survivors), during
    assert during["leader"] != f"rabbit@{node}", during

    # the node comes back and rejoins: every command queue has its three members online again
    back = time.monotonic()
    cluster.compose("start", node, timeout=180)
    rejoined = cluster.nodes_healthy()
    deadline = time.monotonic() + 60
    while not all(sorted((q := cluster.queues(node))[name]["online"]) == everywhere for name in COMMAND_QUEUES):
        assert time.monotonic() < deadline, {name: q[name] for name in COMMAND_QUEUES}
        time.sleep(1)
    print(f"{node} started again: healthy in the cluster {rejoined:.1f} s later, every command queue's three "
          f"members online {time.monotonic() - back:.1f} s after the start")
    assert sorted(cluster.cluster_status(node)["running_nodes"]) == everywhere

    assert game["winner"] in ("good", "evil") and game["quests"] >= 3, game
    assert {"game_started", "role_assigned", "quest_resolved", "game_ended"} <= set(game["kinds"]), game
    for locale, count in game["rendered"].items():
        assert count == game["events"], f"{locale}: {count} of {game['events']} events rendered in the image"
    assert game["gaps"] == [], f"events lost on the way (last seen, prev_seq, seq): {game['gaps']}"

    assert_applied_once_in_order(cluster.in_engine("avalon", "export", game_id, n=engine))
    assert all(s.startswith("running/healthy") for k, s in cluster.states().items() if k.startswith("engine-"))
