// A file source for the Connect interop test (tests/jvm/test_connect_interop.py): Maven Central has no
// connect-file 4.4.0, and 4.3.1's does not run on 4.4.0's clients (AppInfoParser moved). Our own code under the
// name Kafka's has, so that the alias FileStreamSource finds it, as Odradek's finds its own, and a task config's
// task.class names it on either kind of worker. Lines of `file` to `topic`, source partition
// {"filename": file}, offset {"position": bytes read}, as Kafka's FileStreamSource.
package org.apache.kafka.connect.file;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceConnector;

public class FileStreamSourceConnector extends SourceConnector {
    private Map<String, String> props;

    @Override public String version() { return "test"; }
    @Override public void start(Map<String, String> props) { this.props = props; }
    @Override public Class<? extends Task> taskClass() { return FileStreamSourceTask.class; }
    @Override public List<Map<String, String>> taskConfigs(int maxTasks) {
        return List.of(new HashMap<>(props));  // as Kafka's own FileStreamSourceConnector: one task, the connector's properties
    }
    @Override public void stop() { }
    @Override public ConfigDef config() {
        // the keys, types, defaults and checks of Kafka's file source (REST validate answers compare them)
        return new ConfigDef()
            .define("file", ConfigDef.Type.STRING, null, ConfigDef.Importance.HIGH,
                    "Source filename. If not specified, the standard input will be used")
            .define("topic", ConfigDef.Type.STRING, ConfigDef.NO_DEFAULT_VALUE, new ConfigDef.NonEmptyString(),
                    ConfigDef.Importance.HIGH, "The topic to publish data to")
            .define("batch.size", ConfigDef.Type.INT, 2000, ConfigDef.Importance.LOW,
                    "The maximum number of records the source task can read from the file each time it is polled");
    }

    // Kafka's file source checks the offsets it is given and manages none elsewhere: the short answer of
    // PATCH/DELETE /offsets; a negative or missing position is refused
    @Override public boolean alterOffsets(Map<String, String> config, Map<Map<String, ?>, Map<String, ?>> offsets) {
        String file = config.get("file");
        if (file == null || file.isEmpty()) {
            throw new ConnectException("Offsets cannot be modified if the 'file' configuration is unspecified. "
                    + "This is because stdin is used for input and offsets are not tracked.");
        }
        for (Map.Entry<Map<String, ?>, Map<String, ?>> entry : offsets.entrySet()) {
            Map<String, ?> offset = entry.getValue();
            if (offset == null) {
                continue;
            }
            if (!offset.containsKey("position")) {
                throw new ConnectException("Offset objects should either be null or contain the key 'position'");
            }
            if (!(offset.get("position") instanceof Long)) {
                throw new ConnectException("The value for the 'position' key in the offset is expected to be a Long value");
            }
            if ((Long) offset.get("position") < 0) {
                throw new ConnectException("The value for the 'position' key in the offset should be a non-negative value");
            }
            if (entry.getKey() == null || !entry.getKey().containsKey("filename")) {
                throw new ConnectException("Partition objects should contain the key 'filename'");
            }
        }
        return true;
    }
}
