package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/redrive/redrive/internal/termtext"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pageNames are the templates/<name>.html pages, each parsed with the
// layout.
var pageNames = []string{"dlqs", "entries", "entry", "job", "jobs", "workers", "lag", "login", "error"}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"pe":    url.PathEscape,
	"ts":    formatTime,
	"ago":   ago,
	"lower": strings.ToLower,
	"clip":  clip,
	"pct": func(part, total int64) int64 {
		if total <= 0 {
			return 100
		}
		return part * 100 / total
	},
	"add":       func(a, b int64) int64 { return a + b },
	"dur":       duration,
	"latency":   latency,
	"outcomes":  func() []string { return endpointOutcomes },
	"sparkline": sparkline,
	// shown: a value from Redis (a worker's name, status, reason) with
	// every control and bidirectional character written as an escape, as
	// the CLI prints it: html/template escapes markup, not U+202E.
	"shown": termtext.Printable,
	// cls is v, lower-cased, as a CSS class name when it is one of
	// letters and underscores (a known status), else "other".
	"cls": func(v any) string {
		s := strings.ToLower(fmt.Sprint(v))
		if s == "" || strings.Trim(s, "abcdefghijklmnopqrstuvwxyz_") != "" || len(s) > 32 {
			return "other"
		}
		return s
	},
}

// parsePages parses every page with the layout.
func parsePages() (map[string]*template.Template, error) {
	out := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: parse template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// staticHandler serves the embedded CSS under /static/.
func staticHandler() http.Handler {
	sub, _ := fs.Sub(staticFS, "static") // a literal, known directory
	fsrv := http.StripPrefix("/static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		fsrv.ServeHTTP(w, r)
	})
}

// page is what the layout renders around a page's content.
type page struct {
	Title   string
	Nav     string // "dlqs", "jobs", "workers", "lag"
	Broker  string
	User    *User
	NoAuth  bool
	Proxied bool // signed in by the authenticating proxy: no logout here
	CSRF    string
	Refresh int // seconds; 0 = none
	Now     time.Time
	Data    any
}

// CanChange reports whether the user may replay and discard.
func (p page) CanChange() bool { return p.User != nil && !p.User.ReadOnly }

// render writes page name with status.
func (c *Console) render(w http.ResponseWriter, r *http.Request, ss *session, status int, name, title string, data any) {
	c.renderPage(w, r, ss, status, name, page{Title: title, Data: data})
}

func (c *Console) renderPage(w http.ResponseWriter, r *http.Request, ss *session, status int, name string, p page) {
	p.Broker, p.NoAuth, p.Now = string(c.cfg.Broker), c.cfg.InsecureNoAuth && c.auth.Empty(), c.now()
	if p.Nav == "" {
		p.Nav = name
	}
	if ss != nil {
		u := ss.user
		p.User, p.CSRF, p.Proxied = &u, ss.csrf, ss.proxied
	}
	var buf bytes.Buffer
	if err := c.pages[name].Execute(&buf, p); err != nil {
		c.log.Error("console: render", "page", name, "path", r.URL.Path, "error", err)
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString("<!doctype html><title>error</title><p>internal error: the page could not be rendered (logged)</p>")
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// errorView is the error page's data.
type errorView struct {
	Status  int
	Text    string
	Message string
}

// errorPage writes an error page: the status and one line saying what is
// wrong (naming the field for bad input).
func (c *Console) errorPage(w http.ResponseWriter, r *http.Request, ss *session, status int, msg string) {
	if ss == nil {
		ss = c.current(r)
	}
	c.render(w, r, ss, status, "error", http.StatusText(status), errorView{Status: status, Text: http.StatusText(status), Message: msg})
}

// formatTime renders t in UTC to the second; "—" for the zero time.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// ago renders how long before now t was: "4s", "3m", "2h", "5d".
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh", int(d.Hours()))
	default:
		s = fmt.Sprintf("%dd", int(d.Hours()/24))
	}
	if neg {
		return "in " + s
	}
	return s + " ago"
}

// duration renders d for a person: "30d", "5h", "2m30s", "1.4s", "405ms".
// latency renders a request's latency: microseconds below a millisecond,
// milliseconds below a second (one decimal below 10 ms), else seconds.
func latency(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}

func duration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
