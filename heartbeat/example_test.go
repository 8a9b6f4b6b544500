package heartbeat_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/heartbeat"
)

// ExamplePublisher: a worker process beats into Redis (REDIS_ADDR, default
// 127.0.0.1:6379) while it runs; a Monitor reads every instance of every
// worker type and grades it. A prefix of the run's own keeps runs side by
// side apart; Deregister removes the instance when it exits cleanly.
func ExamplePublisher() {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	prefix := "example-" + broker.NewMessageID()[:8] + ":"

	pub, err := heartbeat.NewPublisher(rdb, heartbeat.PublisherConfig{
		Type: "payout-executor", Instance: "payout-executor-1", Prefix: prefix,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pub.Deregister(context.Background())
	defer rdb.Del(context.Background(), heartbeat.Keys{Prefix: prefix}.Types()) // the list of worker types
	pub.MessageHandled(time.Now())
	pub.SetLag(3)
	if err := pub.Beat(ctx); err != nil { // Run beats every Interval until ctx ends
		fmt.Println("Redis is required:", err)
		return
	}

	mon, err := heartbeat.NewMonitor(rdb, heartbeat.MonitorConfig{Prefix: prefix})
	if err != nil {
		fmt.Println(err)
		return
	}
	statuses, err := mon.Check(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range statuses {
		fmt.Println(s.Type, s.Instance, s.Status, "lag", s.Lag)
	}
	// Output:
	// payout-executor payout-executor-1 RUNNING lag 3
}
