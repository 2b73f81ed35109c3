// Apache Kafka's Java clients doing what applications do, one scenario per sub-command, run by ToolRunner in
// the tests' JVM against Odradek and against Apache Kafka. Each prints a few lines of facts (counts, offsets,
// the values seen) that the Python test compares; exit status 0 unless a scenario's expectation fails.
//   produce BOOTSTRAP TOPIC N COMPRESSION IDEMPOTENT   N records "v<i>" keyed "k<i % 10>", acks=all
//   produce-slowly BOOTSTRAP TOPIC N DELAY_MS          N records one by one, each acknowledged (acks=all, idempotent)
//   consume BOOTSTRAP TOPIC GROUP N PROTOCOL ASSIGNOR  read N records (group.protocol classic|consumer), commit
//   regex BOOTSTRAP PATTERN GROUP N PROTOCOL          subscribe by regex, read N records
//   txn BOOTSTRAP TOPIC TXID N                         one committed and one aborted transaction of N each,
//                                                      the first also committing offset N of group TXID-offsets
//   txn-slowly BOOTSTRAP TOPIC TXID TXNS PER          TXNS committed transactions of PER records "t-i", an
//                                                      aborted one tried again (through a broker's kill)
//   txn-state BOOTSTRAP TOPIC TXID                     the transaction's end state and epoch, the producers of
//                                                      partition 0 and group TXID-offsets' committed offset
//   read-committed BOOTSTRAP TOPIC GROUP N             read_committed consumer: the values it sees
//   share BOOTSTRAP TOPIC GROUP N MODE                 a KafkaShareConsumer (implicit|explicit acknowledgement)
//   admin BOOTSTRAP TOPIC                              create, describe, list offsets, delete records, delete
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class JavaClients {
    private static final Duration POLL = Duration.ofMillis(200);
    private static final long DEADLINE_MS = 60_000;

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "produce" -> produce(args[1], args[2], Integer.parseInt(args[3]), args[4], Boolean.parseBoolean(args[5]));
            case "produce-slowly" -> produceSlowly(args[1], args[2], Integer.parseInt(args[3]), Long.parseLong(args[4]));
            case "consume" -> consume(args[1], List.of(args[2]), null, args[3], Integer.parseInt(args[4]), args[5], args[6]);
            case "regex" -> consume(args[1], null, args[2], args[3], Integer.parseInt(args[4]), args[5], "range");
            case "txn" -> transactions(args[1], args[2], args[3], Integer.parseInt(args[4]));
            case "txn-slowly" -> transactionsSlowly(args[1], args[2], args[3], Integer.parseInt(args[4]),
                    Integer.parseInt(args[5]));
            case "txn-state" -> transactionState(args[1], args[2], args[3]);
            case "read-committed" -> readCommitted(args[1], args[2], args[3], Integer.parseInt(args[4]));
            case "share" -> share(args[1], args[2], args[3], Integer.parseInt(args[4]), args[5]);
            case "admin" -> admin(args[1], args[2]);
            default -> throw new IllegalArgumentException("unknown scenario " + args[0]);
        }
    }

    private static Properties base(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        return p;
    }

    private static void produce(String bootstrap, String topic, int n, String compression, boolean idempotent)
            throws Exception {
        Properties p = base(bootstrap);
        p.put("acks", "all");
        p.put("compression.type", compression);
        p.put("enable.idempotence", Boolean.toString(idempotent));
        p.put("linger.ms", "5");
        long last = -1;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, 0, "k" + (i % 10), "v" + i)));
            }
            for (var f : sent) {
                last = Math.max(last, f.get().offset());
            }
        }
        System.out.println("acked " + n + " last offset " + last);
    }

    private static void produceSlowly(String bootstrap, String topic, int n, long delayMs) throws Exception {
        Properties p = base(bootstrap);
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("delivery.timeout.ms", "120000");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < n; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, "v" + i)).get();
                Thread.sleep(delayMs);
            }
        }
        System.out.println("acked " + n);
    }

    private static void consume(String bootstrap, List<String> topics, String pattern, String group, int n,
                                String protocol, String assignor) {
        Properties p = base(bootstrap);
        p.put("group.id", group);
        p.put("group.protocol", protocol);
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        if (protocol.equals("classic")) {
            p.put("partition.assignment.strategy", assignor.equals("cooperative-sticky")
                    ? "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
                    : "org.apache.kafka.clients.consumer.RangeAssignor");
        }
        Map<String, Integer> perTopic = new TreeMap<>();
        int seen = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            if (pattern != null) {
                consumer.subscribe(Pattern.compile(pattern));
            } else {
                consumer.subscribe(topics);
            }
            long end = System.currentTimeMillis() + DEADLINE_MS;
            while (seen < n && System.currentTimeMillis() < end) {
                for (ConsumerRecord<String, String> r : consumer.poll(POLL)) {
                    seen++;
                    perTopic.merge(r.topic(), 1, Integer::sum);
                }
            }
            consumer.commitSync();
            System.out.println("consumed " + seen + " " + perTopic.values());
            System.out.println("committed " + new TreeMap<>(committedOffsets(consumer)));
        }
        if (seen < n) {
            throw new IllegalStateException("consumed " + seen + " of " + n);
        }
    }

    private static Map<String, Long> committedOffsets(KafkaConsumer<String, String> consumer) {
        Map<String, Long> out = new HashMap<>();
        consumer.committed(consumer.assignment()).forEach((tp, om) -> {
            if (om != null) {
                out.put(tp.partition() + "", om.offset());
            }
        });
        return out;
    }

    private static void transactions(String bootstrap, String topic, String txid, int n) {
        Properties p = base(bootstrap);
        p.put("transactional.id", txid);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < n; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, "committed-" + i));
            }
            producer.sendOffsetsToTransaction(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(n)),
                    new ConsumerGroupMetadata(txid + "-offsets"));
            producer.commitTransaction();
            producer.beginTransaction();
            for (int i = 0; i < n; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, "aborted-" + i));
            }
            producer.flush();
            producer.abortTransaction();
        }
        System.out.println("transactions done");
    }

    // What an exactly-once application does through failures: an abortable error aborts the transaction and
    // the same records are sent again in the next one; a commit that timed out is retried (the client's rule).
    private static void transactionsSlowly(String bootstrap, String topic, String txid, int txns, int per)
            throws Exception {
        Properties p = base(bootstrap);
        p.put("transactional.id", txid);
        p.put("delivery.timeout.ms", "120000");
        p.put("request.timeout.ms", "10000");
        p.put("max.block.ms", "120000");
        int committed = 0;
        int aborted = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            while (committed < txns) {
                producer.beginTransaction();
                try {
                    for (int i = 0; i < per; i++) {
                        producer.send(new ProducerRecord<>(topic, 0, null, committed + "-" + i));
                    }
                    while (true) {
                        try {
                            producer.commitTransaction();
                            break;
                        } catch (TimeoutException e) {
                            Thread.sleep(100);
                        }
                    }
                    committed++;
                } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException e) {
                    throw e;
                } catch (KafkaException e) {
                    producer.abortTransaction();
                    aborted++;
                }
                Thread.sleep(20);
            }
        }
        System.out.println("committed " + committed + (aborted > 0 ? " after an abort" : ""));
    }

    // With transaction version 2 every transaction's end bumps the producer epoch (KIP-890 part 2): after
    // InitProducerId (epoch 0), a commit and an abort the coordinator and the partition's last marker are at 2.
    private static void transactionState(String bootstrap, String topic, String txid) throws Exception {
        try (Admin admin = Admin.create(base(bootstrap))) {
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            TransactionDescription d = admin.describeTransactions(List.of(txid)).description(txid).get();
            while (d.state() != TransactionState.COMPLETE_ABORT && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);  // the abort's markers are written after EndTxn's answer
                d = admin.describeTransactions(List.of(txid)).description(txid).get();
            }
            System.out.println("transaction " + d.state() + " epoch " + d.producerEpoch());
            TopicPartition tp = new TopicPartition(topic, 0);
            for (ProducerState ps : admin.describeProducers(List.of(tp)).partitionResult(tp).get().activeProducers()) {
                System.out.println("producer epoch " + ps.producerEpoch() + " open " + ps.currentTransactionStartOffset().isPresent());
            }
            OffsetAndMetadata om = admin.listConsumerGroupOffsets(txid + "-offsets").partitionsToOffsetAndMetadata()
                    .get().get(tp);
            System.out.println("group offset " + (om == null ? "none" : om.offset()));
        }
    }

    private static void readCommitted(String bootstrap, String topic, String group, int n) {
        Properties p = base(bootstrap);
        p.put("group.id", group);
        p.put("isolation.level", "read_committed");
        p.put("auto.offset.reset", "earliest");
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            consumer.assign(List.of(new TopicPartition(topic, 0)));
            long end = System.currentTimeMillis() + DEADLINE_MS;
            // read to the end of the partition (the last stable offset), so aborted records would show
            long endOffset = consumer.endOffsets(List.of(new TopicPartition(topic, 0))).values().iterator().next();
            while (consumer.position(new TopicPartition(topic, 0)) < endOffset && System.currentTimeMillis() < end) {
                consumer.poll(POLL).forEach(r -> values.add(r.value()));
            }
            System.out.println("read " + values.size() + " end " + endOffset);
        }
        System.out.println("aborted seen " + values.stream().filter(v -> v.startsWith("aborted")).count());
        if (values.size() != n) {
            throw new IllegalStateException("read " + values.size() + " committed records, want " + n);
        }
    }

    private static void share(String bootstrap, String topic, String group, int n, String mode) throws Exception {
        try (Admin admin = Admin.create(base(bootstrap))) {
            ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
            admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET)))).all().get();
        }
        Properties p = base(bootstrap);
        p.put("group.id", group);
        p.put("share.acknowledgement.mode", mode);
        int seen = 0;
        int redelivered = 0;
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(p)) {
            consumer.subscribe(List.of(topic));
            long end = System.currentTimeMillis() + DEADLINE_MS;
            while (seen < n && System.currentTimeMillis() < end) {
                for (ConsumerRecord<String, String> r : consumer.poll(POLL)) {
                    seen++;
                    if (r.deliveryCount().orElse((short) 1) > 1) {
                        redelivered++;
                    }
                    if (mode.equals("explicit")) {
                        consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                }
                if (mode.equals("explicit")) {
                    consumer.commitSync();
                }
            }
            consumer.commitSync();
        }
        System.out.println("share consumed " + seen + " redelivered " + redelivered);
        if (seen < n) {
            throw new IllegalStateException("share consumed " + seen + " of " + n);
        }
    }

    private static void admin(String bootstrap, String topic) throws Exception {
        try (Admin admin = Admin.create(base(bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1).configs(Map.of("retention.ms", "86400000"))))
                    .all().get();
            // Apache Kafka answers CreateTopics once its controller has the topic, before the broker's metadata
            // does (a describe right after it failed once with UNKNOWN_TOPIC_OR_PARTITION): wait, up to 30 s
            TopicDescription d = null;
            for (int i = 0; i < 300 && d == null; i++) {
                try {
                    d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof UnknownTopicOrPartitionException) || i == 299) {
                        throw e;
                    }
                    Thread.sleep(100);
                }
            }
            System.out.println("partitions " + d.partitions().size() + " internal " + d.isInternal());
            System.out.println("cluster nodes " + admin.describeCluster().nodes().get().size());
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(base(bootstrap))) {
                for (int i = 0; i < 5; i++) {
                    producer.send(new ProducerRecord<>(topic, 1, null, "r" + i)).get();
                }
            }
            TopicPartition tp = new TopicPartition(topic, 1);
            System.out.println("latest " + admin.listOffsets(Map.of(tp, OffsetSpec.latest())).all().get().get(tp).offset());
            admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(3))).all().get();
            System.out.println("earliest " + admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).all().get().get(tp).offset());
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            System.out.println("retention.ms " + admin.describeConfigs(List.of(res)).all().get().get(res)
                    .get("retention.ms").value());
            admin.deleteTopics(List.of(topic)).all().get();
            // Apache Kafka answers DeleteTopics before every broker's metadata has dropped the topic (a listing
            // right after it showed the topic once): wait, up to 30 s, for the listing to lose it
            boolean deleted = false;
            for (int i = 0; i < 300 && !deleted; i++) {
                deleted = !admin.listTopics().names().get().contains(topic);
                if (!deleted) {
                    Thread.sleep(100);
                }
            }
            System.out.println("deleted " + deleted);
        }
    }
}
