// Package lag measures how far consumers are behind: Kafka consumer-group
// lag (records and seconds) with a status over a window of samples, and
// RabbitMQ queue depth; with per-topic thresholds, tables for `redrive lag`
// and Prometheus collectors.
//
// # Kafka
//
// [Kafka.Measure] takes one sample with kadm: the groups' committed
// offsets, the partitions' end offsets and the group members
// (kadm.Client.Lag, a handful of requests whatever the partition count).
// Lag in records is end − committed (end − log start when the group never
// committed). Lag in seconds is the age of the oldest unconsumed record:
// for each lagging partition (at most TimeLagPartitions per sample, the
// worst first) one Fetch request of at most FetchMaxBytes reads the record
// at the committed offset and its timestamp is subtracted from the sample
// time. A topic's lag is the sum over its partitions; its lag in seconds is
// the maximum. Share groups (KafkaConfig.ShareGroups, KIP-932) have no
// committed offsets: their partitions are measured with kadm's
// DescribeShareGroupOffsets (the share-partition start offset stands for
// the committed one, the broker's share lag for the lag, the record at the
// start offset for the lag in seconds).
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
// # RabbitMQ
//
// [Rabbit.Measure] declares each queue passively over AMQP, which returns
// the number of messages ready for delivery and the number of consumers.
// Messages delivered but not yet acknowledged are not counted: AMQP does
// not report them and the management API, which does, may not be enabled.
// rabbitmq_queue_depth is therefore the ready count; a queue whose
// consumers hold many unacknowledged messages (up to their prefetch) reads
// lower than its true backlog. A queue that does not exist is reported as
// missing, not as an error. [RabbitQueues] lists the queues of a
// deployment: every group queue and its DLQ, every delay tier and the
// unroutable parking queue.
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
//	redrive_lag_up{source}                                1 when the last sample of kafka / rabbitmq succeeded
package lag
