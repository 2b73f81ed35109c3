// The task of tests/jvm/FileStreamSourceConnector.java: each poll sends the complete lines added since the
// position it reached (resumed from the committed offset).
package org.apache.kafka.connect.file;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

public class FileStreamSourceTask extends SourceTask {
    private String file;
    private String topic;
    private long position;

    @Override public String version() { return "test"; }

    @Override public void start(Map<String, String> props) {
        file = props.get("file");
        topic = props.get("topic");
        Map<String, Object> offset = context.offsetStorageReader().offset(Map.of("filename", file));
        position = offset != null && offset.get("position") != null ? ((Number) offset.get("position")).longValue() : 0;
    }

    @Override public List<SourceRecord> poll() throws InterruptedException {
        List<SourceRecord> out = new ArrayList<>();
        try (RandomAccessFile in = new RandomAccessFile(file, "r")) {
            byte[] rest = new byte[(int) Math.max(0, in.length() - position)];
            in.seek(position);
            in.readFully(rest);
            int start = 0;
            for (int i = 0; i < rest.length; i++) {
                if (rest[i] == '\n') {
                    String line = new String(rest, start, i - start, StandardCharsets.UTF_8);
                    position += i + 1 - start;
                    start = i + 1;
                    out.add(new SourceRecord(Map.of("filename", file), Map.of("position", position), topic, null,
                                             null, null, Schema.STRING_SCHEMA, line, System.currentTimeMillis()));
                }
            }
        } catch (IOException e) {
            // not there yet
        }
        if (out.isEmpty()) {
            Thread.sleep(200);
        }
        return out;
    }

    @Override public void stop() { }
}
