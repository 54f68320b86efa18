/*
 * StreamPerf - rbfly's benchmark harness for the official Java RabbitMQ
 * stream client (com.rabbitmq:stream-client).
 *
 * It runs the workloads of the publishing and consuming benchmarks
 * (python -m perf.publish, perf.consume) with the Java client, so their rates
 * can be compared with rbfly's on the same broker. Build and run it with
 * scripts/java-perf.sh; python -m perf.java_client drives it and converts its
 * JSON into the schema of the Python benchmarks, and the implementation
 * "java" of perf.publish and perf.consume runs it once per round (--rounds 1
 * --stream NAME), interleaved with the Python clients.
 *
 * Messages: message i is its decimal digits, zero-padded to 10 ASCII bytes
 *   (as String.format("%010d", i) writes them; body() below), sent
 *   amqp    as an AMQP 1.0 message built by the client's default codec with
 *           MessageBuilder.addData(bytes): one data section (rbfly sends an
 *           amqp-value string section; both encode to 15 bytes)
 *   binary  as the 10 bytes themselves: the environment uses RawCodec below,
 *           which writes and reads a message's body as is (the Java client
 *           has no raw publisher; its codec is the way to send raw bytes)
 *
 * Scenarios (--scenario):
 *   single     send a message, wait for its confirmation, send the next
 *              (default 200,000 messages); the latency of every message
 *   batch      send --batch (100) messages, wait until all of them are
 *              confirmed (default 1,000,000); the latency of every batch
 *   pipelined  send every message, at most --window unconfirmed (the
 *              producer's maxUnconfirmedMessages, default the client's own,
 *              10,000; send blocks when the window is full), then wait for
 *              all confirmations (default 1,000,000)
 *   consume    publish --count messages (default 1,000,000) as pipelined
 *              does, untimed, then time a consumer reading them from the
 *              first offset until the last one is seen; the chunk sizes
 *              the broker delivered are recorded (a flow strategy wrapping
 *              the client's default, creditOnChunkArrival(10), counts them)
 *
 * Every measured run uses a fresh stream (the warm-up: see below): created, measured,
 * checked (publishing: every message confirmed, the last message of the
 * stream message count - 1 at offset count - 1; consuming: the first count
 * messages received at offsets 0 to count - 1 in order, the count-th
 * starting with message count - 1) and deleted. A run is timed from
 * the first send (the subscription) to the last confirmation (the count-th
 * message); the producer (consumer connection) is set up before, untimed.
 *
 * --stream NAME: the measured rounds use the existing stream NAME, which the
 * caller created and deletes afterwards (perf.publish's and perf.consume's
 * stream admin; perf.publish's checks the last message as checkLast does,
 * a consume run is checked here as above): publishing scenarios publish the
 * messages to it (one round only: a second one would not start at offset
 * 0), consume reads its first --count messages from the first offset (the
 * caller published them; an AMQP string body, as rbfly publishes it, is
 * compared by its UTF-8 bytes).
 *
 * JVM warm-up: before the measured rounds, the same scenario runs with
 * --warmup percent (default 10) of the messages, unmeasured, again and
 * again until --warmup-seconds (default 10) have passed, so the hot paths
 * are compiled by the JIT before they are timed. The warm-up of a
 * publishing scenario publishes all its runs to one stream of its own (created
 * and deleted here, with or without --stream), a new producer each run; every
 * run waits for all its confirmations, and its stream is not read back; the
 * warm-up of consume reads the first messages of a fresh stream (with
 * --stream, of the given one), checked as a measured run.
 *
 * Per run: seconds, rate, the JVM's process CPU time (all its threads: the
 * client's Netty threads, the JIT compiler and the garbage collector too)
 * per message and its kernel part (/proc/self/stat), the broker's CPU time
 * share (/proc/PID/stat of --broker-pid) and how busy the machine was
 * (/proc/stat); latency percentiles (nearest rank, as perf/common/streams.py).
 * The keys of a run are those of run_result() in perf/common/streams.py.
 *
 * Usage:
 *   StreamPerf --uri rabbitmq-stream://guest:guest@localhost:5552/%2F
 *              --scenario single|batch|pipelined|consume [--format amqp|binary]
 *              [--count N] [--batch 100] [--window N] [--rounds R]
 *              [--warmup PERCENT] [--warmup-seconds S] [--broker-pid PID] [--stream NAME]
 *              [--json-out FILE] [--via HOST:PORT] [--name NAME]
 *
 * --name NAME: the producers are named (ProducerBuilder.name): the broker
 * deduplicates their messages by publishing id, tracking each producer's last
 * one, as it does for rbfly's publishers by default; without it they are
 * anonymous, the Java client's default
 *
 * --via HOST:PORT: every connection goes to HOST:PORT (an address resolver),
 * e.g. perf/common/wire.py's proxy counting the publishing frames
 */

import com.rabbitmq.stream.Address;
import com.rabbitmq.stream.Codec;
import com.rabbitmq.stream.ConfirmationHandler;
import com.rabbitmq.stream.ConfirmationStatus;
import com.rabbitmq.stream.Consumer;
import com.rabbitmq.stream.ConsumerFlowStrategy;
import com.rabbitmq.stream.Environment;
import com.rabbitmq.stream.EnvironmentBuilder;
import com.rabbitmq.stream.Message;
import com.rabbitmq.stream.MessageBuilder;
import com.rabbitmq.stream.MessageHandler;
import com.rabbitmq.stream.OffsetSpecification;
import com.rabbitmq.stream.Producer;
import com.rabbitmq.stream.ProducerBuilder;
import com.rabbitmq.stream.Properties;
import io.netty.buffer.ByteBuf;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

public final class StreamPerf {

  static final String USAGE =
      "usage: StreamPerf [--uri URI] --scenario single|batch|pipelined|consume"
          + " [--format amqp|binary] [--count N] [--batch N] [--window N] [--rounds R]"
          + " [--warmup PERCENT] [--warmup-seconds S] [--broker-pid PID] [--stream NAME]"
          + " [--json-out FILE] [--via HOST:PORT] [--name NAME]";
  static final int CLIENT_WINDOW = 10_000; // ProducerBuilder.maxUnconfirmedMessages default
  static final long RUN_TIMEOUT_NS = TimeUnit.SECONDS.toNanos(600);
  static final double CLK_TCK = 100; // USER_HZ of /proc/*/stat

  // --- options -----------------------------------------------------------------------

  static final class Options {
    String uri = "rabbitmq-stream://guest:guest@localhost:5552/%2F";
    String scenario;
    String format = "amqp";
    long count = -1;
    int batch = 100;
    Integer window;
    int rounds = 1;
    int warmup = 10;
    double warmupSeconds = 10;
    Integer brokerPid;
    String stream;
    String jsonOut;
    String via;
    String name;

    static Options parse(String[] args) {
      Options o = new Options();
      for (int i = 0; i < args.length; i++) {
        String a = args[i];
        if (a.equals("--help") || a.equals("-h")) {
          System.out.println(USAGE);
          System.exit(0);
        }
        if (i + 1 >= args.length) {
          throw new IllegalArgumentException("missing value of " + a);
        }
        String v = args[++i];
        switch (a) {
          case "--uri": o.uri = v; break;
          case "--scenario": o.scenario = v; break;
          case "--format": o.format = v; break;
          case "--count": o.count = Long.parseLong(v); break;
          case "--batch": o.batch = Integer.parseInt(v); break;
          case "--window": o.window = Integer.parseInt(v); break;
          case "--rounds": o.rounds = Integer.parseInt(v); break;
          case "--warmup": o.warmup = Integer.parseInt(v); break;
          case "--warmup-seconds": o.warmupSeconds = Double.parseDouble(v); break;
          case "--broker-pid": o.brokerPid = Integer.parseInt(v); break;
          case "--stream": o.stream = v; break;
          case "--json-out": o.jsonOut = v; break;
          case "--via": o.via = v; break;
          case "--name": o.name = v; break;
          default: throw new IllegalArgumentException("unknown option " + a);
        }
      }
      if (o.scenario == null
          || !List.of("single", "batch", "pipelined", "consume").contains(o.scenario)) {
        throw new IllegalArgumentException("--scenario single|batch|pipelined|consume needed");
      }
      if (!o.format.equals("amqp") && !o.format.equals("binary")) {
        throw new IllegalArgumentException("--format amqp|binary");
      }
      if (o.count < 0) {
        o.count = o.scenario.equals("single") ? 200_000 : 1_000_000;
      }
      if (o.count < 1 || o.batch < 1 || o.rounds < 1 || o.warmup < 0 || o.warmup > 100
          || (o.window != null && o.window < 1) || !(o.warmupSeconds >= 0)) {
        throw new IllegalArgumentException("--count, --batch, --window, --rounds must be"
            + " positive, --warmup 0..100, --warmup-seconds not negative");
      }
      if (o.stream != null && o.rounds != 1 && !o.scenario.equals("consume")) {
        throw new IllegalArgumentException("--stream publishes one round only: --rounds 1");
      }
      return o;
    }

    int window() {
      return window == null ? CLIENT_WINDOW : window;
    }
  }

  static final class VerificationError extends Exception {
    VerificationError(String message) {
      super(message);
    }
  }

  // --- messages ----------------------------------------------------------------------

  /**
   * Message i's body, the ASCII digits of i zero-padded to 10 bytes (as
   * rbfly's '{:010d}'.format(i)), written digit by digit: String.format
   * parses its format string on every call, a cost of the harness, not of
   * the client, on the thread that sends.
   */
  static byte[] body(long i) {
    byte[] b = new byte[i < 10_000_000_000L ? 10 : Long.toString(i).length()];
    long v = i;
    for (int k = b.length - 1; k >= 0; k--) {
      b[k] = (byte) ('0' + (v % 10));
      v /= 10;
    }
    return b;
  }

  /**
   * Whether a received body starts with a message's index: rbfly's
   * workloads (perf/workloads/) send bigger messages, their index
   * first; the others are exactly the index.
   */
  static boolean startsWith(byte[] body, byte[] prefix) {
    return body != null && body.length >= prefix.length
        && Arrays.equals(body, 0, prefix.length, prefix, 0, prefix.length);
  }

  /**
   * The body of a received message as bytes: a data section (the Java
   * client's, or binary) as is, an AMQP string (amqp-value, as rbfly
   * publishes it) as its UTF-8 bytes.
   */
  static byte[] bodyBytes(Message msg) {
    Object b = msg.getBody();
    if (b instanceof byte[]) {
      return (byte[]) b;
    }
    if (b instanceof String) {
      return ((String) b).getBytes(StandardCharsets.UTF_8);
    }
    return msg.getBodyAsBinary();
  }

  /**
   * Codec of the binary format: a message is its body, written and read as
   * is (an encoded message writes its size, then its bytes, as the client's
   * own codecs do).
   */
  static final class RawCodec implements Codec {
    @Override
    public EncodedMessage encode(Message message) {
      byte[] data = message.getBodyAsBinary();
      return new EncodedMessage() {
        @Override
        public void writeTo(OutputStream out) throws IOException {
          int n = data.length;
          out.write(new byte[] {(byte) (n >>> 24), (byte) (n >>> 16), (byte) (n >>> 8), (byte) n});
          out.write(data);
        }

        @Override
        public void writeTo(ByteBuf buf) {
          buf.writeInt(data.length).writeBytes(data);
        }

        @Override
        public int getSize() {
          return data.length;
        }
      };
    }

    @Override
    public Message decode(ByteBuf buf, int length) {
      byte[] data = new byte[length];
      buf.readBytes(data);
      return new RawMessage(data);
    }

    @Override
    public MessageBuilder messageBuilder() {
      return new RawMessageBuilder();
    }
  }

  static final class RawMessage implements Message {
    private final byte[] data;
    private Map<String, Object> annotations;

    RawMessage(byte[] data) {
      this.data = data;
    }

    @Override public boolean hasPublishingId() { return false; }
    @Override public long getPublishingId() { return 0; }
    @Override public byte[] getBodyAsBinary() { return data; }
    @Override public Object getBody() { return data; }
    @Override public Properties getProperties() { return null; }
    @Override public Map<String, Object> getApplicationProperties() { return null; }

    @Override
    public Map<String, Object> getMessageAnnotations() {
      if (annotations == null) {
        annotations = new HashMap<>();
      }
      return annotations;
    }
  }

  static final class RawMessageBuilder implements MessageBuilder {
    private byte[] data = new byte[0];

    @Override public Message build() { return new RawMessage(data); }

    @Override
    public MessageBuilder addData(byte[] data) {
      this.data = data;
      return this;
    }

    @Override
    public MessageBuilder publishingId(long publishingId) {
      throw new UnsupportedOperationException("binary messages have a body only");
    }

    @Override
    public PropertiesBuilder properties() {
      throw new UnsupportedOperationException("binary messages have a body only");
    }

    @Override
    public ApplicationPropertiesBuilder applicationProperties() {
      throw new UnsupportedOperationException("binary messages have a body only");
    }

    @Override
    public MessageAnnotationsBuilder messageAnnotations() {
      throw new UnsupportedOperationException("binary messages have a body only");
    }
  }

  // --- measurement -------------------------------------------------------------------

  static final com.sun.management.OperatingSystemMXBean OS =
      (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

  /** Fields 14.. (utime, stime, ...) of /proc/PID/stat, or null. */
  static String[] procStat(String pid) {
    try {
      String stat = Files.readString(Path.of("/proc", pid, "stat"));
      return stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  /** User + system CPU seconds of a process, or NaN. */
  static double procCpu(Integer pid) {
    if (pid == null) {
      return Double.NaN;
    }
    String[] f = procStat(pid.toString());
    return f == null ? Double.NaN : (Long.parseLong(f[11]) + Long.parseLong(f[12])) / CLK_TCK;
  }

  static double selfSys() {
    String[] f = procStat("self");
    return f == null ? Double.NaN : Long.parseLong(f[12]) / CLK_TCK;
  }

  /** Busy and total ticks of all cores (/proc/stat), or null. */
  static long[] machineTicks() {
    try {
      String[] f = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
      long total = 0;
      for (int i = 1; i <= 8; i++) {
        total += Long.parseLong(f[i]);
      }
      long idle = Long.parseLong(f[4]) + Long.parseLong(f[5]);
      return new long[] {total - idle, total};
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  /** Wall clock and CPU time of a run; as Stopwatch of perf/common/streams.py. */
  static final class Stopwatch {
    final Integer brokerPid;
    long wall0, cpu0;
    double sys0, broker0;
    long[] ticks0;
    double seconds, cpuSeconds, sysSeconds, brokerSeconds = Double.NaN;
    Double machineBusy;

    Stopwatch(Integer brokerPid) {
      this.brokerPid = brokerPid;
    }

    void start() {
      System.gc(); // garbage of the previous run is not collected during this one
      ticks0 = machineTicks();
      broker0 = procCpu(brokerPid);
      sys0 = selfSys();
      cpu0 = OS.getProcessCpuTime();
      wall0 = System.nanoTime();
    }

    void stop() {
      seconds = (System.nanoTime() - wall0) / 1e9;
      cpuSeconds = (OS.getProcessCpuTime() - cpu0) / 1e9;
      sysSeconds = selfSys() - sys0;
      brokerSeconds = procCpu(brokerPid) - broker0;
      long[] ticks = machineTicks();
      if (ticks != null && ticks0 != null && ticks[1] > ticks0[1]) {
        machineBusy = (double) (ticks[0] - ticks0[0]) / (ticks[1] - ticks0[1]);
      }
    }

    Map<String, Object> result(long count, Map<String, Object> latency) {
      Map<String, Object> r = new LinkedHashMap<>();
      r.put("count", count);
      r.put("seconds", seconds);
      r.put("cpu_seconds", cpuSeconds);
      r.put("rate", seconds > 0 ? count / seconds : null);
      r.put("cpu_us_per_msg", cpuSeconds / count * 1e6);
      r.put("sys_us_per_msg", Double.isNaN(sysSeconds) ? 0.0 : sysSeconds / count * 1e6);
      r.put("cpu_share", seconds > 0 ? cpuSeconds / seconds : null);
      r.put("machine_busy", machineBusy);
      r.put("broker_cpu_share",
          Double.isNaN(brokerSeconds) || seconds <= 0 ? null : brokerSeconds / seconds);
      r.put("latency", latency);
      return r;
    }
  }

  /** p50, p95, p99, max and mean in microseconds, nearest rank (perf/common/streams.py). */
  static Map<String, Object> percentiles(long[] ns, int n, String unit) {
    if (n == 0) {
      return null;
    }
    long[] data = Arrays.copyOf(ns, n);
    Arrays.sort(data);
    double sum = 0;
    for (long v : data) {
      sum += v;
    }
    Map<String, Object> r = new LinkedHashMap<>();
    r.put("count", n);
    for (int p : new int[] {50, 95, 99}) {
      int index = Math.min(n - 1, Math.max(0, (int) Math.floor(p / 100.0 * n + 0.5) - 1));
      r.put("p" + p + "_us", data[index] / 1000.0);
    }
    r.put("max_us", data[n - 1] / 1000.0);
    r.put("mean_us", sum / n / 1000.0);
    r.put("unit", unit);
    return r;
  }

  /**
   * Counts confirmations; the sending thread parks until a goal is reached
   * and is woken only then (not on every confirmation).
   */
  static final class Confirmations implements ConfirmationHandler {
    final AtomicLong done = new AtomicLong();
    final AtomicLong failed = new AtomicLong();
    volatile long goal = Long.MAX_VALUE;
    volatile Thread waiter;
    volatile short failedCode;

    /** Set the goal before sending the messages that reach it. */
    void expect(long goal) {
      this.waiter = Thread.currentThread();
      this.goal = goal;
    }

    @Override
    public void handle(ConfirmationStatus status) {
      if (!status.isConfirmed()) {
        failedCode = status.getCode();
        failed.incrementAndGet();
      }
      if (done.incrementAndGet() >= goal) {
        Thread w = waiter;
        if (w != null) {
          LockSupport.unpark(w);
        }
      }
    }

    void await(long goal) throws VerificationError {
      long deadline = System.nanoTime() + RUN_TIMEOUT_NS;
      while (done.get() < goal) {
        LockSupport.parkNanos(this, TimeUnit.SECONDS.toNanos(1));
        if (System.nanoTime() > deadline) {
          throw new VerificationError(
              "confirmations: " + done.get() + " of " + goal + " after the run timeout");
        }
      }
      if (failed.get() > 0) {
        throw new VerificationError(
            failed.get() + " messages not confirmed (code " + failedCode + ")");
      }
    }
  }

  // --- the benchmark -----------------------------------------------------------------

  final Options opts;
  final Environment env;

  StreamPerf(Options opts) {
    this.opts = opts;
    EnvironmentBuilder builder = Environment.builder().uri(opts.uri);
    if (opts.via != null) {
      // every connection through one address (a proxy counting frames,
      // perf/common/wire.py): the client would connect to the leader as
      // the broker advertises it, past the proxy
      int colon = opts.via.lastIndexOf(':');
      Address via = new Address(
          opts.via.substring(0, colon), Integer.parseInt(opts.via.substring(colon + 1)));
      builder.addressResolver(address -> via);
    }
    if (opts.format.equals("binary")) {
      builder.codec(new RawCodec());
    }
    this.env = builder.build();
  }

  String createStream(String what) {
    String name = "rbfly-perf-" + opts.scenario + "-" + opts.format + "-java-" + what + "-"
        + UUID.randomUUID().toString().substring(0, 8);
    env.streamCreator().stream(name).create();
    return name;
  }

  Producer producer(String stream) {
    ProducerBuilder b = env.producerBuilder().stream(stream).enqueueTimeout(Duration.ZERO);
    if (opts.name != null) {
      b.name(opts.name); // deduplication, as rbfly's publishers by default
    }
    if (opts.scenario.equals("pipelined") || opts.scenario.equals("consume")) {
      b.maxUnconfirmedMessages(opts.window());
    }
    return b.build();
  }

  /** One run of a publishing scenario to a fresh stream, checked and deleted. */
  Map<String, Object> publishRun(long count, String what) throws Exception {
    String stream = createStream(what);
    try {
      Map<String, Object> r;
      Producer producer = producer(stream);
      try {
        r = publish(producer, count);
      } finally {
        producer.close();
      }
      checkLast(stream, count);
      r.put("stream", stream);
      return r;
    } finally {
      env.deleteStream(stream);
    }
  }

  Map<String, Object> publish(Producer producer, long count) throws Exception {
    Stopwatch watch = new Stopwatch(opts.brokerPid);
    Confirmations conf = new Confirmations();
    long[] lat;
    int n = 0;
    String unit = null;
    switch (opts.scenario) {
      case "single": {
        lat = new long[(int) count];
        unit = "message";
        watch.start();
        for (long i = 0; i < count; i++) {
          long t0 = System.nanoTime();
          conf.expect(i + 1);
          producer.send(producer.messageBuilder().addData(body(i)).build(), conf);
          conf.await(i + 1);
          lat[n++] = System.nanoTime() - t0;
        }
        watch.stop();
        break;
      }
      case "batch": {
        int size = opts.batch;
        lat = new long[(int) ((count + size - 1) / size)];
        unit = "batch";
        watch.start();
        for (long start = 0; start < count; start += size) {
          long t0 = System.nanoTime();
          long end = Math.min(start + size, count);
          conf.expect(end);
          for (long i = start; i < end; i++) {
            producer.send(producer.messageBuilder().addData(body(i)).build(), conf);
          }
          conf.await(end);
          lat[n++] = System.nanoTime() - t0;
        }
        watch.stop();
        break;
      }
      default: { // pipelined (and the untimed publishing of consume)
        lat = new long[0];
        watch.start();
        conf.expect(count);
        for (long i = 0; i < count; i++) {
          producer.send(producer.messageBuilder().addData(body(i)).build(), conf);
        }
        conf.await(count);
        watch.stop();
      }
    }
    return watch.result(count, unit == null ? null : percentiles(lat, n, unit));
  }

  /** The stream's last message is message count - 1 at offset count - 1. */
  void checkLast(String stream, long count) throws Exception {
    CountDownLatch seen = new CountDownLatch(1);
    long[] lastOffset = {-1};
    byte[][] lastBody = {null};
    Consumer consumer = env.consumerBuilder().stream(stream)
        .offset(OffsetSpecification.last())
        .messageHandler((ctx, msg) -> {
          synchronized (lastOffset) {
            lastOffset[0] = ctx.offset();
            lastBody[0] = bodyBytes(msg);
          }
          if (ctx.offset() >= count - 1) {
            seen.countDown();
          }
        })
        .build();
    try {
      seen.await(30, TimeUnit.SECONDS);
    } finally {
      consumer.close();
    }
    synchronized (lastOffset) {
      byte[] expected = body(count - 1);
      if (lastOffset[0] != count - 1 || !Arrays.equals(lastBody[0], expected)) {
        throw new VerificationError(String.format(
            "stream %s ends with %s at offset %d, expected %s at offset %d", stream,
            lastBody[0] == null ? "nothing" : new String(lastBody[0], StandardCharsets.ISO_8859_1),
            lastOffset[0], new String(expected, StandardCharsets.US_ASCII), count - 1));
      }
    }
  }

  /** The client's default flow strategy, recording the size of every chunk. */
  static final class ChunkCounter implements ConsumerFlowStrategy {
    final ConsumerFlowStrategy delegate = ConsumerFlowStrategy.creditOnChunkArrival(10);
    long[] sizes = new long[1024];
    int chunks;

    @Override
    public int initialCredits() {
      return delegate.initialCredits();
    }

    @Override
    public MessageProcessedCallback start(Context context) {
      if (chunks == sizes.length) {
        sizes = Arrays.copyOf(sizes, chunks * 2);
      }
      sizes[chunks++] = context.messageCount();
      return delegate.start(context);
    }
  }

  /** One consume run: publish to a fresh stream, time reading it, check, delete. */
  Map<String, Object> consumeRun(long count, String what) throws Exception {
    String stream = createStream(what);
    try {
      Producer producer = producer(stream);
      Map<String, Object> published;
      try {
        published = publish(producer, count);
      } finally {
        producer.close();
      }
      Map<String, Object> r = consume(stream, count);
      r.put("stream", stream);
      r.put("publish_rate", published.get("rate"));
      return r;
    } finally {
      env.deleteStream(stream);
    }
  }

  Map<String, Object> consume(String stream, long count) throws Exception {
    CountDownLatch done = new CountDownLatch(1);
    long[] received = {0}; // written by the client's dispatching thread only
    long[] lastOffset = {-1};
    byte[][] lastBody = {null};
    long[] misplaced = {0}; // of the first count, those not at offset = their place
    // the first count messages must be at offsets 0 to count - 1, in order
    // (nothing missing, nothing repeated), the count-th message count - 1
    // (the handler may see more messages of a longer stream, e.g. a warm-up
    // reading the first ones, until the consumer is closed)
    MessageHandler handler = (ctx, msg) -> {
      if (ctx.offset() != received[0] && received[0] < count) {
        misplaced[0]++;
      }
      if (++received[0] == count) {
        lastOffset[0] = ctx.offset();
        lastBody[0] = bodyBytes(msg);
        done.countDown();
      }
    };
    ChunkCounter chunks = new ChunkCounter();
    // opens the consumers' connection before the timing: the measured
    // subscription shares it (it receives nothing: no message comes after)
    Consumer idle = env.consumerBuilder().stream(stream).offset(OffsetSpecification.next())
        .messageHandler((ctx, msg) -> { }).build();
    Stopwatch watch = new Stopwatch(opts.brokerPid);
    Consumer consumer = null;
    boolean finished;
    try {
      watch.start();
      consumer = env.consumerBuilder().stream(stream).offset(OffsetSpecification.first())
          .flow().strategy(chunks).builder()
          .messageHandler(handler).build();
      finished = done.await(RUN_TIMEOUT_NS, TimeUnit.NANOSECONDS);
      watch.stop();
    } finally {
      if (consumer != null) {
        consumer.close();
      }
      idle.close();
    }
    // the latch orders the handler's writes before these reads
    byte[] expected = body(count - 1);
    if (!finished || misplaced[0] != 0 || lastOffset[0] != count - 1
        || !startsWith(lastBody[0], expected)) {
      throw new VerificationError(String.format(
          "stream %s: received %d messages (%d not at the offset of their place),"
          + " message %d %s at offset %d; expected %s at %d",
          stream, received[0], misplaced[0], count,
          lastBody[0] == null ? "missing" : new String(lastBody[0], StandardCharsets.ISO_8859_1),
          lastOffset[0], new String(expected, StandardCharsets.US_ASCII), count - 1));
    }
    Map<String, Object> r = watch.result(count, null);
    long max = 0;
    for (int i = 0; i < chunks.chunks; i++) {
      max = Math.max(max, chunks.sizes[i]);
    }
    r.put("chunks", chunks.chunks);
    r.put("chunk_mean", chunks.chunks == 0 ? null : (double) count / chunks.chunks);
    r.put("chunk_max", max);
    return r;
  }

  /** One run; with --stream, of the given stream (see the header). */
  Map<String, Object> run(long count, String what, boolean warmup) throws Exception {
    boolean consume = opts.scenario.equals("consume");
    if (opts.stream == null || (warmup && !consume)) {
      return consume ? consumeRun(count, what) : publishRun(count, what);
    }
    Map<String, Object> r;
    if (consume) {
      r = consume(opts.stream, count);
    } else {
      Producer producer = producer(opts.stream);
      try {
        r = publish(producer, count);
      } finally {
        producer.close();
      }
    }
    r.put("stream", opts.stream);
    return r;
  }

  /**
   * Untimed runs of --warmup percent of the messages each, one after the
   * other until --warmup-seconds have passed (at least one run): the JIT
   * compiles the hot paths at its own pace, in seconds rather than in a
   * number of calls, and the client's own perf tool reaches its steady
   * state after about 6 s (scripts/java-perf.sh --official). A warm-up of a
   * fixed share of the messages left the JIT cold in short rounds.
   * Returns the total count and seconds, the number of runs and the rate of
   * the last one (the state the timed run starts from).
   */
  Map<String, Object> warmup() throws Exception {
    long n = Math.max(1, opts.count * opts.warmup / 100);
    long start = System.nanoTime();
    long total = 0;
    int runs = 0;
    Map<String, Object> last;
    if (opts.scenario.equals("consume")) {
      do {
        last = run(n, "warmup", true);
        total += n;
        runs++;
      } while ((System.nanoTime() - start) / 1e9 < opts.warmupSeconds);
    } else {
      // one stream for all the warm-up runs (a stream created, checked and
      // deleted per run, 88 in 10 s, kept the broker busy with its
      // streams), a producer per run: a timed run starts a new producer,
      // whose first use the JIT has to have seen too (one producer for the
      // whole warm-up: a first timed round of 1M messages at 0.81-1.17 us
      // of CPU a message, 650-825k msg/s; a producer a run: 0.52-0.60 us,
      // 846-865k)
      String stream = createStream("warmup");
      try {
        do {
          Producer producer = producer(stream);
          try {
            last = publish(producer, n);
          } finally {
            producer.close();
          }
          total += n;
          runs++;
        } while ((System.nanoTime() - start) / 1e9 < opts.warmupSeconds);
      } finally {
        env.deleteStream(stream);
      }
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    System.err.printf("java warm-up %-10s %d runs of %,d messages in %.1f s, last %s%n",
        opts.scenario, runs, n, seconds, runLine(last));
    Map<String, Object> r = new LinkedHashMap<>();
    r.put("count", total);
    r.put("seconds", seconds);
    r.put("runs", runs);
    r.put("rate", last.get("rate"));
    r.put("cpu_us_per_msg", last.get("cpu_us_per_msg"));
    return r;
  }

  static String runLine(Map<String, Object> r) {
    return String.format("%,12.0f msg/s  CPU %6.2f us/msg (%6.2f sys)",
        (Double) r.get("rate"), (Double) r.get("cpu_us_per_msg"), (Double) r.get("sys_us_per_msg"));
  }

  static String api(String scenario) {
    switch (scenario) {
      case "single":
        return "Producer.send(m, handler), then wait for its confirmation";
      case "batch":
        return "Producer.send(m, handler) x batch, then wait for the batch's confirmations";
      case "pipelined":
        return "Producer.send(m, handler) for each (maxUnconfirmedMessages = window,"
            + " enqueueTimeout 0: send blocks), then wait for all confirmations";
      default:
        return "Environment.consumerBuilder().offset(OffsetSpecification.first())"
            + ".messageHandler(h): h counts the messages, the body of the count-th is checked";
    }
  }

  Map<String, Object> benchmark() throws Exception {
    Map<String, Object> doc = new LinkedHashMap<>();
    doc.put("client", "com.rabbitmq:stream-client");
    doc.put("version", clientVersion());
    doc.put("java", javaInfo());
    doc.put("scenario", opts.scenario);
    doc.put("format", opts.format);
    doc.put("count", opts.count);
    doc.put("batch", opts.scenario.equals("batch") ? opts.batch : null);
    doc.put("window", opts.scenario.equals("pipelined") || opts.scenario.equals("consume")
        ? opts.window() : null);
    doc.put("api", api(opts.scenario));
    doc.put("warmup_percent", opts.warmup);
    doc.put("warmup_seconds", opts.warmupSeconds);
    doc.put("stream", opts.stream);
    if (opts.warmup > 0) {
      doc.put("warmup", warmup());
    }
    List<Object> runs = new ArrayList<>();
    for (int i = 0; i < opts.rounds; i++) {
      Map<String, Object> r = run(opts.count, "r" + (i + 1), false);
      runs.add(r);
      System.err.printf("java round %d/%d %-10s %s%n", i + 1, opts.rounds, opts.scenario,
          runLine(r));
    }
    doc.put("runs", runs);
    return doc;
  }

  static String clientVersion() {
    Package p = Environment.class.getPackage();
    String v = p == null ? null : p.getImplementationVersion();
    return v != null ? v : System.getProperty("stream.client.version");
  }

  static Map<String, Object> javaInfo() {
    Map<String, Object> r = new LinkedHashMap<>();
    r.put("version", System.getProperty("java.runtime.version"));
    r.put("vm", System.getProperty("java.vm.name"));
    r.put("vendor", System.getProperty("java.vm.vendor"));
    r.put("options", ManagementFactory.getRuntimeMXBean().getInputArguments());
    List<String> gcs = new ArrayList<>();
    for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
      gcs.add(gc.getName());
    }
    r.put("gc", gcs);
    r.put("processors", Runtime.getRuntime().availableProcessors());
    return r;
  }

  // --- JSON ----------------------------------------------------------------------------

  static void json(StringBuilder out, Object v) {
    if (v == null) {
      out.append("null");
    } else if (v instanceof Map) {
      out.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
        out.append(first ? "" : ", ");
        first = false;
        json(out, e.getKey().toString());
        out.append(": ");
        json(out, e.getValue());
      }
      out.append('}');
    } else if (v instanceof List) {
      out.append('[');
      boolean first = true;
      for (Object x : (List<?>) v) {
        out.append(first ? "" : ", ");
        first = false;
        json(out, x);
      }
      out.append(']');
    } else if (v instanceof Double || v instanceof Float) {
      double d = ((Number) v).doubleValue();
      out.append(Double.isFinite(d) ? Double.toString(d) : "null");
    } else if (v instanceof Number || v instanceof Boolean) {
      out.append(v);
    } else {
      out.append('"');
      for (char c : v.toString().toCharArray()) {
        if (c == '"' || c == '\\') {
          out.append('\\').append(c);
        } else if (c < 0x20) {
          out.append(String.format("\\u%04x", (int) c));
        } else {
          out.append(c);
        }
      }
      out.append('"');
    }
  }

  public static void main(String[] args) throws Exception {
    Options opts;
    try {
      opts = Options.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println(e.getMessage());
      System.err.println(USAGE);
      System.exit(3);
      return;
    }
    StreamPerf perf = new StreamPerf(opts);
    Map<String, Object> doc;
    try {
      doc = perf.benchmark();
    } catch (VerificationError e) {
      System.err.println("error: " + e.getMessage());
      System.exit(2);
      return;
    } finally {
      perf.env.close();
    }
    StringBuilder out = new StringBuilder();
    json(out, doc);
    out.append('\n');
    if (opts.jsonOut == null) {
      System.out.print(out);
    } else {
      Path target = Path.of(opts.jsonOut);
      Path tmp = target.resolveSibling("." + target.getFileName() + ".tmp");
      Files.writeString(tmp, out);
      Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
    System.exit(0); // the client's threads do not keep the JVM alive
  }
}
