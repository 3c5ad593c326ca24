"""Stories for issue 17's rules, in Kafka's own wording (3.6 templates unless said), on top of tests/stories.py.

Each function writes what the named Kafka class logs for one situation; tests/test_rules_issue17.py
analyses them and says which rule must (not) head a chain, and why.
"""

from __future__ import annotations

from tests.stories import AC, COORD, GC, Broker, ClassicGroup, Consumer, Story, uuid

NODE = {1: "broker-1:9092 (id: 2147483646 rack: null)", 2: "broker-2:9092 (id: 2147483645 rack: null)",
        3: "broker-3:9092 (id: 2147483644 rack: null)"}


# -- the coordinator -----------------------------------------------------------------------------------
def load(story: Story, broker_id: int, gen: int) -> None:
    story.write(f"broker-{broker_id}/server.log", "INFO", GC,
                f"[GroupCoordinator {broker_id}]: Loading group metadata for {story.group} with generation {gen}",
                "group-metadata-manager-0")


def unload(story: Story, broker_id: int, gen: int) -> None:
    story.write(f"broker-{broker_id}/server.log", "INFO", GC,
                f"[GroupCoordinator {broker_id}]: Unloading group metadata for {story.group} with generation {gen}",
                "group-metadata-manager-0")


def expire_on(story: Story, broker_id: int, member: str) -> None:
    story.write(f"broker-{broker_id}/server.log", "INFO", GC,
                f"[GroupCoordinator {broker_id}]: Member {member} in group {story.group} has failed, removing it "
                "from the group", "executor-Heartbeat")


def lost_coordinator(c: Consumer, broker_id: int, cause: str = "error response NOT_COORDINATOR",
                     disconnected: str = "false") -> None:
    c.say(f"Group coordinator {NODE[broker_id]} is unavailable or invalid due to cause: {cause}. isDisconnected: "
          f"{disconnected}. Rediscovery will be attempted.", logger=AC)


def found_coordinator(c: Consumer, broker_id: int) -> None:
    c.say(f"Discovered group coordinator {NODE[broker_id]}", logger=AC)


def three_members(story: Story, session_ms: int = 10000, broker: Broker | None = None):
    group = ClassicGroup(story, broker, topic=story.group)
    members = [group.consumer(f"node{i}", f"consumer-{story.group}-{i}", i) for i in (1, 2, 3)]
    for c in members:
        c.start({"session.timeout.ms": str(session_ms), "heartbeat.interval.ms": str(session_ms // 3)})
    group.start_with(*members)
    return group, members


def coordinator_moved_members_lost(session_ms: int = 10000) -> Story:
    """Broker 2 loads the group; the members cannot reach it (their requests time out) and are all removed
    exactly session.timeout.ms after the load; they rejoin once they get through."""
    story = Story("payments")
    group, members = three_members(story, session_ms)
    group.tick(60)
    unload(story, 1, 40)
    story.later(400)
    load(story, 2, 40)
    for c in members:
        story.later(30)
        lost_coordinator(c, 1)
        found_coordinator(c, 2)
    for _ in range(2):
        story.later(session_ms / 2)
        for c in members:
            lost_coordinator(c, 2, "null", "true")
            found_coordinator(c, 2)
    group.clock = 60.4 + session_ms / 1000
    story.at(group.clock)
    for c in members:
        expire_on(story, 2, c.member)
    return story


def broker_only_expiry_after_load() -> Story:
    """051's shape: only the coordinator's log; it unloads the group, loads it again minutes later, and two
    members are removed at the same instant 30 s after the load (their session timeout is not logged)."""
    story = Story("scheduler")
    story.at(0)
    unload(story, 0, 5051)
    story.at(210)
    load(story, 0, 5052)
    story.at(240)
    for n in (1, 2):
        expire_on(story, 0, f"{uuid(n)}-{uuid(n + 10)}")
    return story


def expiry_long_after_a_load() -> Story:
    """A load, then, two minutes later, one member removed on session timeout while the others go on: its
    deadline was not the load's (it heartbeated the new coordinator, then stopped)."""
    story = Story("payments")
    group, members = three_members(story, 10000, Broker(story))
    group.tick(30)
    load(story, 1, 40)
    for c in members:
        story.later(20)
        lost_coordinator(c, 2)
        found_coordinator(c, 1)
    group.tick(120)
    group.expire(members[2])
    return story


def coordinator_churn(moves: int) -> Story:
    """The group's __consumer_offsets partition changes leader `moves` times; the members follow each time."""
    story = Story("orders")
    group, members = three_members(story, 45000)
    at = 0.0
    holder = 1
    for _ in range(moves):
        at += 45
        story.at(at)
        target = 2 if holder != 2 else 3
        move(story, members, holder, target)
        holder = target
    return story


def broker_restart_loop(restarts: int) -> Story:
    """The coordinator's broker (1) restarts `restarts` times: the group moves to broker 2 and, after the
    preferred leader election, back to broker 1; the members follow each time. broker-1's clock is 1.5 s
    behind: its unload at the first shutdown is logged after broker 2's load."""
    story = Story("orders")
    group, members = three_members(story, 45000)
    at = 0.0
    for restart in range(restarts):
        for left, to in ((1, 2), (2, 1)):
            at += 45
            story.at(at)
            move(story, members, left, to, unload_late=restart == 0 and left == 1)
    return story


def move(story: Story, members, left: int, to: int, unload_late: bool = False) -> None:
    """The group moves from broker `left` to broker `to` and every member follows; `unload_late`: `left`'s
    clock is behind, so its unload is logged 1.5 s after the load."""
    if unload_late:
        load(story, to, 40)
        story.later(1500)
        unload(story, left, 40)
    else:
        unload(story, left, 40)
        story.later(300)
        load(story, to, 40)
    for c in members:
        story.later(40)
        lost_coordinator(c, left)
        found_coordinator(c, to)


def not_coordinator_loop(times: int) -> Story:
    """A member asks the same broker again and again and is told it is not the coordinator (JoinGroup)."""
    story = Story("payments")
    group, members = three_members(story, 10000)
    c = members[0]
    for i in range(times):
        group.tick(5)
        c.joining()
        c.say("JoinGroup failed: This is not the correct coordinator. Marking coordinator unknown. Sent generation "
              f"was {c.generation(40)}", logger=AC)
        lost_coordinator(c, 1)
        found_coordinator(c, 1)
    return story


__all__ = ["COORD", "coordinator_churn", "coordinator_moved_members_lost", "broker_only_expiry_after_load",
           "expiry_long_after_a_load", "not_coordinator_loop"]


# -- static members --------------------------------------------------------------------------------------
def static_member_away(away_s: float, session_ms: int = 10000, alive: bool = False) -> Story:
    """Two static members sharing client.id consumer-search-1 (on node2 and node3), the logs starting once
    the group is stable (node3's member id is never in its own log). node3 closes (a static member sends no
    LeaveGroup: 2.8+ logs "consumer pro-actively leaving the group") and starts again away_s later; past
    session.timeout.ms the coordinator removes it and its return is a new member. `alive`: it does not
    restart, its log goes on (a pause), and the coordinator removes it all the same."""
    story = Story("search")
    broker = Broker(story)
    group = ClassicGroup(story, broker, topic="search", generation=1)
    keep = group.consumer("node2", "consumer-search-1", 2, instance="search-0")
    gone = group.consumer("node3", "consumer-search-1", 3, instance="search-1")
    group.start_with(keep, gone)
    group.tick(5)
    keep.processing("processed a batch")
    gone.processing("processed a batch")
    group.tick(10)
    if alive:
        gone.say("Revoke previously assigned partitions search-3", logger="org.apache.kafka.clients.consumer."
                 "internals.ConsumerRebalanceListenerInvoker")
    else:
        gone.say("Resetting generation and member id due to: consumer pro-actively leaving the group")
        gone.request_join("consumer pro-actively leaving the group")
    if away_s * 1000 < session_ms:
        group.tick(away_s)
        back = Consumer(story, "node3", "consumer-search-1", f"consumer-search-1-{uuid(33)}", "search-1")
        back.start({"group.instance.id": "search-1", "session.timeout.ms": str(session_ms)})
        back.joining()
        broker.static_back("search-1", gone.member)
        back.joined(group.gen)
        back.synced(group.gen)
        return story
    group.tick(session_ms / 1000)
    group.expire(gone)
    if alive:
        group.tick(5)
        gone.heartbeat_unknown(group.gen - 1)
        gone.lost()
        return story
    group.tick(away_s - session_ms / 1000)
    back = Consumer(story, "node3", "consumer-search-1", f"consumer-search-1-{uuid(33)}", "search-1")
    back.start({"group.instance.id": "search-1", "session.timeout.ms": str(session_ms)})
    group.join(back, start=False)
    return story


def static_member_away_broker_only() -> Story:
    """Only the coordinator's log: a static member joins (its group instance id is in the reason), is removed
    on session timeout, and the same group.instance.id joins again with a new member id."""
    story = Story("search")
    broker = Broker(story)
    first = f"consumer-search-1-{uuid(3)}"
    story.at(0)
    broker.prepare(4, f"Adding new member {first} with group instance id Some(search-1); client reason: "
                      "need to re-join with the given member-id")
    broker.stabilized(5, 2)
    story.at(120)
    broker.expired(first, 5)
    broker.stabilized(6, 1)
    story.at(150)
    broker.prepare(6, f"Adding new member consumer-search-1-{uuid(33)} with group instance id Some(search-1); "
                      "client reason: need to re-join with the given member-id")
    broker.stabilized(7, 2)
    return story


# -- Kafka Connect: the herder's config offsets against the assignment's ---------------------------------
WC = "org.apache.kafka.connect.runtime.distributed.WorkerCoordinator"
DH = "org.apache.kafka.connect.runtime.distributed.DistributedHerder"


class Worker:
    """A Connect worker's WorkerCoordinator and DistributedHerder lines (3.6 wording)."""

    def __init__(self, story: Story, host: str, n: int):
        self.story, self.host, self.n = story, host, n
        self.client = f"connect-{n}"
        self.member = f"connect-{n}-{uuid(100 + n)}"
        self.offset = -1

    def say(self, msg: str, logger: str = DH) -> None:
        self.story.write(f"{self.host}/connect.log", "INFO", logger,
                         f"[Worker clientId={self.client}, groupId={self.story.group}] {msg}", "DistributedHerder-connect-1")

    def rebalance(self, gen: int, leader: "Worker", assignment_offset: int, tasks: list[str], read_to: int | None = None):
        """Join and sync generation `gen`, then the herder's check of its config offset against the assignment's:
        behind, it reads to the end (up to `read_to`, the assignment's offset if not given)."""
        self.say("Rebalance started", WC)
        self.say("(Re-)joining group", WC)
        self.story.later(5)
        generation = f"Generation{{generationId={gen}, memberId='{self.member}', protocol='sessioned'}}"
        self.say(f"Successfully joined group with generation {generation}", WC)
        self.say(f"Successfully synced group in generation {generation}", WC)
        self.say(f"Joined group at generation {gen} with protocol version 2 and got assignment: Assignment{{error=0, "
                 f"leader='{leader.member}', leaderUrl='http://{leader.host}:8083/', offset={assignment_offset}, "
                 f"connectorIds=[], taskIds=[{', '.join(tasks)}], revokedConnectorIds=[], revokedTaskIds=[], delay=0}} "
                 "with rebalance delay: 0")
        if self.offset < assignment_offset:
            self.say(f"Current config state offset {self.offset} is behind group assignment {assignment_offset}, "
                     "reading to end of config log")
            self.story.later(40)
            self.offset = assignment_offset if read_to is None else read_to
            self.say(f"Finished reading to end of log and updated config snapshot, new config log offset: {self.offset}")
        if self.offset != assignment_offset:
            self.say(f"Current config state offset {self.offset} does not match group assignment {assignment_offset}. "
                     "Forcing rebalance.")
            return False
        self.say(f"Starting connectors and tasks using config offset {assignment_offset}")
        self.say("Finished starting connectors and tasks")
        return True


def connect_cluster(story: Story, workers: int = 2) -> list[Worker]:
    return [Worker(story, f"worker-{i}", i) for i in range(1, workers + 1)]


def connect_config_stuck(read_to: int, times: int = 4):
    """worker-2 reads the config topic only up to `read_to` (-1: nothing) while the leader's assignments say 12:
    it forces a rebalance after every assignment."""
    story = Story("connect-cluster")
    leader, follower = connect_cluster(story)
    leader.offset = 12
    story.at(0)
    leader.rebalance(1, leader, 12, ["jdbc-sink-0", "jdbc-sink-1"])
    for k in range(times):
        story.at(10 + 3 * k)
        leader.rebalance(2 + k, leader, 12, ["jdbc-sink-0"])
        follower.rebalance(2 + k, leader, 12, ["jdbc-sink-1"], read_to=read_to)
    story.at(60)
    leader.say("Finished starting connectors and tasks")
    return story


def connect_config_catch_up():
    """A new worker joins behind the leader's config offset, reads to the end and starts: healthy."""
    story = Story("connect-cluster")
    leader, newcomer = connect_cluster(story)
    leader.offset = 12
    story.at(0)
    leader.rebalance(1, leader, 12, ["jdbc-sink-0", "jdbc-sink-1"])
    story.at(30)
    newcomer.offset = 3
    leader.rebalance(2, leader, 12, ["jdbc-sink-0"])
    newcomer.rebalance(2, leader, 12, ["jdbc-sink-1"])
    return story


def connect_config_read_past_once():
    """A connector is created during a rebalance: a follower reads past the assignment's offset and forces one
    rebalance, whose assignment carries the new offset: it starts. Healthy."""
    story = Story("connect-cluster")
    leader, follower = connect_cluster(story)
    leader.offset = follower.offset = 12
    story.at(0)
    leader.rebalance(1, leader, 12, ["jdbc-sink-0"])
    follower.rebalance(1, leader, 12, ["jdbc-sink-1"])
    story.at(20)
    follower.offset = 15
    leader.rebalance(2, leader, 12, ["jdbc-sink-0"])
    follower.rebalance(2, leader, 12, ["jdbc-sink-1"])
    story.at(21)
    leader.offset = 15
    leader.rebalance(3, leader, 15, ["jdbc-sink-0", "s3-sink-0"])
    follower.rebalance(3, leader, 15, ["jdbc-sink-1"])
    return story


# -- Kafka Streams: threads that die -----------------------------------------------------------------------
def streams_thread_dies(then: str = "nothing"):
    """Two instances of one application; at 60 s the StreamThread of app-1 dies with an exception. `then`:
    "nothing" (the deprecated handler: the thread stays dead), "replaced" (REPLACE_THREAD: a new thread),
    "shutdown-client" (SHUTDOWN_CLIENT: the instance closes), "close" (no error: the instance is closed)."""
    from tests.stories import KS as KAFKA_STREAMS
    from tests.stories import ST
    from tests.stories import StreamsInstance

    story = Story("ledger")
    a = StreamsInstance(story, "app-1", "ledger", 1, 11)
    b = StreamsInstance(story, "app-2", "ledger", 2, 12)
    story.at(0)
    for i in (a, b):
        i.client_state("CREATED", "REBALANCING")
        i.thread_state("CREATED", "STARTING")
    story.at(5)
    for i in (a, b):
        i.thread_state("STARTING", "PARTITIONS_ASSIGNED")
        i.thread_state("PARTITIONS_ASSIGNED", "RUNNING")
        i.client_state("REBALANCING", "RUNNING")
    story.at(60)
    if then == "close":
        a.client_state("RUNNING", "PENDING_SHUTDOWN")
        a.thread_state("RUNNING", "PENDING_SHUTDOWN")
    else:
        story.write(a.consumer.path, "ERROR", ST, f"stream-thread [{a.thread}] Encountered the following unexpected "
                    "Kafka exception during processing, this usually indicate Streams internal errors:\n"
                    f"org.apache.kafka.streams.errors.StreamsException: stream-thread [{a.thread}] Failed to rebalance.\n"
                    "\tat org.apache.kafka.streams.processor.internals.StreamThread.pollPhase(StreamThread.java:1025)",
                    a.thread)
        if then == "replaced":
            story.write(a.consumer.path, "ERROR", KAFKA_STREAMS, f"stream-client [{a.node}] Replacing thread in the "
                        "streams uncaught exception handler", a.thread)
        if then == "shutdown-client":
            a.client_state("RUNNING", "PENDING_ERROR")
        a.thread_state("RUNNING", "PENDING_SHUTDOWN")
    a.consumer.leave("the consumer is being closed")
    a.thread_state("PENDING_SHUTDOWN", "DEAD")
    if then == "replaced":
        a.thread = f"{a.node}-StreamThread-2"
        a.thread_state("CREATED", "STARTING")
    if then == "shutdown-client":
        a.client_state("PENDING_ERROR", "ERROR")
    if then == "close":
        a.client_state("PENDING_SHUTDOWN", "NOT_RUNNING")
    story.at(62)
    b.thread_state("RUNNING", "PARTITIONS_REVOKED")
    b.thread_state("PARTITIONS_REVOKED", "RUNNING")
    return story


def connect_worker_leaves(back_after_s: float | None, delay_ms: int = 60000):
    """Three workers; worker-3 (running jdbc-sink-2) is removed on session timeout at 30 s; the leader holds its work
    for `delay_ms` (assignments with a delay); `back_after_s`: worker-3 joins again that long after (None: never).
    The delay expires and the work is given out (delay 0)."""
    story = Story("connect-cluster")
    workers = connect_cluster(story, 3)
    leader = workers[0]
    for w in workers:
        w.offset = 12
    story.at(0)
    for w, task in zip(workers, ("jdbc-sink-0", "jdbc-sink-1", "jdbc-sink-2")):
        w.rebalance(1, leader, 12, [task])
        w.say(f"Starting task {task}")
    lost = workers[2]
    story.at(20)
    lost.say("Kafka Connect stopping", "org.apache.kafka.connect.runtime.Connect")
    story.at(30)
    story.write("broker-1/server.log", "INFO", GC, f"[GroupCoordinator 1]: Member {lost.member} in group "
                f"{story.group} has failed, removing it from the group", "executor-Heartbeat")
    story.write("broker-1/server.log", "INFO", GC, f"[GroupCoordinator 1]: Preparing to rebalance group {story.group} "
                f"in state PreparingRebalance with old generation 1 (__consumer_offsets-17) (reason: removing member "
                f"{lost.member} on heartbeat expiration)", "executor-Heartbeat")
    story.at(31)
    for w in workers[:2]:
        _delayed(w, 2, leader, delay_ms)
    generation = 3
    if back_after_s is not None:
        story.at(30 + back_after_s)
        lost.member = f"connect-3-{uuid(333)}"
        for w in workers:
            _delayed(w, generation, leader, delay_ms - int(back_after_s * 1000))
        generation += 1
    story.at(31 + delay_ms / 1000)
    for w in (workers if back_after_s is not None else workers[:2]):
        w.rebalance(generation, leader, 12, ["jdbc-sink-2"] if w is (lost if back_after_s is not None else leader) else [])
    return story


def _delayed(w: Worker, gen: int, leader: Worker, delay_ms: int) -> None:
    w.say("Rebalance started", WC)
    generation = f"Generation{{generationId={gen}, memberId='{w.member}', protocol='sessioned'}}"
    w.say(f"Successfully joined group with generation {generation}", WC)
    w.say(f"Successfully synced group in generation {generation}", WC)
    w.say(f"Joined group at generation {gen} with protocol version 2 and got assignment: Assignment{{error=0, "
          f"leader='{leader.member}', leaderUrl='http://{leader.host}:8083/', offset=12, connectorIds=[], taskIds=[], "
          f"revokedConnectorIds=[], revokedTaskIds=[], delay={delay_ms}}} with rebalance delay: {delay_ms}")


# -- KIP-848 consumer groups: fencing --------------------------------------------------------------------
GMM_LOGGER = "org.apache.kafka.coordinator.group.GroupMetadataManager"
HRM = "org.apache.kafka.clients.consumer.internals.ConsumerHeartbeatRequestManager"
CRLI = "org.apache.kafka.clients.consumer.internals.ConsumerRebalanceListenerInvoker"


def kip848_member(story: Story, host: str, n: int, member: str) -> None:
    story.write(f"{host}/app.log", "INFO", "org.apache.kafka.clients.consumer.internals.ConsumerMembershipManager",
                f"[Consumer clientId=consumer-{story.group}-{n}, groupId={story.group}] Member {member} with epoch 1 "
                "transitioned from JOINING to RECONCILING.", "consumer_background_thread")


def kip848_fenced(how: str = "session", times: int = 1):
    """A KIP-848 group of two members; member 2 is fenced `times` times: "session" (its session expired),
    "rebalance" (it failed to revoke within its rebalance timeout), or "leave" (it leaves on purpose: no fencing)."""
    story = Story("tracking")
    members = {1: "aB3xQ9kLTYu1pZ0vN2mR4w", 2: "xJIlABuKCTwsuReBA17V2Q"}
    story.at(0)
    for n, m in members.items():
        kip848_member(story, f"track-{n}", n, m)
    for k in range(times):
        story.at(60 + 120 * k)
        m = members[2]
        client = f"[Consumer clientId=consumer-tracking-2, groupId=tracking]"
        if how == "leave":
            story.write("track-2/app.log", "INFO", "org.apache.kafka.clients.consumer.internals.ConsumerMembershipManager",
                        f"{client} Member {m} sending leave group heartbeat with epoch -1", "main")
            story.write("broker-1/server.log", "INFO", GMM_LOGGER,
                        f"[GroupCoordinator id=1 topic=__consumer_offsets partition=24] [GroupId tracking] Member {m} "
                        "left the consumer group.", "data-plane-kafka-request-handler-3")
            continue
        reason = ("the member session expired" if how == "session"
                  else f"it failed to revoke partitions within 300000ms")
        story.write("broker-1/server.log", "INFO", GMM_LOGGER,
                    f"[GroupCoordinator id=1 topic=__consumer_offsets partition=24] [GroupId tracking] Member {m} fenced "
                    f"from the group because {reason}.", "group-coordinator-event-processor-1")
        story.later(7500)
        story.write("track-2/app.log", "INFO", HRM, f"{client} ConsumerGroupHeartbeatRequest failed because member {m} "
                    "is unknown. in 0ms: The coordinator is not aware of this member.", "consumer_background_thread")
        story.write("track-2/app.log", "INFO", CRLI, f"{client} Lost previously assigned partitions [tracking-5, "
                    "tracking-8]", "main")
    return story


# -- SyncGroup errors --------------------------------------------------------------------------------------
def sync_store_errors(times: int, gen: int = 4):
    """Three classic members; from generation `gen` the coordinator cannot store the leader's assignment `times`
    times in a row ("error when storing group assignment during SyncGroup"): each time it rebalances again."""
    story = Story("orders")
    group, members = three_members(story)
    leader = members[0]
    for k in range(times):
        story.at(30 + 5 * k)
        story.write("broker-1/server.log", "INFO", GC, f"[GroupCoordinator 1]: Preparing to rebalance group orders in "
                    f"state PreparingRebalance with old generation {gen + k} (__consumer_offsets-17) (reason: error when "
                    f"storing group assignment during SyncGroup (member: {leader.member}))", "data-plane-kafka-request-handler-1")
        for c in members:
            c.joining()
        story.later(200)
        for c in members:
            c.joined(gen + k + 1)
    return story
