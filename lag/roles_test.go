package lag

import (
	"testing"

	"github.com/redrive/redrive/broker/rabbit"
)

// Every queue RabbitQueues lists has a role, and only group queues and
// DLQs expect a consumer.
func TestRabbitRoles(t *testing.T) {
	n := rabbit.Names{Prefix: "p"}
	delay := []string{"p.route.0.1", "p.route.1.1"}
	group := rabbit.Queue("orders", "billing")
	roles := RabbitRoles(n, delay, group)
	queues := RabbitQueues(n, delay, group)
	if len(roles) != len(queues) {
		t.Fatalf("%d roles for %d queues", len(roles), len(queues))
	}
	want := map[string]QueueRole{group: RoleGroup, rabbit.DLQ(group): RoleDLQ, "p.route.0.1": RoleDelay, "p.route.1.1": RoleDelay, "p.unroutable": RoleUnroutable}
	for _, q := range queues {
		if roles[q] != want[q] {
			t.Errorf("%s: role %q, want %q", q, roles[q], want[q])
		}
		if roles[q].ExpectsConsumer() != (want[q] == RoleGroup || want[q] == RoleDLQ) {
			t.Errorf("%s: ExpectsConsumer %v", q, roles[q].ExpectsConsumer())
		}
	}
	if !QueueRole("").ExpectsConsumer() {
		t.Error("a queue of unknown role is assumed to expect no consumer")
	}
}
