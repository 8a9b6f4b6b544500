package testenv

import (
	"strconv"
	"strings"
)

// NestedJSON returns depth arrays nested in each other, "[[[…]]]": 2 ×
// depth bytes of valid JSON (encoding/json reads up to 10,000 levels).
// Issue 40's payload, 9,999 deep, is 20 KB.
func NestedJSON(depth int) []byte {
	return []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth))
}

// FlatJSON returns a JSON object of at least size bytes, one level deep:
// fields of strings, numbers, booleans and nulls, as an ordinary message
// has, to compare a payload's cost against.
func FlatJSON(size int) []byte {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; b.Len() < size-1; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		n := strconv.Itoa(i)
		switch i % 4 {
		case 0:
			b.WriteString(`"name_` + n + `":"value number ` + n + ` with some text"`)
		case 1:
			b.WriteString(`"amount_` + n + `":` + n + `.25`)
		case 2:
			b.WriteString(`"flag_` + n + `":true`)
		default:
			b.WriteString(`"none_` + n + `":null`)
		}
	}
	b.WriteByte('}')
	return []byte(b.String())
}
