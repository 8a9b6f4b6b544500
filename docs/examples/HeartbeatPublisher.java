// A reference heartbeat publisher for redrive's monitor, in plain Java 11+
// (docs/heartbeat-protocol.md). It writes the one key of the protocol and
// nothing else: worker:{type}:{instance} -> JSON, TTL 30 s, every 10 s;
// SHUTTING_DOWN with a TTL of 60 s when the JVM shuts down. It speaks
// Redis's protocol over a socket to stay dependency-free; with Jedis or
// Lettuce, `jedis.setex(key, ttl, value)` replaces setEx. In Spring Boot,
// call beat() from a @Scheduled(fixedRate = 10000) method and shutdown()
// from a @PreDestroy one.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

public final class HeartbeatPublisher {
    private final String host;
    private final int port;
    private final String key;
    private final AtomicReference<Instant> lastMessageAt = new AtomicReference<>();
    private final AtomicLong lag = new AtomicLong();

    public HeartbeatPublisher(String redisHost, int redisPort, String prefix, String type, String instance) {
        this.host = redisHost;
        this.port = redisPort;
        this.key = prefix + "worker:" + type + ":" + instance;
    }

    /** Call after each message your consumer handled. */
    public void handled() { lastMessageAt.set(Instant.now()); }

    /** Call with the consumer lag your consumer measures (records behind). */
    public void setLag(long records) { lag.set(Math.max(records, 0)); }

    public void beat() throws Exception { write("RUNNING", 30); }

    public void shutdown() throws Exception { write("SHUTTING_DOWN", 60); }

    private void write(String status, int ttlSeconds) throws Exception {
        Instant last = lastMessageAt.get();
        // Instant.toString() is RFC 3339 in UTC with up to nanoseconds:
        // every precision is accepted, and so are epoch milliseconds.
        String json = "{\"timestamp\":\"" + Instant.now() + "\",\"status\":\"" + status + "\","
                + "\"last_message_at\":" + (last == null ? "null" : "\"" + last + "\"") + ","
                + "\"consumer_lag\":" + lag.get() + "}";
        try (Socket s = new Socket(host, port)) {
            s.setSoTimeout(5000);
            OutputStream out = s.getOutputStream();
            out.write(resp("SET", key, json, "EX", Integer.toString(ttlSeconds)));
            out.flush();
            String reply = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8)).readLine();
            if (reply == null || !reply.startsWith("+")) {
                throw new IllegalStateException("redis: " + reply);
            }
        }
    }

    private static byte[] resp(String... args) {
        StringBuilder b = new StringBuilder("*").append(args.length).append("\r\n");
        for (String a : args) {
            b.append('$').append(a.getBytes(StandardCharsets.UTF_8).length).append("\r\n").append(a).append("\r\n");
        }
        return b.toString().getBytes(StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        String instance = System.getenv().getOrDefault("WORKER_INSTANCE",
                InetAddress.getLocalHost().getHostName() + "-" + ProcessHandle.current().pid());
        HeartbeatPublisher hb = new HeartbeatPublisher(System.getenv().getOrDefault("REDIS_HOST", "127.0.0.1"), 6379,
                System.getenv().getOrDefault("REDIS_PREFIX", ""), System.getenv("WORKER_TYPE"), instance);
        ScheduledExecutorService beats = Executors.newSingleThreadScheduledExecutor();
        beats.scheduleAtFixedRate(() -> {
            try { hb.beat(); } catch (Exception e) { System.err.println("heartbeat: " + e); }
        }, 0, 10, TimeUnit.SECONDS);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            beats.shutdownNow();
            try { hb.shutdown(); } catch (Exception e) { System.err.println("heartbeat: " + e); }
        }));
        Thread.currentThread().join();
    }
}
