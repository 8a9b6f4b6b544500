package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"time"
)

// Device cookies (OWASP's defence against lockout by password guessing,
// shaped by issue 40): a browser that logged in gets a signed cookie
// naming the user it logged in as, and its later logins are throttled on
// that user at its address, not on the address alone (throttle.go).
// Wrong tokens from anybody else at the same address then never lock it
// out. The cookie names the user, not the browser, because anyone with a
// token can get cookies: a viewer who minted a thousand of them has one
// count per address, never a fresh one per cookie. The key lives in
// memory: after a restart every browser is throttled by address again
// until it logs in.
const (
	deviceCookie = "redrive_device"
	deviceTTL    = 90 * 24 * time.Hour
)

// devices signs and checks device cookies.
type devices struct {
	key [32]byte
}

func newDevices() *devices {
	d := &devices{}
	_, _ = rand.Read(d.key[:]) // never fails (crypto/rand)
	return d
}

// sign returns the cookie value of a device of user: user.mac.
func (d *devices) sign(user string) string {
	name := base64.RawURLEncoding.EncodeToString([]byte(user))
	m := hmac.New(sha256.New, d.key[:])
	m.Write([]byte(name))
	return name + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// user returns the user r's device cookie names, if it carries a valid one.
func (d *devices) user(r *http.Request) (string, bool) {
	ck, err := r.Cookie(deviceCookie)
	if err != nil || len(ck.Value) > 1024 {
		return "", false
	}
	name, _, ok := strings.Cut(ck.Value, ".")
	if !ok || name == "" || !hmac.Equal([]byte(d.sign(mustDecode(name))), []byte(ck.Value)) {
		return "", false
	}
	return mustDecode(name), true
}

// mustDecode decodes a cookie's base64 name, "" when it is not base64.
func mustDecode(s string) string {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return ""
	}
	return string(b)
}

// throttleKeys are the keys a login attempt is counted against: the
// client's address (behind trusted proxies, the one they name) and, with a
// valid device cookie, its user at that address. The last key is the one
// the attempt is judged on.
func (c *Console) throttleKeys(r *http.Request) []string {
	addr := "address " + c.proxies.ClientIP(r)
	if user, ok := c.devices.user(r); ok {
		return []string{addr, "device of " + user + " at " + addr}
	}
	return []string{addr}
}

// rememberDevice gives the browser of a successful login of user its
// device cookie, sent to /login only.
func (c *Console) rememberDevice(w http.ResponseWriter, r *http.Request, user string) {
	http.SetCookie(w, &http.Cookie{
		Name: deviceCookie, Value: c.devices.sign(user), Path: "/login", MaxAge: int(deviceTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.secureCookie(r),
	})
}

// secureCookie reports whether cookies set in answer to r are Secure.
func (c *Console) secureCookie(r *http.Request) bool {
	return c.cfg.CookieSecure || c.proxies.TLS(r)
}
