package rabbitcluster

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ours reports whether process pid is an Erlang VM started with HOME home
// (erl passes it as "-home <dir>"): a node or CLI call of the cluster
// whose cookie lives there, never another node of the machine.
func ours(pid int, home string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	args := strings.Split(string(b), "\x00")
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-home" && args[i+1] == home {
			return true
		}
	}
	return false
}

// killAll SIGKILLs every process of the cluster whose HOME is home and
// waits until they are gone. It reports how many it killed.
func killAll(home string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("rabbitcluster: list processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || !ours(pid, home) {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return 0, fmt.Errorf("rabbitcluster: kill pid %d: %w", pid, err)
		}
		pids = append(pids, pid)
	}
	var errs []error
	for _, pid := range pids {
		errs = append(errs, waitGone(pid, 30*time.Second))
	}
	return len(pids), errors.Join(errs...)
}

// waitGone waits until process pid no longer runs (gone, or a zombie
// waiting for its parent). A process that is not our child offers no event
// to wait on, so this polls.
func waitGone(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return nil
		}
		// The state follows the command name, which is in parentheses.
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && strings.HasPrefix(string(b[i+1:]), " Z") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("rabbitcluster: pid %d still runs %s after SIGKILL", pid, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
