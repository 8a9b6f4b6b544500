// Package rabbitcluster starts, faults and stops a RabbitMQ cluster on this
// machine, made of nodes of the installed Debian rabbitmq-server: the
// cluster of the faults suite and of `make cluster-up`.
//
// Every node has its own name (rrc1@localhost, ...), AMQP and distribution
// ports, configuration, data and log directories, all under one directory
// owned by the rabbitmq user, and the nodes share an Erlang cookie of their
// own. Nothing here reads or changes another node of the machine (such as
// the default rabbit@localhost on 5672): the nodes only share the
// machine's epmd. The nodes are joined with rabbitmqctl join_cluster and
// run with cluster_partition_handling = pause_minority and no plugins.
//
// One process at a time owns the cluster (a lock file beside its
// directory); Start first removes what a crashed run left behind.
package rabbitcluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
)

// Defaults of Config.
const (
	DefaultDir         = "/tmp/redrive-rabbitcluster"
	DefaultNodes       = 3
	DefaultBasePort    = 5681
	DefaultPrefix      = "rrc"
	DefaultBin         = "/usr/lib/rabbitmq/bin"
	DefaultUser        = "rabbitmq"
	DefaultBootTimeout = 2 * time.Minute
)

// distOffset separates a node's distribution port from its AMQP port, as
// RabbitMQ's own default does (5672 → 25672).
const distOffset = 20000

// ErrBusy is returned when another process owns the cluster.
var ErrBusy = errors.New("rabbitcluster: the cluster is in use by another process")

// Config describes the cluster. The zero value is the faults suite's
// cluster: three nodes rrc1..rrc3@localhost on AMQP ports 5681..5683.
type Config struct {
	// Dir holds every node's files; default DefaultDir. It is deleted and
	// recreated by Start and deleted by Stop.
	Dir string
	// Nodes is the number of nodes, 1-9; default 3.
	Nodes int
	// BasePort is the AMQP port of the first node; node i (1-based)
	// listens on 127.0.0.1:BasePort+i-1 and distributes on that + 20000.
	// Default 5681.
	BasePort int
	// Prefix names the nodes <Prefix><i>@localhost; default "rrc".
	Prefix string
	// Bin is the directory of rabbitmq-server and rabbitmqctl (the
	// scripts, not Debian's /usr/sbin wrappers that impose the default
	// node's home); default DefaultBin.
	Bin string
	// User runs the nodes; default "rabbitmq". Starting a cluster needs
	// root or this user.
	User string
	// BootTimeout bounds one node's start; default 2 min.
	BootTimeout time.Duration
	// Logger receives progress; default slog.Default().
	Logger *slog.Logger
}

// WithDefaults returns c with defaults filled in.
func (c Config) WithDefaults() Config {
	if c.Dir == "" {
		c.Dir = DefaultDir
	}
	if c.Nodes == 0 {
		c.Nodes = DefaultNodes
	}
	if c.BasePort == 0 {
		c.BasePort = DefaultBasePort
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Bin == "" {
		c.Bin = DefaultBin
	}
	if c.User == "" {
		c.User = DefaultUser
	}
	if c.BootTimeout == 0 {
		c.BootTimeout = DefaultBootTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports the first problem, naming the field.
func (c Config) Validate() error {
	switch {
	case !filepath.IsAbs(c.Dir) || filepath.Clean(c.Dir) == "/":
		return fmt.Errorf("rabbitcluster: dir %q must be an absolute path below /", c.Dir)
	case c.Nodes < 1 || c.Nodes > 9:
		return fmt.Errorf("rabbitcluster: nodes %d is not 1-9", c.Nodes)
	case c.BasePort < 1024 || c.BasePort+c.Nodes-1+distOffset > 65535:
		return fmt.Errorf("rabbitcluster: base port %d leaves no room for %d nodes and their distribution ports", c.BasePort, c.Nodes)
	case c.Prefix == "" || strings.ContainsAny(c.Prefix, "@/ \t"):
		return fmt.Errorf("rabbitcluster: prefix %q is not a node name prefix", c.Prefix)
	case c.BootTimeout <= 0:
		return fmt.Errorf("rabbitcluster: boot timeout %s must be positive", c.BootTimeout)
	}
	return nil
}

// Node is one node of the cluster.
type Node struct {
	Name     string // e.g. rrc1@localhost
	Port     int    // AMQP port on 127.0.0.1
	DistPort int    // Erlang distribution port
	dir      string
}

// URL is the AMQP URL of the node (user guest, which RabbitMQ admits from
// the loopback interface only).
func (n Node) URL() string { return fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", n.Port) }

func (n Node) pidFile() string { return filepath.Join(n.dir, "pid") }
func (n Node) logFile() string { return filepath.Join(n.dir, "log", n.Name+".log") }

// Cluster is a running cluster. Its methods may be called from several
// goroutines.
type Cluster struct {
	cfg   Config
	Nodes []Node
	// StartUp is how long Start took, from the first node's launch to the
	// last node's joining.
	StartUp time.Duration
	run     runner
	lock    *os.File
}

// nodes lists the nodes cfg describes.
func nodes(cfg Config) []Node {
	out := make([]Node, cfg.Nodes)
	for i := range out {
		name := fmt.Sprintf("%s%d", cfg.Prefix, i+1)
		out[i] = Node{
			Name:     name + "@localhost",
			Port:     cfg.BasePort + i,
			DistPort: cfg.BasePort + i + distOffset,
			dir:      filepath.Join(cfg.Dir, name),
		}
	}
	return out
}

// Start removes what a previous run left behind, then starts the nodes,
// joins them into one cluster and waits until every node runs. On failure
// nothing is left running.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	run, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	lock, err := acquire(cfg.Dir + ".lock")
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, Nodes: nodes(cfg), run: run, lock: lock}
	if err := c.start(ctx); err != nil {
		if serr := c.Stop(context.WithoutCancel(ctx)); serr != nil {
			err = errors.Join(err, serr)
		}
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	log := c.cfg.Logger
	if n, err := clean(c.cfg); err != nil {
		return err
	} else if n > 0 {
		log.Warn("rabbitcluster: killed the nodes a previous run left behind", "processes", n, "dir", c.cfg.Dir)
	}
	for _, n := range c.Nodes {
		for _, p := range []int{n.Port, n.DistPort} {
			if err := portFree(p); err != nil {
				return fmt.Errorf("rabbitcluster: node %s: %w", n.Name, err)
			}
		}
	}
	if err := c.prepare(); err != nil {
		return err
	}
	// RabbitMQ starts Erlang distribution itself, with its application:
	// every node boots fully, then the others leave their fresh state to
	// join the first.
	began := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for i := range c.Nodes {
		g.Go(func() error { return c.Boot(gctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	log.Info("rabbitcluster: nodes started", "nodes", len(c.Nodes), "in", time.Since(began).Round(time.Millisecond))
	// One node at a time: Mnesia fails nodes that join at once.
	seed := c.Nodes[0].Name
	for _, n := range c.Nodes[1:] {
		for _, args := range [][]string{{"stop_app"}, {"join_cluster", seed}, {"start_app"}} {
			if _, err := c.run.ctl(ctx, n, args...); err != nil {
				return fmt.Errorf("%w; node log: %s", err, tailFile(n.logFile()))
			}
		}
	}
	if _, err := c.run.ctl(ctx, c.Nodes[0], "enable_feature_flag", "all"); err != nil {
		return err
	}
	running, err := c.Running(ctx)
	if err != nil {
		return err
	}
	if len(running) != len(c.Nodes) {
		return fmt.Errorf("rabbitcluster: after joining, %d of %d nodes run: %v", len(running), len(c.Nodes), running)
	}
	c.StartUp = time.Since(began)
	log.Info("rabbitcluster: cluster up", "nodes", running, "in", c.StartUp.Round(time.Millisecond))
	return nil
}

// prepare writes every node's directory, configuration and the cookie.
func (c *Cluster) prepare() error {
	if err := os.MkdirAll(c.cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("rabbitcluster: %w", err)
	}
	if err := os.Mkdir(c.run.home, 0o700); err != nil {
		return fmt.Errorf("rabbitcluster: %w", err)
	}
	cookie := rand.Text() // 26 characters of A-Z and 2-7
	files := map[string]string{filepath.Join(c.run.home, ".erlang.cookie"): cookie}
	for _, n := range c.Nodes {
		for _, d := range []string{"mnesia", "log"} {
			if err := os.MkdirAll(filepath.Join(n.dir, d), 0o755); err != nil {
				return fmt.Errorf("rabbitcluster: %w", err)
			}
		}
		files[filepath.Join(n.dir, "rabbitmq.conf")] = nodeConf(n)
		files[filepath.Join(n.dir, "enabled_plugins")] = "[].\n"
		files[filepath.Join(n.dir, "rabbitmq-env.conf")] = "# every setting comes from the environment (rabbitcluster)\n"
	}
	for path, body := range files {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			return fmt.Errorf("rabbitcluster: %w", err)
		}
	}
	if err := os.Chmod(filepath.Join(c.run.home, ".erlang.cookie"), 0o400); err != nil {
		return fmt.Errorf("rabbitcluster: %w", err)
	}
	return c.run.chown(c.cfg.Dir)
}

// nodeConf is a node's rabbitmq.conf.
func nodeConf(n Node) string {
	return strings.Join([]string{
		"listeners.tcp.1 = 127.0.0.1:" + strconv.Itoa(n.Port),
		"cluster_name = redrive-rabbitcluster",
		"cluster_partition_handling = pause_minority",
		"log.console = false",
		"log.file.level = info",
		"",
	}, "\n")
}

// URLs are the AMQP URLs of the nodes, in order.
func (c *Cluster) URLs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.URL()
	}
	return out
}

// URLsFrom are the AMQP URLs of the nodes starting with node i (0-based):
// the rabbitmq.urls of a client that should connect to node i first and
// fail over to the others in order.
func (c *Cluster) URLsFrom(i int) []string {
	urls := c.URLs()
	return append(urls[i:], urls[:i]...)
}

// Stop kills every node, deletes the cluster's directory and releases the
// cluster. The nodes' data goes with the directory, so there is nothing
// to stop gracefully.
func (c *Cluster) Stop(_ context.Context) error {
	if c.lock == nil {
		return nil
	}
	_, err := clean(c.cfg)
	if cerr := c.lock.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("rabbitcluster: release lock: %w", cerr)
	}
	c.lock = nil
	return err
}

// Down stops and deletes the cluster cfg describes, whichever process
// started it: `make cluster-down`. It fails with ErrBusy while another
// process owns the cluster.
func Down(cfg Config) (killed int, err error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	lock, err := acquire(cfg.Dir + ".lock")
	if err != nil {
		return 0, err
	}
	defer lock.Close()
	return clean(cfg)
}

// clean kills every process of the cluster cfg describes and deletes its
// directory. It reports how many processes it killed.
func clean(cfg Config) (int, error) {
	n, err := killAll(filepath.Join(cfg.Dir, "home"))
	if err != nil {
		return n, err
	}
	if err := os.RemoveAll(cfg.Dir); err != nil {
		return n, fmt.Errorf("rabbitcluster: remove %s: %w", cfg.Dir, err)
	}
	return n, nil
}

// portFree reports an error when something listens on 127.0.0.1:port.
func portFree(port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("port %d is taken by another process (set a different base port): %w", port, err)
	}
	return ln.Close()
}

// acquire takes the lock file at path, exclusively, without waiting.
func acquire(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("rabbitcluster: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (lock %s)", ErrBusy, path)
		}
		return nil, fmt.Errorf("rabbitcluster: lock %s: %w", path, err)
	}
	return f, nil
}
