// The lab's Java client: a consumer application, a producer feeding it, and topic creation.
// Compiled by rebalance_doctor/lab/java_build.py against the Kafka release under test.
//
//   java LabClient consumer <client.properties> <control-file>
//   java LabClient producer <client.properties> <topic> <records-per-second>
//   java LabClient create-topic <client.properties> <topic> <partitions>
//   java LabClient coordinator <client.properties> <group>      (prints the node id of the group's coordinator)
//
// <topic> (and lab.topic) may name several topics, comma-separated: the consumer subscribes to all of them,
// the producer writes to each in turn, create-topic creates each with <partitions> partitions.
// Faults come from outside: the lab signals the process (SIGTERM, SIGKILL, SIGSTOP) or writes a
// command into the control file, which the poll loop reads between batches ("stall <ms>": the
// next batch takes that long, as a slow downstream call would; "throw": processing fails with an
// exception the application does not catch, and the process exits; "rebalance": the application asks
// its group to rebalance, KafkaConsumer#enforceRebalance, as one balancing by load does when it shifts).
// lab.poll.retry=true: a poll() that throws (a SyncGroup the coordinator failed) is logged and polled again a
// second later, as many applications' loops do; by default the exception ends the application.
import java.nio.file.*;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public class LabClient {
    private static final Logger log = LoggerFactory.getLogger("com.example.orders.OrdersProcessor");

    public static void main(String[] args) throws Exception {
        Properties[] loaded = load(args[1]);
        Properties props = loaded[0], lab = loaded[1];
        switch (args[0]) {
            case "consumer": consume(props, lab, Paths.get(args[2])); break;
            case "producer": produce(props, args[2], Integer.parseInt(args[3])); break;
            case "create-topic": createTopic(props, args[2], Integer.parseInt(args[3])); break;
            case "coordinator": coordinator(props, args[2]); break;
            default: throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    static void consume(Properties props, Properties lab, Path control) throws Exception {
        String topic = lab.getProperty("lab.topic", "orders");
        long recordMs = Long.parseLong(lab.getProperty("lab.record.ms", "0"));
        boolean retryPoll = Boolean.parseBoolean(lab.getProperty("lab.poll.retry", "false"));
        props.putIfAbsent("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        props.putIfAbsent("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props);
        AtomicBoolean closing = closeOnShutdown("consumer", consumer::wakeup, log);
        consumer.subscribe(List.of(topic.split(",")), new ConsumerRebalanceListener() {
            public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                log.info("Partitions revoked: {}", parts);
            }
            public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                log.info("Partitions assigned: {}", parts);
            }
        });
        log.info("Consumer started for topic {}", topic);
        long processed = 0, lastReport = System.currentTimeMillis();
        try {
            while (!closing.get()) {
                ConsumerRecords<String, String> records;
                try {
                    records = consumer.poll(Duration.ofMillis(500));
                } catch (WakeupException e) {
                    throw e;
                } catch (KafkaException e) {
                    if (!retryPoll) throw e;
                    // what many applications do: log the failed poll, back off a second and poll again (the
                    // consumer rejoins)
                    log.warn("Polling failed, polling again in 1 s: {}", e.toString());
                    Thread.sleep(1000);
                    continue;
                }
                for (ConsumerRecord<String, String> r : records) {
                    if (recordMs > 0) Thread.sleep(recordMs);
                    processed++;
                }
                String command = readControl(control);
                if (command.equals("rebalance")) {
                    // what an application balancing by load does when the load shifts
                    log.info("Load shifted, asking the group to rebalance");
                    consumer.enforceRebalance();
                } else {
                    obey(command, records.count(), log);
                }
                if (System.currentTimeMillis() - lastReport >= 10000) {
                    log.info("Processed {} records in the last {} s", processed, (System.currentTimeMillis() - lastReport) / 1000);
                    processed = 0;
                    lastReport = System.currentTimeMillis();
                }
            }
        } catch (WakeupException e) {
            // close() below: the shutdown hook woke the poll
        } finally {
            consumer.close(Duration.ofSeconds(10));
            log.info("Consumer closed");
        }
    }

    // The lab's command for the batch just polled: "stall <ms>" (a slow downstream call) or "throw" (an
    // exception the application does not catch). Shared by the share consumer (LabShare).
    /** A client's properties file: [Kafka's settings, the lab's own options (lab.*, never given to Kafka)]. */
    static Properties[] load(String path) throws java.io.IOException {
        Properties props = new Properties();
        try (var in = Files.newInputStream(Paths.get(path))) { props.load(in); }
        Properties lab = new Properties();
        for (String key : props.stringPropertyNames()) {
            if (key.startsWith("lab.")) lab.setProperty(key, (String) props.remove(key));
        }
        return new Properties[] {props, lab};
    }

    /** On SIGTERM (the orchestrator's stop): say so, end the poll loop and wake its poll, and wait for the loop to
     *  close its consumer. Returns the flag the loop runs while it is false. */
    static AtomicBoolean closeOnShutdown(String what, Runnable wakeup, Logger log) {
        AtomicBoolean closing = new AtomicBoolean(false);
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            log.info("Shutdown requested, closing the {}", what);
            closing.set(true);
            wakeup.run();
            try { main.join(20000); } catch (InterruptedException e) { /* exiting anyway */ }
        }));
        return closing;
    }

    static void obey(String command, int batch, Logger log) throws InterruptedException {
        if (command.startsWith("stall ")) {
            long ms = Long.parseLong(command.substring(6).trim());
            log.info("Calling the downstream service for the batch of {} records", batch);
            Thread.sleep(ms);
            log.info("Downstream service answered after {} ms", ms);
        } else if (command.equals("throw")) {
            throw new IllegalStateException("Downstream service rejected record batch: schema mismatch");
        }
    }

    static String readControl(Path control) {
        try {
            if (!Files.exists(control)) return "";
            String text = Files.readString(control).trim();
            Files.delete(control);
            return text;
        } catch (Exception e) {
            return "";
        }
    }

    static void produce(Properties props, String topic, int perSecond) throws Exception {
        props.putIfAbsent("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        props.putIfAbsent("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        String[] topics = topic.split(",");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            Runtime.getRuntime().addShutdownHook(new Thread(producer::flush));
            long n = 0;
            while (true) {
                for (int i = 0; i < perSecond; i++, n++) {
                    producer.send(new ProducerRecord<>(topics[(int) (n % topics.length)], "order-" + (n % 997),
                                                       "{\"order\":" + n + "}"));
                }
                Thread.sleep(1000);
            }
        }
    }

    static void coordinator(Properties props, String group) throws Exception {
        try (Admin admin = Admin.create(props)) {
            ConsumerGroupDescription described = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            System.out.println(described.coordinator().id());
        }
    }

    static void createTopic(Properties props, String topic, int partitions) throws Exception {
        try (Admin admin = Admin.create(props)) {
            List<NewTopic> created = new ArrayList<>();
            for (String name : topic.split(",")) created.add(new NewTopic(name, partitions, (short) 1));
            admin.createTopics(created).all().get();
            // An incident happens in a cluster that has been running: __consumer_offsets exists and its
            // coordinators are loaded before the scenario's clock starts (a fresh cluster's first
            // FindCoordinator creates the topic, and the first joins are answered NOT_COORDINATOR).
            long end = System.currentTimeMillis() + 90000;
            while (true) {
                try {
                    admin.listConsumerGroupOffsets("lab-warmup").partitionsToOffsetAndMetadata().get();
                    break;
                } catch (Exception e) {
                    if (System.currentTimeMillis() > end) throw e;
                    Thread.sleep(500);
                }
            }
        }
    }
}
