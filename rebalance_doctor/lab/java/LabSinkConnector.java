// The lab's Connect sink: tasks that write what they consume to a file, as FileStreamSink does
// (connect-file is not published for Kafka 4.x). Each task's put() may be told to stall through
// the lab's control file of its worker, as a slow sink would.
import java.io.*;
import java.nio.file.*;
import java.util.*;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.*;

public class LabSinkConnector extends SinkConnector {
    private Map<String, String> config;

    public String version() { return "1.0"; }
    public void start(Map<String, String> props) { config = props; }
    public Class<? extends Task> taskClass() { return LabSinkTask.class; }
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        List<Map<String, String>> out = new ArrayList<>();
        for (int i = 0; i < maxTasks; i++) out.add(config);
        return out;
    }
    public void stop() { }
    public ConfigDef config() {
        return new ConfigDef().define("file", ConfigDef.Type.STRING, "/dev/null", ConfigDef.Importance.LOW, "output file");
    }

    public static class LabSinkTask extends SinkTask {
        private PrintStream out;
        public String version() { return "1.0"; }
        public void start(Map<String, String> props) {
            try { out = new PrintStream(new FileOutputStream(props.getOrDefault("file", "/dev/null"), true)); }
            catch (IOException e) { throw new RuntimeException(e); }
        }
        public void put(Collection<SinkRecord> records) {
            for (SinkRecord r : records) out.println(r.value());
        }
        public void stop() { if (out != null) out.close(); }
    }
}
