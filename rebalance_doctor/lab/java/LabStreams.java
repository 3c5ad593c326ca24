// The lab's Kafka Streams application: counts orders per key in a state store (so tasks have
// changelogs, standbys and warmups), writes the counts to <topic>-counts.
//
//   java LabStreams <streams.properties> <control-file>
//
// lab.handler picks the StreamsUncaughtExceptionHandler: none (Kafka's default), replace
// (REPLACE_THREAD), shutdown-client, shutdown-application. The lab writes "throw" into the control
// file to make the next record's processing fail, or "stall <ms>" to make it slow; "add-thread" and
// "remove-thread" make the application scale its own threads (KafkaStreams#addStreamThread and
// #removeStreamThread, as an operator's endpoint would), from the main thread. lab.restore.delay.ms makes
// its standby and warmup restoration slow (LabStandbyThrottle: a pause after every batch loaded).
import java.nio.file.*;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.*;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.*;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public class LabStreams {
    private static final Logger log = LoggerFactory.getLogger("com.example.orders.OrderCountsApp");

    public static void main(String[] args) throws Exception {
        Properties[] loaded = LabClient.load(args[0]);
        Properties props = loaded[0], lab = loaded[1];
        Path control = Paths.get(args[1]);
        String topic = lab.getProperty("lab.topic", "orders");
        props.putIfAbsent(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        props.putIfAbsent(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());

        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(topic)
            .peek((key, value) -> obey(control))
            .groupByKey()
            .count(Materialized.as("order-counts"))
            .toStream()
            .mapValues(String::valueOf)
            .to(topic + "-counts");

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        String handler = lab.getProperty("lab.handler", "none");
        if (!handler.equals("none")) {
            StreamThreadExceptionResponse response =
                handler.equals("replace") ? StreamThreadExceptionResponse.REPLACE_THREAD
                : handler.equals("shutdown-application") ? StreamThreadExceptionResponse.SHUTDOWN_APPLICATION
                : StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
            streams.setUncaughtExceptionHandler(exception -> {
                log.error("Stream thread failed, responding {}", response, exception);
                return response;
            });
        }
        long restoreDelay = Long.parseLong(lab.getProperty("lab.restore.delay.ms", "0"));
        if (restoreDelay > 0) {
            Class.forName("LabStandbyThrottle").getMethod("install", KafkaStreams.class, long.class)
                .invoke(null, streams, restoreDelay);
        }
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) stopped.countDown();
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            log.info("Shutdown requested, closing Kafka Streams");
            streams.close(Duration.ofSeconds(20));
            stopped.countDown();
        }));
        streams.start();
        log.info("Order counts application started");
        while (!stopped.await(500, java.util.concurrent.TimeUnit.MILLISECONDS)) {
            String command = peekControl(control);
            if (command.equals("add-thread") || command.equals("remove-thread")) {
                try { Files.deleteIfExists(control); } catch (Exception e) { }
                Optional<String> thread = command.equals("add-thread") ? streams.addStreamThread()
                                                                       : streams.removeStreamThread();
                log.info("{}: {}", command.equals("add-thread") ? "Added stream thread" : "Removed stream thread",
                         thread.orElse("none"));
            }
        }
        log.info("Order counts application stopped");
    }

    static String peekControl(Path control) {
        try {
            return Files.exists(control) ? Files.readString(control).trim() : "";
        } catch (Exception e) {
            return "";
        }
    }

    // The processing commands, read by whichever stream thread processes the next record; the thread commands are
    // the main thread's, left where they are.
    static void obey(Path control) {
        String command = peekControl(control);
        if (!command.equals("throw") && !command.startsWith("stall ")) return;
        try {
            Files.delete(control);
        } catch (Exception e) {
            return;       // another thread took it
        }
        if (command.equals("throw")) {
            throw new IllegalStateException("Order with an unknown currency: cannot count it");
        }
        if (command.startsWith("stall ")) {
            try { Thread.sleep(Long.parseLong(command.substring(6).trim())); } catch (InterruptedException e) { }
        }
    }
}
