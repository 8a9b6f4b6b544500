// Package config loads redrive's YAML configuration.
//
// [Load] and [Parse] decode a document strictly (an unknown key is an error
// that names its path), expand ${ENV} and ${ENV:-default} inside scalar
// values (after parsing, so a variable's value is never read as YAML), fill
// in the documented defaults ([Config.ApplyDefaults]) and validate
// ([Config.Validate]). Every problem is reported at once, each a
// [FieldError] whose message is one line naming the field:
//
//	workers[2].retry.backoff: "5x" is not a duration
//	workers[0].retry.max_retries: -1 is negative (unlimited retries must be explicit: set unlimited: true)
//	broker: "rabit" is not kafka or rabbitmq
//
// [LoadWorkers] reads a file holding only a workers list.
//
// The configuration turns into what the backends use:
// [Worker.Subscription] and [Worker.Policy] per worker, [Config.Subscriptions]
// for all of them, [Delay.Tiers] and [Delay.MaxDelay] for the RabbitMQ delay
// tiers. [Config.Redacted] masks secrets for printing and
// [Config.WriteYAML] prints the normalized configuration.
//
// The YAML value types are [Duration] (Go durations and whole days, "30d"),
// [Backoff] (a schedule "1s -> 5s -> 30s", a list of durations, or an
// exponential mapping) and [Retention] (a duration or "forever").
package config
