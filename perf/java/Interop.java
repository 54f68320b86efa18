/*
 * Interop - the official Java RabbitMQ stream client publishing or reading
 * sub-entry batches, for rbfly's interoperability tests
 * (tests/integration/test_interop_java.py); run with
 * scripts/java-perf.sh --interop ARGS.
 *
 *   publish  send --count messages "m0", "m1", ... (data sections) to
 *            --stream in sub-entry batches of 100 with --compression,
 *            and wait until all are confirmed
 *   read     read --count messages of --stream from the first offset and
 *            print their bodies, one per line (a data section or an AMQP
 *            string as UTF-8 text)
 *
 * Usage:
 *   Interop --uri URI --stream NAME --mode publish|read --count N
 *           [--compression none|gzip|snappy|lz4|zstd]
 *
 * Exit status 0 when done, 1 on an error or after 60 s without the
 * messages.
 */

import com.rabbitmq.stream.Consumer;
import com.rabbitmq.stream.Environment;
import com.rabbitmq.stream.Message;
import com.rabbitmq.stream.OffsetSpecification;
import com.rabbitmq.stream.Producer;
import com.rabbitmq.stream.compression.Compression;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

public final class Interop {
  private Interop() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> opts = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--")) {
        throw new IllegalArgumentException("option expected: " + args[i]);
      }
      opts.put(args[i].substring(2), args[i + 1]);
    }
    String uri = opts.get("uri");
    String stream = opts.get("stream");
    String mode = opts.get("mode");
    int count = Integer.parseInt(opts.getOrDefault("count", "300"));
    if (uri == null || stream == null || mode == null) {
      System.err.println("usage: Interop --uri URI --stream NAME --mode publish|read --count N"
          + " [--compression none|gzip|snappy|lz4|zstd]");
      System.exit(2);
    }
    boolean ok;
    try (Environment env = Environment.builder().uri(uri).build()) {
      if (mode.equals("publish")) {
        Compression compression =
            Compression.valueOf(opts.getOrDefault("compression", "none").toUpperCase());
        ok = publish(env, stream, count, compression);
      } else if (mode.equals("read")) {
        ok = read(env, stream, count);
      } else {
        throw new IllegalArgumentException("unknown mode " + mode);
      }
    }
    System.out.flush();
    System.exit(ok ? 0 : 1);
  }

  static boolean publish(Environment env, String stream, int count, Compression compression)
      throws InterruptedException {
    CountDownLatch confirmed = new CountDownLatch(count);
    AtomicInteger failed = new AtomicInteger();
    Producer producer = env.producerBuilder()
        .stream(stream).subEntrySize(100).compression(compression).build();
    try {
      for (int i = 0; i < count; i++) {
        byte[] body = ("m" + i).getBytes(StandardCharsets.UTF_8);
        producer.send(producer.messageBuilder().addData(body).build(), status -> {
          if (!status.isConfirmed()) {
            failed.incrementAndGet();
          }
          confirmed.countDown();
        });
      }
      boolean done = confirmed.await(60, TimeUnit.SECONDS);
      if (failed.get() > 0) {
        System.err.println(failed.get() + " messages not confirmed");
      }
      return done && failed.get() == 0;
    } finally {
      producer.close();
    }
  }

  static boolean read(Environment env, String stream, int count) throws InterruptedException {
    CountDownLatch received = new CountDownLatch(count);
    StringBuilder out = new StringBuilder();
    Consumer consumer = env.consumerBuilder()
        .stream(stream)
        .offset(OffsetSpecification.first())
        .messageHandler((context, message) -> {
          synchronized (out) {
            if (received.getCount() > 0) {
              out.append(text(message)).append('\n');
              received.countDown();
            }
          }
        })
        .build();
    try {
      boolean done = received.await(60, TimeUnit.SECONDS);
      synchronized (out) {
        System.out.print(out);
      }
      return done;
    } finally {
      consumer.close();
    }
  }

  static String text(Message message) {
    Object body = message.getBody();
    if (body instanceof byte[]) {
      return new String((byte[]) body, StandardCharsets.UTF_8);
    }
    if (body instanceof String) {
      return (String) body;
    }
    return new String(message.getBodyAsBinary(), StandardCharsets.UTF_8);
  }
}
