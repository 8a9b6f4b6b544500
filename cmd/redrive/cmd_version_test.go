package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	for _, tt := range []struct {
		name    string
		info    *debug.BuildInfo
		ldflags string
		want    string
	}{
		{"no build information", nil, "", "redrive (devel) go/x"},
		{"go install @version", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}, "", "redrive v0.1.0 go/x"},
		{"built in a checkout", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261127120000-0123456789ab"},
			Settings: vcs("vcs.revision", rev, "vcs.time", "2026-11-27T12:00:00Z", "vcs.modified", "false")}, "",
			"redrive v0.0.0-20261127120000-0123456789ab 0123456789ab 2026-11-27T12:00:00Z go/x"},
		{"uncommitted changes", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", rev, "vcs.modified", "true")}, "", "redrive (devel) 0123456789ab-dirty go/x"},
		{"-ldflags wins", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("vcs.revision", "abc")}, "v9.9.9",
			"redrive v9.9.9 abc go/x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := describeBuild(tt.info, tt.ldflags, "go/x"); got != tt.want {
				t.Errorf("describeBuild = %q, want %q", got, tt.want)
			}
		})
	}
}

// A binary built from a clone of this repository names the commit it was
// built from, as git does: what Go embeds, not a value a test set. (A
// clone: Go stamps no version control information in a git worktree.)
func TestVersionOfABuild(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD (the test builds from this repository): %v", err)
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse --show-toplevel: %v", err)
	}
	dir := t.TempDir()
	clone := filepath.Join(dir, "src")
	if out, err := exec.Command("git", "clone", "-q", strings.TrimSpace(string(top)), clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "redrive")
	build := exec.Command("go", "build", "-o", bin, "./cmd/redrive")
	build.Dir = clone
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("redrive version: %v", err)
	}
	if want := "redrive "; !strings.HasPrefix(string(out), want) || !strings.Contains(string(out), " "+string(head[:12])) {
		t.Errorf("redrive version = %q, want the commit %s", out, head[:12])
	}
}
