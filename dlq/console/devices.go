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

// Device cookies (OWASP's defence against lockout by password guessing):
// a browser that logged in once gets a signed random id, and its later
// logins are throttled on that id instead of on its IP address. Wrong
// tokens from anybody else (the same NAT, the same proxy without
// admin.trusted_proxies) then never lock it out; a guesser has no valid
// device cookie, so it stays throttled by address. The key lives in
// memory: after a restart every browser is throttled by address again
// until it logs in.
const (
	deviceCookie = "redrive_device"
	deviceTTL    = 90 * 24 * time.Hour
)

// devices signs and checks device ids.
type devices struct {
	key [32]byte
}

func newDevices() *devices {
	d := &devices{}
	_, _ = rand.Read(d.key[:]) // never fails (crypto/rand)
	return d
}

// sign returns the cookie value of device id: id.mac.
func (d *devices) sign(id string) string {
	m := hmac.New(sha256.New, d.key[:])
	m.Write([]byte(id))
	return id + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// id returns the device id of r's device cookie, if it carries a valid one.
func (d *devices) id(r *http.Request) (string, bool) {
	ck, err := r.Cookie(deviceCookie)
	if err != nil {
		return "", false
	}
	id, _, ok := strings.Cut(ck.Value, ".")
	if !ok || id == "" || !hmac.Equal([]byte(d.sign(id)), []byte(ck.Value)) {
		return "", false
	}
	return id, true
}

// throttleKey is who a login attempt counts against: the device of a
// browser that logged in before, else the client's address (behind
// trusted proxies, the one they name).
func (c *Console) throttleKey(r *http.Request) string {
	if id, ok := c.devices.id(r); ok {
		return "device " + id
	}
	return "address " + c.proxies.ClientIP(r)
}

// rememberDevice gives the browser of a successful login its device
// cookie (a new one unless it carries a valid one), sent to /login only.
func (c *Console) rememberDevice(w http.ResponseWriter, r *http.Request) {
	id, ok := c.devices.id(r)
	if !ok {
		id = randomToken()
	}
	http.SetCookie(w, &http.Cookie{
		Name: deviceCookie, Value: c.devices.sign(id), Path: "/login", MaxAge: int(deviceTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.secureCookie(r),
	})
}

// secureCookie reports whether cookies set in answer to r are Secure.
func (c *Console) secureCookie(r *http.Request) bool {
	return c.cfg.CookieSecure || c.proxies.TLS(r)
}
