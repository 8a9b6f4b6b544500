package mem

import (
	"container/heap"
	"container/list"
	"time"
)

// message is one message as the server keeps it. It never changes once
// stored: a retry or dead-letter copy is a new message.
type message struct {
	id         string
	key, value []byte
	// headers are every header of the message, redrive's story included;
	// shared by the copies of a publish to several groups, never written.
	headers   map[string]string
	topic     string
	timestamp time.Time
}

// item is one message in one queue.
type item struct {
	msg *message
	// due is when the item may be delivered, on the server's clock: when
	// it was published, or when its delay or retry back-off ends. A
	// message's age for Subscription.MaxAge counts from it (as a RabbitMQ
	// queue's TTL counts from when a message entered it).
	due time.Time
	seq uint64 // arrival order, for the delay heap's ties
	// front puts the item at the head of the ready list when it becomes
	// due (a blocking retry keeps its place before later messages).
	front bool
	// deliveries counts the item's deliveries to a handler (a broker's
	// own delivery count: driver.Input.NativeClaims).
	deliveries  int64
	redelivered bool
	// abandoned marks an item handed back while its handler still ran
	// (past the shutdown timeout): that handler's decision is dropped.
	abandoned bool
	// dead is set on a dead letter: its identity and stack trace.
	dead      *deadInfo
	heapIndex int
}

// deadInfo is what a dead letter keeps besides its message.
type deadInfo struct {
	identity string
	stack    string
}

// queue is a group's queue (messages of its topic for one worker) or a
// dead-letter queue. Its fields are guarded by the server's mutex.
type queue struct {
	name         string
	topic, group string // empty for a DLQ
	dlq          bool
	// blocking: a subscription in blocking retry mode consumes it, so a
	// message with a key is handled only after the earlier messages of
	// its key were acknowledged or dead-lettered (order per key).
	blocking bool
	ready    list.List // of *item, due now
	delayed  delayHeap // not due yet
	taken    map[*item]struct{}
	owner    map[string]*item // blocking: key → the item in flight or retrying with it
	// consumers counts the Consume calls (ConsumeDeadLetters calls on a
	// DLQ) running on it; consumed is set by the first one: Server.Idle
	// waits for the queues someone consumes or consumed.
	consumers int
	consumed  bool
	wake      chan struct{} // closed when an item may have become takeable
}

func newQueue(name, topic, group string, dlq bool) *queue {
	return &queue{name: name, topic: topic, group: group, dlq: dlq, taken: map[*item]struct{}{},
		owner: map[string]*item{}, wake: make(chan struct{})}
}

// signal wakes the queue's consumers.
func (q *queue) signal() {
	close(q.wake)
	q.wake = make(chan struct{})
}

// length counts the queue's messages: waiting, due and taken.
func (q *queue) length() int { return q.ready.Len() + q.delayed.Len() + len(q.taken) }

// push adds it, due at it.due, as of now.
func (q *queue) push(it *item, now time.Time) {
	if it.due.After(now) {
		heap.Push(&q.delayed, it)
		return
	}
	q.makeReady(it)
}

func (q *queue) makeReady(it *item) {
	if it.front {
		q.ready.PushFront(it)
		return
	}
	q.ready.PushBack(it)
}

// promote makes the delayed items due at now ready; it reports whether
// any was.
func (q *queue) promote(now time.Time) bool {
	moved := false
	for q.delayed.Len() > 0 && !q.delayed[0].due.After(now) {
		q.makeReady(heap.Pop(&q.delayed).(*item))
		moved = true
	}
	return moved
}

// nextDue is when the first delayed item is due; zero when none is.
func (q *queue) nextDue() time.Time {
	if q.delayed.Len() == 0 {
		return time.Time{}
	}
	return q.delayed[0].due
}

// takeable reports whether it may be taken now: not behind another
// message of its key in a blocking queue.
func (q *queue) takeable(it *item) bool {
	if !q.blocking || len(it.msg.key) == 0 {
		return true
	}
	o := q.owner[string(it.msg.key)]
	return o == nil || o == it
}

// take removes the first takeable ready item, marks it taken and
// returns it; nil when there is none.
func (q *queue) take() *item {
	for e := q.ready.Front(); e != nil; e = e.Next() {
		it := e.Value.(*item)
		if !q.takeable(it) {
			continue
		}
		q.ready.Remove(e)
		if q.blocking && len(it.msg.key) > 0 {
			q.owner[string(it.msg.key)] = it
		}
		q.taken[it] = struct{}{}
		it.deliveries++
		return it
	}
	return nil
}

// due counts the ready items that could be taken now.
func (q *queue) due() int {
	n := 0
	for e := q.ready.Front(); e != nil; e = e.Next() {
		if q.takeable(e.Value.(*item)) {
			n++
		}
	}
	return n
}

// hasDue reports whether a ready item could be taken now.
func (q *queue) hasDue() bool {
	for e := q.ready.Front(); e != nil; e = e.Next() {
		if q.takeable(e.Value.(*item)) {
			return true
		}
	}
	return false
}

// done forgets a taken item (acknowledged, or its copy stored).
func (q *queue) done(it *item) {
	delete(q.taken, it)
	if k := string(it.msg.key); q.owner[k] == it {
		delete(q.owner, k)
	}
	q.signal()
}

// replace swaps a taken item for next (its retry copy, or itself handed
// back), which keeps its key's place in a blocking queue.
func (q *queue) replace(it, next *item, now time.Time) {
	delete(q.taken, it)
	if k := string(it.msg.key); q.owner[k] == it {
		q.owner[k] = next
	}
	q.push(next, now)
	q.signal()
}

// delayHeap orders items by due time, then arrival.
type delayHeap []*item

func (h delayHeap) Len() int { return len(h) }
func (h delayHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h delayHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex, h[j].heapIndex = i, j
}
func (h *delayHeap) Push(x any) {
	it := x.(*item)
	it.heapIndex = len(*h)
	*h = append(*h, it)
}
func (h *delayHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return it
}
