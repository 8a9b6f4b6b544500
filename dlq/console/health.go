package console

import (
	"html/template"
	"net/http"
	"slices"
	"time"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/lag"
)

// workersView is the workers page's data.
type workersView struct {
	Configured bool
	Rows       []heartbeat.WorkerStatus
	At         time.Time
	Err        string
	// CanPause offers Pause and Resume per worker type (an operator, a
	// Pauser); Types are the types in Rows, Paused those an operator
	// paused.
	CanPause bool
	Types    []string
	Paused   map[string]bool
	// Chart is the instances by state over the last samples.
	Chart template.HTML
	// LeftOut is what the table leaves out (heartbeat.max_instances);
	// nil when it leaves nothing out.
	LeftOut *heartbeat.Dropped
	// Endpoints are the rows of the instances of redrive relay, which
	// deliver to an HTTP endpoint.
	Endpoints []endpointRow
}

// endpointRow is what an instance of redrive relay says about its
// worker's HTTP endpoint.
type endpointRow struct {
	Type, Instance string
	*heartbeat.Endpoint
}

// endpointOutcomes are the columns of the endpoints table, in order.
var endpointOutcomes = []string{"success", "permanent", "retry_after", "retry", "timeout", "unreachable"}

// workers serves GET /workers: the heartbeat table.
func (c *Console) workers(w http.ResponseWriter, r *http.Request, ss *session) {
	var v workersView
	if c.cfg.Workers != nil {
		v.Configured = true
		var err error
		v.Rows, v.At, err = c.cfg.Workers.Last()
		if err != nil {
			v.Err = err.Error()
		}
		if d, ok := c.cfg.Workers.(interface{ Dropped() heartbeat.Dropped }); ok {
			if left := d.Dropped(); left.Total() > 0 {
				v.LeftOut = &left
			}
		}
		v.CanPause = c.cfg.Pauser != nil && ss != nil && !ss.user.ReadOnly
		v.Paused = pausedTypes(v.Rows)
		v.Chart = c.workersChart(c.now())
		for _, r := range v.Rows {
			if r.Instance == heartbeat.NeverSeenInstance && r.LastSeen.IsZero() {
				continue // configured, never beat: nothing to pause
			}
			if r.Type != "*" && !slices.Contains(v.Types, r.Type) {
				v.Types = append(v.Types, r.Type)
			}
			if r.Endpoint != nil {
				v.Endpoints = append(v.Endpoints, endpointRow{Type: r.Type, Instance: r.Instance, Endpoint: r.Endpoint})
			}
		}
	}
	c.render(w, r, ss, http.StatusOK, "workers", "Workers", v)
}

// lagView is the lag page's data.
type lagView struct {
	Configured bool
	// Broker is the backend as people write it ("Kafka").
	Broker     string
	ShowGroups bool
	ShowDepths bool
	Groups     lag.GroupReport
	GroupsErr  string
	GroupErrs  map[string]string
	Depths     []lag.QueueDepth
	DepthsAt   time.Time
	DepthsErr  string
	// Charts are the lag over the last samples.
	Charts []template.HTML
}

// lagPage serves GET /lag: lag per group and topic with its status, or
// queue depths.
func (c *Console) lagPage(w http.ResponseWriter, r *http.Request, ss *session) {
	var v lagView
	if c.cfg.Lag != nil {
		v.Configured = true
		v.Broker = driver.WordsOf(c.cfg.Broker).Display
		v.ShowGroups = c.cfg.Lag.Groups()
		v.ShowDepths = c.cfg.Lag.Depths()
		if v.ShowGroups {
			var err error
			v.Groups, err = c.cfg.Lag.LastGroups()
			if err != nil {
				v.GroupsErr = err.Error()
			}
			v.GroupErrs = make(map[string]string, len(v.Groups.GroupErrors))
			for g, e := range v.Groups.GroupErrors {
				if e != nil {
					v.GroupErrs[g] = e.Error()
				}
			}
		}
		if v.ShowDepths {
			var err error
			v.Depths, v.DepthsAt, err = c.cfg.Lag.LastDepths()
			if err != nil {
				v.DepthsErr = err.Error()
			}
		}
		v.Charts = c.lagCharts(c.now(), v.Broker, v.ShowGroups, v.ShowDepths)
	}
	c.render(w, r, ss, http.StatusOK, "lag", "Consumer lag", v)
}
