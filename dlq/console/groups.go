package console

import (
	"context"
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"

	"github.com/redrive/redrive/dlq"
)

// groupRow is one failure group of the DLQ page.
type groupRow struct {
	dlq.Group
	// Entries is the URL of the group's entry listing.
	Entries template.URL
	// Since is when the sparkline's first hour starts.
	Since time.Time
}

// groups returns the failure groups of name for its page.
func (c *Console) groups(ctx context.Context, name string) ([]groupRow, error) {
	now := time.Now()
	gs, err := c.ops.Groups(ctx, dlq.GroupQuery{DLQ: name, Now: now})
	if err != nil {
		return nil, err
	}
	out := make([]groupRow, len(gs))
	for i, g := range gs {
		v := url.Values{"group": {g.Fingerprint}}
		out[i] = groupRow{Group: g, Since: dlq.SparklineStart(now),
			Entries: template.URL("/dlq/" + pathEscape(name) + "?" + v.Encode())} // #nosec: built from escaped parts
	}
	return out, nil
}

// Sparkline geometry, in pixels: one bar per hour.
const (
	sparkBar    = 4
	sparkGap    = 1
	sparkHeight = 20
)

// sparkline draws hourly arrivals as an inline SVG bar chart, oldest hour
// left, with a title saying what it shows. Only numbers go into it.
func sparkline(hourly [dlq.SparklineHours]int64) template.HTML {
	var top, total int64
	for _, n := range hourly {
		top = max(top, n)
		total += n
	}
	width := dlq.SparklineHours*(sparkBar+sparkGap) - sparkGap
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="spark" width="%d" height="%d" viewBox="0 0 %[1]d %[2]d" role="img" aria-label="arrivals per hour, last 24 hours">`, width, sparkHeight)
	fmt.Fprintf(&b, `<title>%d arrivals in the last 24 hours (at most %d in an hour)</title>`, total, top)
	fmt.Fprintf(&b, `<line x1="0" y1="%d" x2="%d" y2="%[1]d" class="base"/>`, sparkHeight-1, width)
	for i, n := range hourly {
		if n == 0 {
			continue
		}
		h := max(2, int(n*int64(sparkHeight-1)/top))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d"/>`, i*(sparkBar+sparkGap), sparkHeight-h, sparkBar, h)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // #nosec: numbers only
}
