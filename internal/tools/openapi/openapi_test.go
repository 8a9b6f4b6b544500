package openapi

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestJSON(t *testing.T) {
	got, err := JSON([]byte("openapi: 3.1.0\npaths:\n  /a:\n    get:\n      responses:\n        \"200\": {description: ok}\n      x: [1, true, null, 2.5, \"s\"]\nz: 1\nb: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(got) {
		t.Fatalf("not JSON: %s", got)
	}
	compact := strings.Join(strings.Fields(string(got)), "")
	want := `{"openapi":"3.1.0","paths":{"/a":{"get":{"responses":{"200":{"description":"ok"}},"x":[1,true,null,2.5,"s"]}}},"z":1,"b":2}`
	if compact != want {
		t.Errorf("got %s\nwant %s", compact, want)
	}
	if _, err := JSON([]byte("a:\n  200: x\n")); err == nil || !strings.Contains(err.Error(), "quote it") {
		t.Errorf("an unquoted number key: %v, want an error saying to quote it", err)
	}
}
