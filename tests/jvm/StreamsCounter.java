// A stateful Kafka Streams application for the tests: reads "KEY:N" values from `input.topic`, re-keys them by
// KEY (a repartition topic), counts and sums per key in a state store (a changelog topic), and writes
// "COUNT:SUM" per key to `output.topic`. Exactly-once (processing.guarantee in its properties file) makes the
// counts a key's output shows go up by one, each exactly once, whatever broker or instance dies meanwhile.
// Usage: java StreamsCounter PROPERTIES (Kafka Streams keys plus input.topic and output.topic); runs until
// killed or SIGTERM (which closes it cleanly).
import java.io.FileInputStream;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

public final class StreamsCounter {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (FileInputStream in = new FileInputStream(args[0])) {
            props.load(in);
        }
        String input = (String) props.remove("input.topic");
        String output = (String) props.remove("output.topic");
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .map((key, value) -> KeyValue.pair(value.split(":")[0], value.split(":")[1]))
                .groupByKey(Grouped.with("by-key", Serdes.String(), Serdes.String()))
                .aggregate(() -> "0:0", (key, value, total) -> {
                    String[] parts = total.split(":");
                    long count = Long.parseLong(parts[0]) + 1;
                    long sum = Long.parseLong(parts[1]) + Long.parseLong(value);
                    return count + ":" + sum;
                }, Materialized.<String, String, org.apache.kafka.streams.state.KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("totals")
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.String()));
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, before) -> System.out.println("state " + before + " -> " + now));
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            stopped.countDown();
        }));
        streams.start();
        stopped.await();
    }
}
