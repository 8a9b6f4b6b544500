// Package lag grades and exports how far consumers are behind, as a
// backend measures it (its driver.Monitor): consumer-group lag (records
// and seconds) with a status over a window of samples, or queue depth;
// with per-topic thresholds, tables for `redrive lag` and Prometheus
// collectors. It measures nothing itself: each backend measures its own
// broker (Kafka: kafka.LagMonitor with kadm; RabbitMQ: rabbit.DepthMonitor
// over AMQP), and its descriptor opens the monitor for the configured
// workers.
//
// # Consumer-group lag
//
// A [GroupSample] holds, per group, topic and partition, the committed
// offset, the end offset, the lag in records (end − committed) and, where
// measured, the age of the oldest unconsumed record. A topic's lag is the
// sum over its partitions; its lag in seconds is the maximum. A share
// group's partition (Kafka, KIP-932: PartitionLag.Share) has no committed
// offset: its backend reports the share-partition start offset, the
// first record not yet finished, in its place.
//
// # Status over a window (in the spirit of Burrow)
//
// A [Tracker] keeps the last Window samples of every (group, topic,
// partition) and grades each partition on them, latest sample last; the
// first rule that holds wins:
//
//	REWIND  the committed offset went backwards between two samples in the window
//	OK      the latest lag is 0
//	STOP    lag > 0, no group member is assigned the partition and the committed
//	        offset did not move over the window: the consumer is gone
//	STALL   lag > 0, at least 2 samples, and the committed offset did not move
//	        over the window although a member is assigned: the consumer is
//	        there but does not make progress (stuck handler, blocked retry)
//	WARN    at least 2 samples, lag > 0 in each, never decreasing between two
//	        samples and higher at the end than at the start: the consumer
//	        moves but falls behind (slow, or traffic above its capacity)
//	OK      otherwise (moving, and keeping up or catching up)
//
// A topic's status is the worst of its partitions', in the order STOP,
// STALL, REWIND, WARN, OK. Unlike Burrow, which reads commit timestamps, a
// tracker only sees offsets: a member that stays in the group but stopped
// committing reads STALL, not STOP. With a single sample only STOP and OK
// can be told. A topic's level (OK, WARNING, CRITICAL) comes from its lag in
// records against the topic's [Threshold].
//
// # Queue depth
//
// A [QueueDepth] is one queue's messages ready for delivery and its
// consumers, with its role (group queue, DLQ, delay, parking) and the
// worker it belongs to. On RabbitMQ, messages delivered but not yet
// acknowledged are not counted (AMQP does not report them):
// rabbitmq_queue_depth is the ready count, and a queue whose consumers
// hold many unacknowledged messages reads lower than its true backlog. A
// queue that does not exist is reported as missing, not as an error.
//
// # Metrics
//
// A [Sampler] measures on an interval and turns each sample, once, into
// its metric families, sorted as a registry sorts them: a scrape costs no
// broker request and no per-series work. It serves them as a
// prometheus.Gatherer (to combine with a registry in prometheus.Gatherers),
// as a prometheus.Collector (which copies the cached series on each
// scrape), and encoded ([Sampler.Encoded]: once per sample and exposition
// format; a sample encodes its page ahead in the formats recently scraped).
// With 100,000 partition series, a page holds about 15 MB of families and
// 10 MB per encoded format.
//
//	kafka_consumer_lag{group,topic}                       records behind
//	kafka_consumer_lag_partition{group,topic,partition}   records behind, per partition
//	kafka_consumer_lag_seconds{group,topic}               age of the oldest unconsumed record
//	redrive_consumer_status{group,topic,status,level}     1; status ok|warn|stall|stop|rewind, level ok|warning|critical
//	rabbitmq_queue_depth{queue}                           messages ready
//	rabbitmq_queue_consumers{queue}                       consumers
//	redrive_lag_up{source}                                1 when the last sample of the backend (its name) succeeded
package lag
