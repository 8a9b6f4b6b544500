// Package openapi turns the admin API's OpenAPI document, written in YAML
// (configs/openapi.yaml, the one source of truth), into the JSON that
// dlq/admin embeds and serves at GET /internal/v1/openapi.json. The JSON
// copy is generated (go generate ./dlq/admin) and a test of dlq/admin
// fails when it is stale.
package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Source is the path of the YAML document, from the repository root.
const Source = "configs/openapi.yaml"

// JSON converts the YAML document doc to indented JSON, keys in the
// document's order, ending in a newline. Mapping keys must be strings
// (quote response codes: "200").
func JSON(doc []byte) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("openapi: parse: %w", err)
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 {
		return nil, fmt.Errorf("openapi: parse: not one YAML document")
	}
	var b bytes.Buffer
	if err := write(&b, root.Content[0]); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("openapi: indent: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// write writes n as compact JSON.
func write(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
				return fmt.Errorf("openapi: line %d: key %q is not a string (quote it)", k.Line, k.Value)
			}
			if i > 0 {
				b.WriteByte(',')
			}
			key, _ := json.Marshal(k.Value)
			b.Write(key)
			b.WriteByte(':')
			if err := write(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := write(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("openapi: line %d: %w", n.Line, err)
		}
		enc, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("openapi: line %d: %w", n.Line, err)
		}
		b.Write(enc)
	case yaml.AliasNode:
		return write(b, n.Alias)
	default:
		return fmt.Errorf("openapi: line %d: unexpected YAML node", n.Line)
	}
	return nil
}
