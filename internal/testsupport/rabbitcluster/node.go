package rabbitcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runner runs the RabbitMQ scripts for a node, as the cluster's user, with
// that node's environment.
type runner struct {
	cfg  Config
	home string              // HOME of every node and CLI call: the cookie's directory
	cred *syscall.Credential // nil when this process already runs as the user
	uid  int
	gid  int
}

func newRunner(cfg Config) (runner, error) {
	u, err := user.Lookup(cfg.User)
	if err != nil {
		return runner{}, fmt.Errorf("rabbitcluster: user %q: %w (install Debian's rabbitmq-server)", cfg.User, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	r := runner{cfg: cfg, home: filepath.Join(cfg.Dir, "home"), uid: uid, gid: gid}
	switch os.Geteuid() {
	case uid:
	case 0:
		r.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	default:
		return runner{}, fmt.Errorf("rabbitcluster: run as root or as %s: the nodes run as %s", cfg.User, cfg.User)
	}
	for _, bin := range []string{"rabbitmq-server", "rabbitmqctl"} {
		if _, err := os.Stat(filepath.Join(cfg.Bin, bin)); err != nil {
			return runner{}, fmt.Errorf("rabbitcluster: %w (install Debian's rabbitmq-server)", err)
		}
	}
	return r, nil
}

// env is the environment of node n's server and of CLI calls about it:
// the caller's, without any RABBITMQ_*, ERL_* or HOME, plus the node's.
func (r runner) env(n Node) []string {
	out := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "RABBITMQ_") || strings.HasPrefix(kv, "ERL_") || strings.HasPrefix(kv, "HOME=")
	})
	return append(out,
		"HOME="+r.home,
		"RABBITMQ_CONF_ENV_FILE="+filepath.Join(n.dir, "rabbitmq-env.conf"),
		"RABBITMQ_NODENAME="+n.Name,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(n.Port),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(n.DistPort),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(n.dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(n.dir, "log"),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(n.dir, "rabbitmq.conf"),
		"RABBITMQ_ADVANCED_CONFIG_FILE="+filepath.Join(n.dir, "advanced.config"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(n.dir, "enabled_plugins"),
		"RABBITMQ_PID_FILE="+n.pidFile(),
		"ERL_EPMD_ADDRESS=127.0.0.1",
		"ERL_FLAGS=-kernel inet_dist_use_interface {127,0,0,1}",
	)
}

// command prepares script bin for node n. The command runs in its own
// process group, killed whole when ctx ends (the scripts start erl).
func (r runner) command(ctx context.Context, n Node, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(r.cfg.Bin, bin), args...)
	cmd.Env = r.env(n)
	cmd.Dir = r.cfg.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred, Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// ctl runs rabbitmqctl -n n args and returns its output.
func (r runner) ctl(ctx context.Context, n Node, args ...string) (string, error) {
	cmd := r.command(ctx, n, "rabbitmqctl", append([]string{"-n", n.Name, "-q"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("rabbitcluster: rabbitmqctl -n %s %s: %w: %s",
			n.Name, strings.Join(args, " "), err, tail(out, 6))
	}
	return string(out), nil
}

// chown gives dir and everything below it to the cluster's user.
func (r runner) chown(dir string) error {
	return filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, r.uid, r.gid)
	})
}

// Boot starts node i (0-based) and waits until its RabbitMQ application
// runs: at Start, and after Kill. A node that was part of the cluster
// rejoins it from its data.
func (c *Cluster) Boot(ctx context.Context, i int) error {
	n := c.Nodes[i]
	ctx, cancel := context.WithTimeout(ctx, c.cfg.BootTimeout)
	defer cancel()
	if err := c.launch(ctx, n); err != nil {
		return err
	}
	secs := strconv.Itoa(int(c.cfg.BootTimeout / time.Second))
	if _, err := c.run.ctl(ctx, n, "wait", n.pidFile(), "--timeout", secs); err != nil {
		return fmt.Errorf("%w; node log: %s", err, tailFile(n.logFile()))
	}
	return nil
}

// launch runs rabbitmq-server -detached for node n.
func (c *Cluster) launch(ctx context.Context, n Node) error {
	_ = os.Remove(n.pidFile())
	out, err := os.OpenFile(filepath.Join(n.dir, "log", "launch.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("rabbitcluster: %w", err)
	}
	defer out.Close()
	// A file, not a pipe: the detached VM keeps what it inherits open.
	cmd := c.run.command(ctx, n, "rabbitmq-server", "-detached")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("rabbitcluster: start %s: %w: %s", n.Name, err, tailFile(out.Name()))
	}
	return nil
}

// StopApp stops the RabbitMQ application of node i (rabbitmqctl stop_app):
// its clients are disconnected, its queue replicas stop, the Erlang node
// stays up.
func (c *Cluster) StopApp(ctx context.Context, i int) error {
	_, err := c.run.ctl(ctx, c.Nodes[i], "stop_app")
	return err
}

// StartApp starts the RabbitMQ application of node i again.
func (c *Cluster) StartApp(ctx context.Context, i int) error {
	_, err := c.run.ctl(ctx, c.Nodes[i], "start_app")
	return err
}

// Kill SIGKILLs node i's Erlang VM and waits until it is gone. Boot
// starts it again.
func (c *Cluster) Kill(i int) error {
	n := c.Nodes[i]
	b, err := os.ReadFile(n.pidFile())
	if err != nil {
		return fmt.Errorf("rabbitcluster: kill %s: %w", n.Name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || !ours(pid, c.run.home) {
		return fmt.Errorf("rabbitcluster: kill %s: pid file holds %q, not a node of this cluster", n.Name, b)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("rabbitcluster: kill %s (pid %d): %w", n.Name, pid, err)
	}
	_ = os.Remove(n.pidFile())
	return waitGone(pid, 30*time.Second)
}

// Heal brings every node of the cluster back: the RabbitMQ application is
// started on a node whose Erlang VM runs (after StopApp), the node is
// booted when it does not (after Kill). It returns once every node runs.
func (c *Cluster) Heal(ctx context.Context) error {
	running, err := c.Running(ctx)
	if err != nil {
		return err
	}
	for i, n := range c.Nodes {
		if slices.Contains(running, n.Name) {
			continue
		}
		if c.alive(i) {
			err = c.StartApp(ctx, i)
		} else {
			err = c.Boot(ctx, i)
		}
		if err != nil {
			return err
		}
	}
	if running, err = c.Running(ctx); err == nil && len(running) != len(c.Nodes) {
		err = fmt.Errorf("rabbitcluster: after healing, %d of %d nodes run: %v", len(running), len(c.Nodes), running)
	}
	return err
}

// alive reports whether node i's Erlang VM runs.
func (c *Cluster) alive(i int) bool {
	b, err := os.ReadFile(c.Nodes[i].pidFile())
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return err == nil && ours(pid, c.run.home)
}

// Running lists the running nodes of the cluster, as the first node that
// answers sees them.
func (c *Cluster) Running(ctx context.Context) ([]string, error) {
	var errs []error
	for _, n := range c.Nodes {
		out, err := c.run.ctl(ctx, n, "cluster_status", "--formatter", "json")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var st struct {
			Running []string `json:"running_nodes"`
		}
		if err := json.Unmarshal(firstJSON(out), &st); err != nil {
			return nil, fmt.Errorf("rabbitcluster: cluster_status of %s: %w: %s", n.Name, err, out)
		}
		slices.Sort(st.Running)
		return st.Running, nil
	}
	return nil, errors.Join(errs...)
}

// Leader returns the index of the node that leads quorum queue q (in the
// default vhost), as the first node that answers sees it.
func (c *Cluster) Leader(ctx context.Context, q string) (int, error) {
	var errs []error
	for _, n := range c.Nodes {
		out, err := c.run.ctl(ctx, n, "list_queues", "--formatter", "json", "name", "leader")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var qs []struct{ Name, Leader string }
		if err := json.Unmarshal(firstJSON(out), &qs); err != nil {
			return -1, fmt.Errorf("rabbitcluster: list_queues on %s: %w: %s", n.Name, err, tail([]byte(out), 3))
		}
		for _, e := range qs {
			if e.Name != q {
				continue
			}
			for i, m := range c.Nodes {
				if m.Name == e.Leader {
					return i, nil
				}
			}
			return -1, fmt.Errorf("rabbitcluster: queue %s has leader %q, not a node of this cluster", q, e.Leader)
		}
		return -1, fmt.Errorf("rabbitcluster: no queue %s", q)
	}
	return -1, errors.Join(errs...)
}

// firstJSON returns the JSON document of rabbitmqctl's output: from its
// first line that starts with { or [ on (warnings may come first; a list
// spans lines).
func firstJSON(out string) []byte {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i, l := range lines {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "{") || strings.HasPrefix(l, "[") {
			return []byte(strings.Join(lines[i:], "\n"))
		}
	}
	return []byte(out)
}

// tail returns the last n lines of out, joined with " | ".
func tail(out []byte, n int) string {
	lines := strings.Split(string(bytes.TrimSpace(out)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// tailFile is tail of a file's last 8 KiB.
func tailFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return tail(b[max(0, len(b)-8192):], 8)
}
