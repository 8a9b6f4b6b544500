package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cookieName is the session cookie's name.
const cookieName = "redrive_session"

// maxRevoked bounds the logged-out sessions remembered one by one;
// beyond it, the user with the most is revoked by expiry (sessions.drop).
const maxRevoked = 10000

// session is one login: who, its CSRF token, until when; or, proxied,
// the person an authenticating proxy vouches for in this request (no id,
// no expiry).
type session struct {
	id      string
	csrf    string
	user    User
	expires time.Time
	proxied bool
}

// sessions are the console's sessions as signed cookies: the cookie names
// the user, the expiry and a random nonce, with an HMAC-SHA256 over them
// and the user's token hash, keyed with Config.SessionSecret (shared by
// the replicas: a session works on each) or a random key of this process.
// Changing a user's token ends their sessions. A logout is remembered by
// the process that served it until the cookie would have expired; the
// browser drops the cookie, but a copy of it stays valid on the other
// replicas until then.
//
// A logged-out session never comes back, in bounded memory: at most max
// logouts are remembered one by one; when they are full, the user with
// the most of them is revoked by expiry instead (issue 40: 10,050 viewer
// logins and logouts used to push an operator's logout out of the list).
// Every session of that user expiring no later than the last of its
// remembered logouts ends here, so a user who logs out that often may
// have to log in again on other browsers too; other users' logouts stay
// remembered one by one.
type sessions struct {
	ttl  time.Duration
	now  func() time.Time
	key  []byte
	user func(name string) (User, [sha256.Size]byte, bool) // a user who may hold a session, with its token hash
	max  int

	mu      sync.Mutex
	revoked map[string]revoked   // logged-out ids until their expiry
	before  map[string]time.Time // user → its sessions expiring at or before are ended
}

// revoked is a logged-out session: its user and expiry.
type revoked struct {
	user    string
	expires time.Time
}

// newSessions returns the sessions of users (user), signed with secret;
// an empty secret is replaced by a random key.
func newSessions(ttl time.Duration, now func() time.Time, secret string, user func(string) (User, [sha256.Size]byte, bool)) *sessions {
	key := []byte(secret)
	if secret == "" {
		key = make([]byte, 32)
		_, _ = rand.Read(key) // never fails (crypto/rand)
	}
	return &sessions{ttl: ttl, now: now, key: key, user: user, max: maxRevoked,
		revoked: map[string]revoked{}, before: map[string]time.Time{}}
}

// randomToken returns 32 random bytes, URL-safe base64.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// mac is the signature of the session body for a user of token hash sum.
func (s *sessions) mac(purpose, body string, sum [sha256.Size]byte) string {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte(purpose + "\x00" + body + "\x00"))
	h.Write(sum[:])
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// create starts a session for u, a user s.user knows (else nil).
func (s *sessions) create(u User) *session {
	u, sum, ok := s.user(u.Name)
	if !ok {
		return nil
	}
	exp := s.now().Add(s.ttl).Truncate(time.Second)
	s.mu.Lock()
	if b, ok := s.before[u.Name]; ok && !exp.After(b) {
		exp = b.Add(time.Second) // a session ended by expiry ends no later: this one must live
	}
	s.mu.Unlock()
	body := base64.RawURLEncoding.EncodeToString([]byte(u.Name)) + "." + strconv.FormatInt(exp.Unix(), 10) + "." + randomToken()
	id := body + "." + s.mac("session", body, sum)
	return &session{id: id, csrf: s.mac("csrf", id, sum), user: u, expires: exp}
}

// get returns the live session id, or nil: a cookie this key signed for a
// user who still holds that token, not expired nor logged out here.
func (s *sessions) get(id string) *session {
	parts := strings.Split(id, ".")
	if len(id) > 1024 || len(parts) != 4 {
		return nil
	}
	name, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return nil
	}
	u, sum, ok := s.user(string(name))
	if !ok {
		return nil
	}
	body := strings.Join(parts[:3], ".")
	if subtle.ConstantTimeCompare([]byte(parts[3]), []byte(s.mac("session", body, sum))) != 1 {
		return nil
	}
	unix, err := strconv.ParseInt(parts[1], 10, 64)
	exp := time.Unix(unix, 0)
	if err != nil || s.now().After(exp) {
		return nil
	}
	s.mu.Lock()
	_, gone := s.revoked[id]
	if b, ok := s.before[string(name)]; ok && !exp.After(b) {
		gone = true
	}
	s.mu.Unlock()
	if gone {
		return nil
	}
	return &session{id: id, csrf: s.mac("csrf", id, sum), user: u, expires: exp}
}

// drop ends session id here (logout). Over max remembered logouts, it
// forgets the expired ones, and if they are still over, revokes the user
// with the most by expiry (see sessions).
func (s *sessions) drop(id string) {
	ss := s.get(id)
	if ss == nil {
		return
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for u, b := range s.before {
		if now.After(b) {
			delete(s.before, u)
		}
	}
	s.revoked[id] = revoked{user: ss.user.Name, expires: ss.expires}
	if len(s.revoked) <= s.max {
		return
	}
	for old, r := range s.revoked {
		if now.After(r.expires) {
			delete(s.revoked, old)
		}
	}
	if len(s.revoked) > s.max {
		s.revokeBusiest()
	}
}

// revokeBusiest turns the remembered logouts of the user who has the most
// into one bound: its sessions expiring at or before the last of them end.
func (s *sessions) revokeBusiest() {
	counts := map[string]int{}
	busiest := ""
	for _, r := range s.revoked {
		counts[r.user]++
		if busiest == "" || counts[r.user] > counts[busiest] {
			busiest = r.user
		}
	}
	last := s.before[busiest]
	for id, r := range s.revoked {
		if r.user == busiest {
			last = maxTime(last, r.expires)
			delete(s.revoked, id)
		}
	}
	s.before[busiest] = last
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// checkToken returns the user whose token is tok (access.Authenticator.Token:
// every credential's hash is compared, in constant time).
func (c *Console) checkToken(tok string) (User, bool) {
	id, ok := c.auth.Token(tok)
	return userOf(id), ok
}

// proxySession is the session of a person the authenticating proxy
// vouches for: no cookie (the proxy's header comes with every request,
// and the role is read from it each time), and a CSRF token of the
// person and role, signed with the sessions' key, so that it holds on
// every replica that shares Config.SessionSecret.
func (s *sessions) proxySession(u User) *session {
	role := "operator"
	if u.ReadOnly {
		role = "viewer"
	}
	return &session{csrf: s.mac("proxy-csrf", u.Name+"\x00"+role, [sha256.Size]byte{}), user: u, proxied: true}
}

// validCSRF compares a posted token with the session's in constant time.
func validCSRF(ss *session, posted string) bool {
	a, b := sha256.Sum256([]byte(posted)), sha256.Sum256([]byte(ss.csrf))
	return posted != "" && subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
