package config

import (
	"strings"

	"github.com/redrive/redrive/broker/driver"
)

// linkedBackends names the backends the program links (the registered
// descriptors), for the broker key's errors: "kafka or rabbitmq".
func linkedBackends() string {
	names := driver.Names()
	switch len(names) {
	case 0:
		return "no backend is linked into this program"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
