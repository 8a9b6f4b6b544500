package config

import (
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// WriteYAML writes c as YAML, two-space indented, every key present. A
// literal "${" in a value is written "$${", so that the output loads back
// (Parse) to the same configuration. Print c.Redacted(), not c, where
// secrets must not show.
func (c *Config) WriteYAML(w io.Writer) error {
	var n yaml.Node
	if err := n.Encode(c); err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	escapeRefs(&n)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// escapeRefs escapes "${" as "$${" in every scalar value (not key) of n.
func escapeRefs(n *yaml.Node) {
	switch n.Kind {
	case yaml.ScalarNode:
		n.Value = strings.ReplaceAll(n.Value, "${", "$${")
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			escapeRefs(n.Content[i])
		}
	default:
		for _, c := range n.Content {
			escapeRefs(c)
		}
	}
}
