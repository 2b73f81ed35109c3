// The task of tests/jvm/FileStreamSinkConnector.java.
package org.apache.kafka.connect.file;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.Map;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;

public class FileStreamSinkTask extends SinkTask {
    private PrintStream out;

    @Override public String version() { return "test"; }

    @Override public void start(Map<String, String> props) {
        try {
            out = new PrintStream(new FileOutputStream(props.get("file"), true), false, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new ConnectException(e);
        }
    }

    @Override public void put(Collection<SinkRecord> records) {
        for (SinkRecord record : records) {
            out.println(record.value());
        }
    }

    @Override public void flush(Map<TopicPartition, OffsetAndMetadata> offsets) { out.flush(); }

    @Override public void stop() {
        if (out != null) {
            out.close();
        }
    }
}
