// Package console is the dead-letter console: server-rendered HTML pages
// (html/template, assets embedded, no JavaScript needed, no CDN) over
// operate.Ops, for operators to see, replay and discard dead letters.
//
// Pages: the DLQs with pending counts, severity and arrival rate (GET /);
// the entries of a DLQ, filterable by status, error class, time and text,
// paged with a cursor (GET /dlq/{name}); an entry with its payload (pretty
// JSON, text, or a hex dump for binary), headers, error and stack, retry
// history and audit trail (GET /dlq/{name}/{id}); replay, discard (with a
// reason) and replay-all with a progress page (GET /jobs/{id}); workers
// with their heartbeat status (GET /workers); consumer lag and queue depth
// (GET /lag).
//
// Who may use it is Config.Access's (dlq/access): behind an
// authenticating proxy, the person its header names on every request,
// without a login (the header from any other address is refused);
// otherwise users log in with their own token (POST /login) and get a
// session cookie (HttpOnly, SameSite=Strict, Secure over TLS, behind a trusted proxy
// that says HTTPS, or always with Config.CookieSecure); sessions live in
// memory. Wrong tokens are throttled per address (behind
// Config.TrustedProxies, the one they forward), whatever cookies the
// client carries, and a success clears nothing; a browser that logged in
// before is judged on its device cookie's user at that address, so that
// others' wrong tokens do not lock it out. Every POST needs the session's CSRF token (a hidden
// form field) and, when the browser sends Origin or Referer, the same
// host. Read-only users see no buttons and get 403 on every mutation. The
// audit log names the user. Replay-all jobs are listed (GET /jobs) and
// can be cancelled by operators (POST /jobs/{id}/cancel).
//
// The console serves every path outside /internal/; mount it with
// admin.Config.UI next to the JSON API, which also refuses requests for a
// Host that is not the server's (admin.Config.AllowedHosts).
package console
