// lab: since 4.1.0
// The lab's share-group consumer (KIP-932): a KafkaShareConsumer reading the topic with implicit
// acknowledgement. Compiled only against releases that have it (the "lab: since" line above).
//
//   java LabShare <client.properties> <control-file>
//
// The lab writes "stall <ms>" into the control file to make the next batch slow, or "throw" to make
// processing fail with an exception the application does not catch (the process exits).
import java.nio.file.*;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public class LabShare {
    private static final Logger log = LoggerFactory.getLogger("com.example.orders.OrdersWorker");

    public static void main(String[] args) throws Exception {
        Properties[] loaded = LabClient.load(args[0]);
        Properties props = loaded[0], lab = loaded[1];
        Path control = Paths.get(args[1]);
        String topic = lab.getProperty("lab.topic", "orders");
        props.putIfAbsent("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        props.putIfAbsent("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props);
        AtomicBoolean closing = LabClient.closeOnShutdown("share consumer", consumer::wakeup, log);
        consumer.subscribe(List.of(topic));
        log.info("Share consumer started for topic {}", topic);
        long processed = 0, lastReport = System.currentTimeMillis();
        try {
            while (!closing.get()) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                processed += records.count();
                LabClient.obey(LabClient.readControl(control), records.count(), log);
                if (System.currentTimeMillis() - lastReport >= 10000) {
                    log.info("Processed {} records in the last {} s", processed, (System.currentTimeMillis() - lastReport) / 1000);
                    processed = 0;
                    lastReport = System.currentTimeMillis();
                }
            }
        } catch (WakeupException e) {
            // close() below: the shutdown hook woke the poll
        } finally {
            consumer.close();
            log.info("Share consumer closed");
        }
    }
}
