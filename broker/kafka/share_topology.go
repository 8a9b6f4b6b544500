package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/broker"
)

// ErrShareUnsupported is returned by Declare and Consume for a share-mode
// subscription (broker.Share) when the cluster does not offer share
// groups: Kafka 4.2 or later, with share groups enabled.
var ErrShareUnsupported = errors.New("kafka: the cluster offers no share groups (KIP-932 needs Kafka 4.2+ with share groups enabled)")

// ShareRetryGroup returns the consumer group that reads the retry topic
// (<topic>.retry.<group>) of a share-mode worker: "<group>.retry". Kafka
// keeps one name space for every kind of group, so the share group, which
// is named after the worker, cannot also be the consumer group of the
// retry topic.
func ShareRetryGroup(group string) string { return group + ".retry" }

// Configurations of share groups (group level) and their brokers' defaults.
const (
	// groupConfigOffsetReset is where a new share group starts: Declare
	// sets it to "earliest" (a consumer group's ConsumeStartOffset), unless
	// the operator set it.
	groupConfigOffsetReset = "share.auto.offset.reset"
	// groupConfigDeliveryLimit and brokerConfigDeliveryLimit bound the
	// deliveries of a record to a share group: past them, the broker
	// archives it (drops it from the group) without telling anyone.
	groupConfigDeliveryLimit  = "share.delivery.count.limit"
	brokerConfigDeliveryLimit = "group.share.delivery.count.limit"
	// defaultDeliveryLimit is Kafka's default delivery limit.
	defaultDeliveryLimit = 5
)

// Kafka API keys and the versions a share-mode worker needs: franz-go's
// share consumer speaks ShareFetch and ShareAcknowledge v2 (Kafka 4.2,
// KIP-1222: lock renewal).
const (
	apiShareGroupHeartbeat = 76
	apiShareFetch          = 78
	apiShareAcknowledge    = 79
	minShareVersion        = 2
)

// shareState is what a Broker keeps of its share-mode workers: the groups
// Declare prepared and the running Consume calls (for ConsumerLag).
type shareState struct {
	mu       sync.Mutex
	declared map[string]bool // share groups prepared by Declare
	running  map[consumerKey]int
}

// declareShare prepares the share groups of the share-mode subscriptions
// of subs, once per Broker: it checks that the cluster offers share
// groups, that no consumer group has the worker's name (a worker that ran
// in another mode), and sets the group's share.auto.offset.reset to
// earliest unless the operator set it, so that a new worker reads the
// records published before it first started, as a consumer group does.
func (b *Broker) declareShare(ctx context.Context, subs []broker.Subscription) error {
	var groups []string
	b.share.mu.Lock()
	for _, s := range subs {
		if s.RetryMode == broker.Share && !b.share.declared[s.Group] && !slices.Contains(groups, s.Group) {
			groups = append(groups, s.Group)
		}
	}
	b.share.mu.Unlock()
	if len(groups) == 0 {
		return nil
	}
	if err := b.checkShareSupport(ctx); err != nil {
		return err
	}
	listed, err := b.adm.ListGroupsByType(ctx, []string{"classic", "consumer"})
	if err != nil {
		return fmt.Errorf("kafka: list consumer groups: %w", err)
	}
	for _, g := range groups {
		if _, ok := listed[g]; ok {
			return fmt.Errorf("kafka: worker %q in share mode: a consumer group %q exists (the worker ran in another retry mode?) and Kafka keeps one name for both; "+
				"stop its members and delete it (kafka-consumer-groups --delete --group %s; docs/kafka.md: switching a worker to share)", g, g, g)
		}
		if err := b.startEarliest(ctx, g); err != nil {
			return err
		}
	}
	b.share.mu.Lock()
	if b.share.declared == nil {
		b.share.declared = make(map[string]bool)
	}
	for _, g := range groups {
		b.share.declared[g] = true
	}
	b.share.mu.Unlock()
	return nil
}

// checkShareSupport returns ErrShareUnsupported (with what is missing)
// unless the cluster offers ShareGroupHeartbeat, and ShareFetch and
// ShareAcknowledge at version 2.
func (b *Broker) checkShareSupport(ctx context.Context) error {
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, b.prod)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("kafka: api versions (brokers %s): %w", b.brokerList(), err)
	}
	have := map[int16]int16{}
	for _, k := range resp.ApiKeys {
		have[k.ApiKey] = k.MaxVersion
	}
	if _, ok := have[apiShareGroupHeartbeat]; !ok {
		return fmt.Errorf("%w: no ShareGroupHeartbeat", ErrShareUnsupported)
	}
	for _, k := range []struct {
		key  int16
		name string
	}{{apiShareFetch, "ShareFetch"}, {apiShareAcknowledge, "ShareAcknowledge"}} {
		if v, ok := have[k.key]; !ok || v < minShareVersion {
			return fmt.Errorf("%w: %s v%d missing (lock renewal, Kafka 4.2)", ErrShareUnsupported, k.name, minShareVersion)
		}
	}
	return nil
}

// startEarliest sets group's share.auto.offset.reset to earliest, unless
// it is set.
func (b *Broker) startEarliest(ctx context.Context, group string) error {
	cfg, err := b.groupConfigs(ctx, group)
	if err != nil {
		return err
	}
	if _, set := cfg[groupConfigOffsetReset]; set {
		return nil
	}
	return SetShareOffsetReset(ctx, b.prod, group, "earliest")
}

// SetShareOffsetReset sets where the share group group starts reading a
// partition it has no state for yet (its share.auto.offset.reset:
// "earliest", "latest" or "by_duration:<ISO 8601 duration>"), through cl,
// a client of the cluster. Kafka starts a share group at the latest
// offset unless told; Declare sets a share-mode worker's group to
// earliest unless it is set.
func SetShareOffsetReset(ctx context.Context, cl *kgo.Client, group, reset string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name = groupConfigOffsetReset
	c.Op = kmsg.IncrementalAlterConfigOpSet
	c.Value = kmsg.StringPtr(reset)
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		for _, r := range resp.Resources {
			if err = kerr.ErrorForCode(r.ErrorCode); err != nil {
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("kafka: set %s=%s on share group %q: %w", groupConfigOffsetReset, reset, group, err)
	}
	return nil
}

// groupConfigs returns the configurations set on group (not the
// broker's defaults).
func (b *Broker) groupConfigs(ctx context.Context, group string) (map[string]string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = group
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, b.prod)
	if err != nil {
		return nil, fmt.Errorf("kafka: describe configs of group %q: %w", group, err)
	}
	out := map[string]string{}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return nil, fmt.Errorf("kafka: describe configs of group %q: %w", group, err)
		}
		for _, c := range r.Configs {
			if c.Value != nil && c.Source == kmsg.ConfigSourceGroupConfig {
				out[c.Name] = *c.Value
			}
		}
	}
	return out, nil
}

// deliveryLimit returns how many times the broker delivers a record to
// group before it archives it: the group's share.delivery.count.limit,
// else the brokers' group.share.delivery.count.limit, else Kafka's
// default.
func (b *Broker) deliveryLimit(ctx context.Context, group string) (int, error) {
	cfg, err := b.groupConfigs(ctx, group)
	if err != nil {
		return defaultDeliveryLimit, err
	}
	if n, err := strconv.Atoi(cfg[groupConfigDeliveryLimit]); err == nil && n > 0 {
		return n, nil
	}
	meta, err := b.adm.BrokerMetadata(ctx)
	if err != nil || len(meta.Brokers) == 0 {
		return defaultDeliveryLimit, fmt.Errorf("kafka: broker metadata: %w", err)
	}
	rcs, err := b.adm.DescribeBrokerConfigs(ctx, meta.Brokers[0].NodeID)
	if err != nil {
		return defaultDeliveryLimit, fmt.Errorf("kafka: describe broker configs: %w", err)
	}
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			if c.Key == brokerConfigDeliveryLimit && c.Value != nil {
				if n, err := strconv.Atoi(*c.Value); err == nil && n > 0 {
					return n, nil
				}
			}
		}
	}
	return defaultDeliveryLimit, nil
}
