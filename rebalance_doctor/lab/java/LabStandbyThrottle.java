// lab: since 3.7.0
// A restoring client whose disk or network is slow: every batch a standby or warmup task loads into its
// state store is followed by a pause (lab.restore.delay.ms), so that its changelogs can grow faster than
// it restores them. Installed by LabStreams through reflection: StandbyUpdateListener (KIP-988) is 3.7's,
// and LabStreams also compiles against older releases.
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.processor.StandbyUpdateListener;
import org.apache.kafka.streams.processor.TaskId;

public class LabStandbyThrottle implements StandbyUpdateListener {
    private final long delayMs;

    private LabStandbyThrottle(long delayMs) {
        this.delayMs = delayMs;
    }

    public static void install(KafkaStreams streams, long delayMs) {
        streams.setStandbyUpdateListener(new LabStandbyThrottle(delayMs));
    }

    @Override
    public void onUpdateStart(TopicPartition partition, String storeName, long startingOffset) { }

    @Override
    public void onBatchLoaded(TopicPartition partition, String storeName, TaskId taskId, long batchEndOffset,
                              long batchSize, long currentEndOffset) {
        try {
            Thread.sleep(delayMs);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void onUpdateSuspended(TopicPartition partition, String storeName, long storeOffset, long currentEndOffset,
                                  SuspendReason reason) { }
}
