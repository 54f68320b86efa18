/*
 * TraceInterop - the official Java RabbitMQ stream client with tracing
 * (Micrometer Observation, bridged to OpenTelemetry, W3C trace context),
 * for rbfly's tracing interoperability tests
 * (tests/integration/test_tracing.py); run with
 * scripts/java-perf.sh --trace-interop ARGS.
 *
 *   publish  send one message "traced" to --stream in a publish
 *            observation, wait for its confirmation, and print the
 *            W3C traceparent the client wrote into its annotations
 *   read     read one message of --stream from the first offset in a
 *            process observation and print "TRACE-ID PARENT-SPAN-ID" of
 *            the process span (the parent: the span the message carries)
 *
 * Usage: TraceInterop --uri URI --stream NAME --mode publish|read
 *
 * Exit status 0 when done, 1 on an error or after 60 s.
 */

import com.rabbitmq.stream.Consumer;
import com.rabbitmq.stream.Environment;
import com.rabbitmq.stream.Message;
import com.rabbitmq.stream.OffsetSpecification;
import com.rabbitmq.stream.Producer;
import com.rabbitmq.stream.observation.micrometer.MicrometerObservationCollectorBuilder;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingReceiverTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingSenderTracingObservationHandler;
import io.micrometer.tracing.otel.bridge.OtelCurrentTraceContext;
import io.micrometer.tracing.otel.bridge.OtelPropagator;
import io.micrometer.tracing.otel.bridge.OtelTracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

public final class TraceInterop {
  private TraceInterop() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> opts = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      opts.put(args[i].substring(2), args[i + 1]);
    }
    String uri = opts.get("uri");
    String stream = opts.get("stream");
    String mode = opts.get("mode");
    if (uri == null || stream == null || mode == null) {
      System.err.println("usage: TraceInterop --uri URI --stream NAME --mode publish|read");
      System.exit(2);
    }
    SdkTracerProvider provider = SdkTracerProvider.builder().build();
    io.opentelemetry.api.trace.Tracer otelTracer = provider.get("rbfly-interop");
    OtelCurrentTraceContext current = new OtelCurrentTraceContext();
    OtelTracer tracer = new OtelTracer(otelTracer, current, event -> { });
    OtelPropagator propagator = new OtelPropagator(
        ContextPropagators.create(W3CTraceContextPropagator.getInstance()), otelTracer);
    ObservationRegistry registry = ObservationRegistry.create();
    registry.observationConfig().observationHandler(
        new ObservationHandler.FirstMatchingCompositeObservationHandler(
            new PropagatingSenderTracingObservationHandler<>(tracer, propagator),
            new PropagatingReceiverTracingObservationHandler<>(tracer, propagator),
            new DefaultTracingObservationHandler(tracer)));
    boolean ok;
    try (Environment env = Environment.builder().uri(uri)
        .observationCollector(new MicrometerObservationCollectorBuilder().registry(registry).build())
        .build()) {
      if (mode.equals("publish")) {
        ok = publish(env, stream);
      } else if (mode.equals("read")) {
        ok = read(env, stream, tracer);
      } else {
        throw new IllegalArgumentException("unknown mode " + mode);
      }
    }
    System.out.flush();
    System.exit(ok ? 0 : 1);
  }

  static boolean publish(Environment env, String stream) throws InterruptedException {
    CountDownLatch confirmed = new CountDownLatch(1);
    AtomicReference<Boolean> good = new AtomicReference<>(false);
    Producer producer = env.producerBuilder().stream(stream).build();
    try {
      Message message = producer.messageBuilder()
          .addData("traced".getBytes(StandardCharsets.UTF_8)).build();
      producer.send(message, status -> {
        good.set(status.isConfirmed());
        confirmed.countDown();
      });
      boolean done = confirmed.await(60, TimeUnit.SECONDS);
      Map<String, Object> annotations = message.getMessageAnnotations();
      Object traceparent = annotations == null ? null : annotations.get("traceparent");
      System.out.println(traceparent);
      return done && good.get() && traceparent != null;
    } finally {
      producer.close();
    }
  }

  static boolean read(Environment env, String stream, OtelTracer tracer)
      throws InterruptedException {
    CountDownLatch received = new CountDownLatch(1);
    AtomicReference<String> ids = new AtomicReference<>();
    Consumer consumer = env.consumerBuilder()
        .stream(stream)
        .offset(OffsetSpecification.first())
        .messageHandler((context, message) -> {
          Span span = tracer.currentSpan();
          if (span != null && received.getCount() > 0) {
            ids.set(span.context().traceId() + " " + span.context().parentId());
          }
          received.countDown();
        })
        .build();
    try {
      boolean done = received.await(60, TimeUnit.SECONDS);
      System.out.println(ids.get());
      return done && ids.get() != null;
    } finally {
      consumer.close();
    }
  }
}
