// A file sink for the Connect interop test (see tests/jvm/FileStreamSourceConnector.java): each record's value
// appended to `file` as a line, as Kafka's FileStreamSink.
package org.apache.kafka.connect.file;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;

public class FileStreamSinkConnector extends SinkConnector {
    private Map<String, String> props;

    @Override public String version() { return "test"; }
    @Override public void start(Map<String, String> props) { this.props = props; }
    @Override public Class<? extends Task> taskClass() { return FileStreamSinkTask.class; }
    @Override public List<Map<String, String>> taskConfigs(int maxTasks) {
        List<Map<String, String>> configs = new ArrayList<>();
        for (int i = 0; i < maxTasks; i++) {
            configs.add(new HashMap<>(props));  // as Kafka's own FileStreamSinkConnector: the connector's properties
        }
        return configs;
    }
    @Override public void stop() { }
    @Override public ConfigDef config() {
        return new ConfigDef().define("file", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH,
                                      "Destination filename.");
    }
}
