// An application's own partition assignor, as teams write them to balance by load or lag: a consumer names it
// in partition.assignment.strategy (LabAssignor) and configures it with its own keys, which Kafka hands every
// assignor (and warns are "supplied but not used" by the consumer itself):
//
//   orders.assignor.lookup.ms   how long each assignment takes (a lookup of every member's load in a slow
//                               store): past max.poll.interval.ms the leader times out while it assigns
//   orders.assignor.rebalance   true: every assignment takes one owned partition away from its owner to give
//                               it to a less loaded member in the followup (load that never stops changing):
//                               each round revokes, so the cooperative followups never end
//   orders.assignor.stats.bytes the size of the load statistics each member sends in its subscription's user
//                               data (the coordinator stores every member's subscription and assignment as one
//                               record of __consumer_offsets at each SyncGroup)
//
// Cooperative (and eager): a partition owned by another member than the one it goes to is only revoked in a
// round, and handed out in the followup, as the COOPERATIVE protocol requires.
import java.util.*;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Configurable;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public class LabAssignor implements ConsumerPartitionAssignor, Configurable {
    private static final Logger log = LoggerFactory.getLogger("com.example.orders.LoadBalancingAssignor");
    private long lookupMs = 0;
    private boolean rebalance = false;
    private int round = 0;
    private int statsBytes = 0;

    @Override
    public void configure(Map<String, ?> configs) {
        Object lookup = configs.get("orders.assignor.lookup.ms");
        if (lookup != null) lookupMs = Long.parseLong(lookup.toString());
        Object moving = configs.get("orders.assignor.rebalance");
        if (moving != null) rebalance = Boolean.parseBoolean(moving.toString());
        Object stats = configs.get("orders.assignor.stats.bytes");
        if (stats != null) statsBytes = Integer.parseInt(stats.toString());
    }

    @Override
    public java.nio.ByteBuffer subscriptionUserData(Set<String> topics) {
        if (statsBytes <= 0) return null;
        byte[] stats = new byte[statsBytes];
        new Random(statsBytes).nextBytes(stats);        // statistics do not compress
        return java.nio.ByteBuffer.wrap(stats);
    }

    @Override
    public String name() {
        return "orders-load-balancing";
    }

    @Override
    public List<RebalanceProtocol> supportedProtocols() {
        return List.of(RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER);
    }

    @Override
    public GroupAssignment assign(Cluster metadata, GroupSubscription group) {
        Map<String, Subscription> subscriptions = group.groupSubscription();
        List<String> members = new ArrayList<>(new TreeSet<>(subscriptions.keySet()));
        round++;
        log.info("Looking up the load of {} members for assignment round {}", members.size(), round);
        if (lookupMs > 0) {
            try {
                Thread.sleep(lookupMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        SortedSet<String> topics = new TreeSet<>();
        for (Subscription s : subscriptions.values()) topics.addAll(s.topics());
        List<TopicPartition> partitions = new ArrayList<>();
        for (String topic : topics) {
            Integer count = metadata.partitionCountForTopic(topic);
            for (int p = 0; count != null && p < count; p++) partitions.add(new TopicPartition(topic, p));
        }
        Map<TopicPartition, String> owner = new HashMap<>();
        for (String member : members) {
            for (TopicPartition tp : subscriptions.get(member).ownedPartitions()) {
                if (partitions.contains(tp) && !owner.containsKey(tp)) owner.put(tp, member);
            }
        }
        Map<String, List<TopicPartition>> assigned = new TreeMap<>();
        for (String member : members) assigned.put(member, new ArrayList<>());
        List<TopicPartition> free = new ArrayList<>();
        for (TopicPartition tp : partitions) {
            String current = owner.get(tp);
            if (current != null) assigned.get(current).add(tp);
            else free.add(tp);
        }
        // Keep it fair: a member holding more than its share gives the surplus up this round (revoked, handed
        // out in the followup), as a sticky assignor does.
        int share = (partitions.size() + members.size() - 1) / Math.max(1, members.size());
        List<TopicPartition> revoked = new ArrayList<>();
        for (List<TopicPartition> held : assigned.values()) {
            while (held.size() > share) revoked.add(held.remove(held.size() - 1));
        }
        for (TopicPartition tp : free) {
            String least = members.get(0);
            for (String member : members) {
                if (assigned.get(member).size() < assigned.get(least).size()) least = member;
            }
            assigned.get(least).add(tp);
        }
        if (rebalance && !owner.isEmpty() && revoked.isEmpty()) {
            // The load moved again: the busiest member gives up a partition to be handed out in the followup.
            String busiest = members.get(round % members.size());
            List<TopicPartition> held = assigned.get(busiest);
            for (TopicPartition tp : new ArrayList<>(held)) {
                if (busiest.equals(owner.get(tp))) {
                    held.remove(tp);
                    revoked.add(tp);
                    break;
                }
            }
        }
        if (!revoked.isEmpty()) log.info("Moving {} to balance the load", revoked);
        Map<String, Assignment> out = new HashMap<>();
        for (Map.Entry<String, List<TopicPartition>> e : assigned.entrySet()) out.put(e.getKey(), new Assignment(e.getValue()));
        return new GroupAssignment(out);
    }
}
